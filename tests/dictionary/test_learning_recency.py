"""Learning, typed as key sequences: the last committed choice for a reading wins the next time
(Mozc's "most recent first"), for a segment and for a whole phrase, in conversion and in live
conversion, over the bundled dictionary."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from karukan_engine.config import Config, SessionSettings
from karukan_engine.core.types import ConversionRequest
from karukan_engine.dictionary.learning import FREQUENCY_WEIGHT, LearningStore
from karukan_engine.dictionary.system import DEFAULT_DIR
from karukan_engine.lattice.converter import LatticeConverter
from karukan_engine.session import Session, State
from karukan_engine.session.keys_cli import parse_keys

pytestmark = pytest.mark.skipif(not (DEFAULT_DIR / "meta.json").is_file(),
                                reason="compiled dictionary not built")


def make_converter(system) -> LatticeConverter:
    import tempfile
    from pathlib import Path

    store = LearningStore(Path(tempfile.mkdtemp(prefix="karukan-learn-")) / "learning.json", save_delay=None)
    return LatticeConverter(system, None, store)


def session(converter, live: bool) -> Session:
    return Session(converter, Config(session=SessionSettings(live_conversion=live)))


def press(s: Session, keys: str):
    return [s.process_key(keysym, mods) for _, keysym, mods in parse_keys(keys)]


def page(s: Session) -> list[str]:
    return [item.text for item in s.view.candidates.items]


def pick(s: Session, romaji: str, surface: str) -> str:
    """Type romaji, convert, move to `surface` with Down and commit it with Return."""
    press(s, romaji + "<space>")
    assert s.state is State.CONVERSION
    for _ in range(40):
        if s.view.preedit_text == surface:
            break
        press(s, "<Down>")
    assert s.view.preedit_text == surface
    return "".join(v.commit for v in press(s, "<Return>"))


def first_shown(s: Session, romaji: str) -> tuple[str, str]:
    """(what live conversion shows after typing, what Space shows first); cancels after."""
    press(s, romaji)
    live = s.view.preedit_text
    press(s, "<space>")
    converted = s.view.preedit_text
    press(s, "<Escape><Escape>")
    assert s.state is State.PRECOMPOSITION
    return live, converted


def test_the_last_choice_beats_a_more_frequent_one(system):
    """The issue's report: 鏡は six times, then 今日は three times, and 鏡は stayed first."""
    converter = make_converter(system)
    s = session(converter, live=True)
    for _ in range(6):
        assert pick(s, "kyouha", "鏡は") == "鏡は"
    assert first_shown(s, "kyouha") == ("鏡は", "鏡は")
    for _ in range(3):
        assert pick(s, "kyouha", "今日は") == "今日は"
    assert first_shown(s, "kyouha") == ("今日は", "今日は")
    assert pick(s, "kyouha", "鏡は") == "鏡は"        # once is enough to come back
    assert first_shown(s, "kyouha") == ("鏡は", "鏡は")
    press(s, "kyouha<space>")
    assert page(s)[:2] == ["鏡は", "今日は"]          # the older choice right after it


def convert_first_segment_to(s: Session, romaji: str, prefix: str) -> str:
    press(s, romaji + "<space>")
    for _ in range(40):
        if s.view.preedit_text.startswith(prefix):
            return s.view.preedit_text
        press(s, "<Down>")
    raise AssertionError(f"{prefix} not among the first segment's candidates")


def test_the_last_choice_leads_its_segment_in_a_sentence(system):
    converter = make_converter(system)
    s = session(converter, live=False)
    press(s, "kyouhaiitenki<space>")
    assert s.view.preedit_text.startswith("今日は")
    press(s, "<Escape><Escape>")
    chosen = convert_first_segment_to(s, "kyouhaiitenki", "鏡は")
    press(s, "<Return>")
    press(s, "kyouhaiitenki<space>")
    assert s.view.preedit_text == chosen
    press(s, "<Escape><Escape>")
    assert pick(s, "kyouha", "今日は") == "今日は"    # the same segment converted on its own
    press(s, "kyouhaiitenki<space>")
    assert s.view.preedit_text.startswith("今日は")


def test_a_whole_phrase_follows_the_last_choice(system):
    """A live conversion committed as it stood is learned as one phrase; changing a segment of
    the same phrase later must win over that phrase the next time."""
    converter = make_converter(system)
    s = session(converter, live=True)
    press(s, "kyouhaiitenki")
    shown = s.view.preedit_text
    assert shown.startswith("今日は")
    assert "".join(v.commit for v in press(s, "<Return>")) == shown
    assert converter.learning.lookup("きょうはいいてんき") == [shown]
    changed = convert_first_segment_to(s, "kyouhaiitenki", "鏡は")
    press(s, "<Return>")
    assert first_shown(s, "kyouhaiitenki") == (changed, changed)
    assert converter.learning.lookup("きょうはいいてんき")[0] == changed


@settings(max_examples=15, deadline=None)
@given(st.data())
def test_property_the_next_conversion_shows_the_last_pick(system, data):
    """Any sequence of picks among a reading's first candidates: afterwards the last pick is
    what live conversion shows, what Space converts to, and the converter's first candidate."""
    romaji, reading = data.draw(st.sampled_from([("kyouha", "きょうは"), ("kisha", "きしゃ"),
                                                 ("kaigi", "かいぎ"), ("hashi", "はし")]))
    converter = make_converter(system)
    s = session(converter, live=True)
    press(s, romaji + "<space>")
    options = [c for c in page(s)[:5] if c]
    press(s, "<Escape><Escape>")
    picks = data.draw(st.lists(st.sampled_from(options), min_size=1, max_size=6))
    for surface in picks:
        assert pick(s, romaji, surface) == surface
        assert first_shown(s, romaji) == (surface, surface)
    assert converter.candidates(ConversionRequest(reading), 3)[0].surface == picks[-1]
    assert converter.convert(ConversionRequest(reading))[0].candidates[0].surface == picks[-1]


# -- the store's order: the last used, then frequency and age ------------------------------------

def test_store_last_used_first_then_frequency_and_age(tmp_path):
    store = LearningStore(tmp_path / "l.json", save_delay=None)
    for _ in range(5):
        store.record("きしゃ", "記者")     # often, long ago
    store.record("きしゃ", "帰社")         # once, more recently
    store.record("きしゃ", "汽車")         # the last choice
    assert store.lookup("きしゃ") == ["汽車", "記者", "帰社"]
    store.record("きしゃ", "帰社")
    assert store.lookup("きしゃ") == ["帰社", "記者", "汽車"]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["きしゃ", "はし"]), st.sampled_from(["A", "B", "C", "D"])),
                min_size=1, max_size=30))
def test_store_order_property(tmp_path_factory, records):
    store = LearningStore(tmp_path_factory.mktemp("l") / "l.json", save_delay=None)
    for reading, surface in records:
        store.record(reading, surface)
    for reading in {r for r, _ in records}:
        mine = [(k, s) for k, (r, s) in enumerate(records) if r == reading]
        got = store.lookup(reading)
        assert got[0] == mine[-1][1]                             # the last choice first
        assert sorted(got) == sorted({s for _, s in mine})
        # the others by LearningStore's score: its last tick + FREQUENCY_WEIGHT × its uses
        ticks = {s: 1 + max(k for k, (_, t) in enumerate(records) if t == s and records[k][0] == reading)
                 for s in got}
        uses = {s: sum(1 for _, t in mine if t == s) for s in got}
        scores = [ticks[s] + FREQUENCY_WEIGHT * uses[s] for s in got[1:]]
        assert scores == sorted(scores, reverse=True)


# -- with a model: the fused ranking keeps the last choice first ---------------------------------

def test_the_last_choice_leads_the_fused_ranking_whatever_the_weights(system, tmp_path):
    """Default fusion weights let a model's score outweigh learning (鏡は, learned six times,
    was not even among the first three); the last choice for exactly this reading leads."""
    pytest.importorskip("llama_cpp")
    from karukan_engine.conversion.fused import FusedConverter
    from karukan_engine.conversion.model_slot import ModelSlot
    from karukan_engine.conversion.settings import ConversionSettings
    from karukan_engine.neural.model import load_model
    from karukan_testing.tiny_models import TinyModelSpec, write_model_dir

    model = load_model(write_model_dir(tmp_path / "tiny", TinyModelSpec(seed=3, eos_scale=2.0)))
    try:
        base = make_converter(system)
        fused = FusedConverter(base, [ModelSlot(model, "tiny")], ConversionSettings(chunk_chars=8, space_budget_ms=float("inf")), lexicon=system)
        s = session(fused, live=True)
        for surface in ["鏡は"] * 6 + ["今日は"] * 3 + ["鏡は"]:
            assert pick(s, "kyouha", surface) == surface
            assert first_shown(s, "kyouha") == (surface, surface)
            assert fused.candidates(ConversionRequest("きょうは"), 3)[0].surface == surface
        # a reading never chosen as a whole keeps the model's say
        unlearned = ConversionRequest("きょうはいいてんき")
        assert fused.candidates(unlearned, 3) == fused.ranking.reranked(
            fused.slots[0], unlearned, base.candidates(unlearned, 10), 3)[:3]
    finally:
        model.close()
