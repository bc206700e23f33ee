"""Per-context learning, typed as key sequences: the last choice for a reading after the same left
context (its last two characters) wins there; after another context, or none, the per-reading
last choice stands. Over the bundled dictionary; the store's pure logic has property tests."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from karukan_engine.config import Config, SessionSettings
from karukan_engine.core.types import ConversionRequest
from karukan_engine.dictionary.learning import CONTEXT_CHARS, LearningStore, context_key
from karukan_engine.dictionary.system import DEFAULT_DIR
from karukan_engine.lattice.converter import LatticeConverter
from karukan_engine.session import Session, State
from karukan_engine.session.field import FieldPrivacy
from karukan_engine.session.keys_cli import parse_keys

needs_dictionary = pytest.mark.skipif(not (DEFAULT_DIR / "meta.json").is_file(),
                                      reason="compiled dictionary not built")


def make_converter(system) -> LatticeConverter:
    store = LearningStore(Path(tempfile.mkdtemp(prefix="karukan-ctx-")) / "learning.json", save_delay=None)
    return LatticeConverter(system, None, store)


def session(converter, live: bool = False) -> Session:
    return Session(converter, Config(session=SessionSettings(live_conversion=live)))


def press(s: Session, keys: str) -> str:
    """Press the keys; what they committed."""
    return "".join(s.process_key(keysym, mods).commit for _, keysym, mods in parse_keys(keys))


def pick(s: Session, romaji: str, surface: str, segment: int = 0) -> str:
    """Type romaji, convert, focus the segment-th segment, Down until the preedit holds
    `surface` there, and commit with Return."""
    press(s, romaji + "<space>" + "<Right>" * segment)
    assert s.state is State.CONVERSION
    for _ in range(40):
        if surface in s.view.preedit_text:
            break
        press(s, "<Down>")
    assert surface in s.view.preedit_text
    return press(s, "<Return>")


def converted(s: Session, romaji: str) -> str:
    """What Space shows first for romaji typed now; cancelled after (the context stays)."""
    press(s, romaji + "<space>")
    shown = s.view.preedit_text
    press(s, "<Escape><Escape>")
    assert s.state is State.PRECOMPOSITION
    return shown


def after(s: Session, context_romaji: str | None) -> Session:
    """Start a fresh line (focus out clears the left context), then commit the context's
    first conversion as it stands."""
    s.focus_out()
    if context_romaji is not None:
        press(s, context_romaji + "<space><Return>")
    return s


@needs_dictionary
def test_each_context_keeps_its_own_last_choice(system):
    """After 会議の the user picks 試料, after 動物の 飼料: each context gets its own choice back;
    with no context the latest choice for the reading wins."""
    converter = make_converter(system)
    s = session(converter)
    assert converted(after(s, "kaigino"), "shiryou") == "資料"   # the dictionary's first
    assert pick(after(s, "kaigino"), "shiryou", "試料") == "試料"
    assert pick(after(s, "doubutsuno"), "shiryou", "飼料") == "飼料"
    assert converted(after(s, "kaigino"), "shiryou") == "試料"
    assert converted(after(s, "doubutsuno"), "shiryou") == "飼料"
    assert converted(after(s, None), "shiryou") == "飼料"         # per reading: the latest
    # a choice with no context changes the per-reading winner only
    assert pick(after(s, None), "shiryou", "史料") == "史料"
    assert converted(after(s, None), "shiryou") == "史料"
    assert converted(after(s, "kaigino"), "shiryou") == "試料"
    assert converted(after(s, "doubutsuno"), "shiryou") == "飼料"
    # an unseen context: the per-reading rule, as before
    assert converted(after(s, "kyouno"), "shiryou") == "史料"


@needs_dictionary
def test_the_context_choice_shows_in_live_conversion_and_candidates(system):
    converter = make_converter(system)
    s = session(converter, live=True)
    assert pick(after(s, "kaigino"), "shiryou", "試料") == "試料"
    assert pick(after(s, "doubutsuno"), "shiryou", "飼料") == "飼料"
    after(s, "kaigino")
    press(s, "shiryou")
    assert s.view.preedit_text == "試料"
    press(s, "<space>")
    assert [item.text for item in s.view.candidates.items][:2] == ["試料", "飼料"]
    press(s, "<Escape><Escape>")
    assert converter.candidates(ConversionRequest("しりょう", "動物の"), 3)[0].surface == "飼料"
    assert converter.candidates(ConversionRequest("しりょう", ""), 3)[0].surface == "飼料"
    assert converter.candidates(ConversionRequest("しりょう", "会議の"), 3)[0].surface == "試料"


@needs_dictionary
def test_a_segment_inside_one_conversion_learns_the_segment_before_it(system):
    """どうぶつのしりょう converts as two segments: the second is learned after 動物の, the same
    context as a 動物の committed before it, or given by the application."""
    converter = make_converter(system)
    s = session(converter)
    assert converted(after(s, None), "doubutsunoshiryou") == "動物の資料"
    assert pick(after(s, None), "doubutsunoshiryou", "飼料", segment=1) == "動物の飼料"
    assert pick(after(s, "kaigino"), "shiryou", "試料") == "試料"   # the per-reading latest now
    assert converted(after(s, None), "doubutsunoshiryou") == "動物の飼料"
    assert converted(after(s, "doubutsuno"), "shiryou") == "飼料"
    assert converted(after(s, None), "shiryou") == "試料"
    s.focus_out()
    s.set_surrounding_text("研究用の動物の", 7)   # the application's own text says the same
    assert converted(s, "shiryou") == "飼料"


@needs_dictionary
def test_a_whole_phrase_keeps_its_context(system):
    """A live conversion committed as it stood is learned as one phrase after its context; a
    later change of the same phrase after another context does not reach the first one."""
    converter = make_converter(system)
    s = session(converter, live=True)
    after(s, "kaigino")
    press(s, "shiryouwookuru")
    phrase = s.view.preedit_text
    assert phrase.startswith("資料を")
    assert press(s, "<Return>") == phrase
    changed = pick(after(s, "doubutsuno"), "shiryouwookuru", "飼料を")
    assert changed.startswith("飼料を")
    after(s, "kaigino")
    press(s, "shiryouwookuru")
    assert s.view.preedit_text == phrase
    press(s, "<Escape>")
    after(s, "doubutsuno")
    press(s, "shiryouwookuru")
    assert s.view.preedit_text == changed
    press(s, "<Escape>")
    after(s, None)
    press(s, "shiryouwookuru")
    assert s.view.preedit_text == changed      # per reading: the latest


@needs_dictionary
def test_nothing_typed_in_a_private_field_becomes_a_context(system):
    converter = make_converter(system)
    s = session(converter)
    s.set_field_privacy(FieldPrivacy(private=True))
    assert press(s, "kaigino<space><Return>") == "会議の"     # committed, never learned
    assert len(converter.learning) == 0
    s.set_field_privacy(FieldPrivacy())
    assert pick(s, "shiryou", "試料") == "試料"
    assert converter.learning.context_entries == 0        # 議の was typed while private
    assert converter.learning.lookup("しりょう") == ["試料"]


@needs_dictionary
def test_each_context_keeps_its_choice_with_a_model(system, tmp_path):
    """The fused ranking (a model present, default weights) keeps each context's last choice
    first, in live conversion and on Space. The contexts come from the application's text (the
    tiny random model's own commits would be noise)."""
    pytest.importorskip("llama_cpp")
    from karukan_engine.conversion.fused import FusedConverter
    from karukan_engine.conversion.model_slot import ModelSlot
    from karukan_engine.conversion.settings import ConversionSettings
    from karukan_engine.neural.model import load_model
    from karukan_testing.tiny_models import TinyModelSpec, write_model_dir

    model = load_model(write_model_dir(tmp_path / "tiny", TinyModelSpec(seed=3, eos_scale=2.0)))
    try:
        fused = FusedConverter(make_converter(system), [ModelSlot(model, "tiny")],
                               ConversionSettings(chunk_chars=8), lexicon=system)
        s = session(fused, live=True)

        def line(text: str) -> Session:
            s.focus_out()
            s.set_surrounding_text(text, len(text))
            return s

        assert pick(line("会議の"), "shiryou", "試料") == "試料"
        assert pick(line("動物の"), "shiryou", "飼料") == "飼料"
        for context, expected in (("会議の", "試料"), ("動物の", "飼料"), ("", "飼料")):
            line(context)
            press(s, "shiryou")
            assert s.view.preedit_text == expected
            press(s, "<space>")
            assert s.view.preedit_text == expected
            press(s, "<Escape><Escape>")
        assert fused.candidates(ConversionRequest("しりょう", "会議の"), 3)[0].surface == "試料"
    finally:
        model.close()


# -- the store ----------------------------------------------------------------------------------

def test_context_key_is_the_last_characters(tmp_path):
    assert CONTEXT_CHARS == 2
    assert context_key("明日の会議の") == "議の"
    assert context_key("の") == "の"
    assert context_key("") == ""
    assert context_key("a\tb\x1b") == ""                       # never stored with control characters
    # the text on the choice's own line: after the session's line-start mark, or a line before
    assert context_key("\n") == "" and context_key("\n私") == "私" and context_key("前の行\n今日") == "今日"


def test_an_old_file_loads_as_context_free_history(tmp_path):
    path = tmp_path / "learning.json"
    old = {"format": 1, "tick": 3, "entries": [["しりょう", "資料", 2, 2], ["しりょう", "試料", 1, 3]]}
    path.write_text(json.dumps(old, ensure_ascii=False), encoding="utf-8")
    store = LearningStore(path, save_delay=None)
    assert store.lookup("しりょう") == ["試料", "資料"]
    assert store.lookup("しりょう", "会議の") == ["試料", "資料"]
    assert store.chosen_after("しりょう", "会議の") is None
    assert list(tmp_path.iterdir()) == [path]                 # nothing set aside or copied
    store.record("しりょう", "資料", "会議の")
    assert store.save()
    saved = json.loads(path.read_text(encoding="utf-8"))
    # the per-reading entries keep the old shape, so an older version still reads them
    assert saved["format"] == 1 and all(len(entry) == 4 for entry in saved["entries"])
    assert saved["contexts"] == [["議の", "しりょう", "資料", 1, 4]]
    assert LearningStore(path, save_delay=None).chosen_after("しりょう", "の会議の") == "資料"


@pytest.mark.parametrize("contexts", ["not a list", {"a": 1}, 3])
def test_unusable_contexts_set_the_file_aside(tmp_path, contexts):
    path = tmp_path / "learning.json"
    path.write_text(json.dumps({"format": 1, "tick": 0, "entries": [], "contexts": contexts}))
    store = LearningStore(path, save_delay=None)
    assert len(store) == 0 and store.context_entries == 0
    assert not path.exists() and any(p.name.startswith("learning.json.corrupt-") for p in tmp_path.iterdir())


def test_a_bad_context_entry_is_skipped_and_the_original_kept(tmp_path):
    path = tmp_path / "learning.json"
    raw = json.dumps({"format": 1, "tick": 2, "entries": [["よみ", "読み", 1, 1], ["しりょう", "試料", 1, 2]],
                      "contexts": [["議の", "しりょう", "試料", 1, 2],
                                   ["物の", "しりょう", "試料", 1.5, 2],      # a known pair, bad count
                                   ["物の", "しりょう", "飼料", 0, 2],        # an unknown pair, bad count
                                   ["物の", ["しりょう"], "試料", 1, 1], ["物の", "し\x1b", "試料", 1, 1],
                                   ["", "しりょう", "資料", 1, 1], ["\x1b", "しりょう", "資料", 1, 1], "junk"]},
                     ensure_ascii=False)
    path.write_text(raw, encoding="utf-8")
    store = LearningStore(path, save_delay=None)
    assert store.context_entries == 1 and store.chosen_after("しりょう", "会議の") == "試料"
    assert store.chosen_after("しりょう", "動物の") is None
    copies = [p for p in tmp_path.iterdir() if p != path]
    assert len(copies) == 1 and copies[0].read_text(encoding="utf-8") == raw


def test_forget_and_clear_reach_every_context(tmp_path):
    store = LearningStore(tmp_path / "l.json", save_delay=None)
    store.record("しりょう", "試料", "会議の")
    store.record("しりょう", "試料", "研究の")
    store.record("しりょう", "飼料", "動物の")
    assert store.forget("しりょう", "試料")
    assert store.chosen_after("しりょう", "会議の") is None
    assert store.chosen_after("しりょう", "動物の") == "飼料"
    assert store.context_entries == 1
    store.clear()
    assert store.context_entries == 0 and store.lookup("しりょう", "動物の") == []


def test_the_same_word_again_is_no_context(tmp_path):
    """鏡は three times in a row, then 今日は once after 鏡は, then 鏡は once more after 今日は:
    converting きょうは after 鏡は again must show the last choice (鏡は), not 今日は, the choice once
    made after 鏡は — a repeated word says nothing about which spelling is meant."""
    store = LearningStore(tmp_path / "l.json", save_delay=None)
    left = ""
    for surface in ["鏡は"] * 3 + ["今日は", "鏡は"]:
        store.record("きょうは", surface, left)
        left += surface
    assert store.context_entries == 0
    assert store.lookup("きょうは", "鏡は") == ["鏡は", "今日は"]
    assert store.chosen_after("きょうは", "今日は") is None
    store.record("しりょう", "試料", "今日は")                  # another reading after it: a context
    assert store.chosen_after("しりょう", "今日は") == "試料"


def test_the_choice_just_made_survives_a_full_store(tmp_path):
    """Eviction by score could drop a brand-new pair when older ones were used often; the one
    just chosen always stays, in both tables."""
    store = LearningStore(tmp_path / "l.json", save_delay=None, max_entries=3, max_context_entries=3)
    for word in ("い", "う", "え"):
        for _ in range(5):
            store.record(word, word, "前の")
    store.record("しりょう", "試料", "前の")
    assert store.lookup("しりょう") == ["試料"]
    assert store.chosen_after("しりょう", "前の") == "試料"
    assert len(store) <= 3 and store.context_entries <= 3


READINGS = ["しりょう", "きしゃ", "はし"]
CONTEXTS = ["", "の", "会議の", "動物の", "ab", "xab"]   # "ab" and "xab" share their key
SURFACES = ["A", "B", "の"]   # once "の" is learned for a reading, contexts ending in の echo it
events = st.lists(st.tuples(st.sampled_from(CONTEXTS), st.sampled_from(READINGS), st.sampled_from(SURFACES)),
                  min_size=1, max_size=40)


def expected_after(history, context: str, reading: str) -> str | None:
    """The model: the last surface learned for (context key, reading), unless the key overlaps
    the end of a spelling learned for the reading (the same word again: no context)."""
    key = context_key(context)
    spellings = {s for _, r, s in history if r == reading}
    if not key or any(key.endswith(s) or s.endswith(key) for s in spellings):
        return None
    chosen = [s for c, r, s in history if context_key(c) == key and r == reading]
    return chosen[-1] if chosen else None


@settings(max_examples=200, deadline=None)
@given(history=events)
def test_property_each_context_returns_its_last_choice(tmp_path_factory, history):
    path = tmp_path_factory.mktemp("ctx") / "l.json"
    store = LearningStore(path, save_delay=None)
    for context, reading, surface in history:
        store.record(reading, surface, context)
    assert store.save()
    again = LearningStore(path, save_delay=None)
    for loaded in (store, again):
        for context in CONTEXTS:
            for reading in READINGS:
                want = expected_after(history, context, reading)
                assert loaded.chosen_after(reading, context) == want
                per_reading = [s for _, r, s in history if r == reading]
                got = loaded.lookup(reading, context)
                # that context's last choice first, else the reading's last; every surface once
                assert got[:1] == ([want] if want else per_reading[-1:])
                assert sorted(got) == sorted(set(per_reading))


def _answers_its_last_choice(store: LearningStore, history) -> None:
    """What a context says for a reading, when it says anything, is the last choice made for
    that reading after that context: never an older one left standing by an eviction."""
    for context in CONTEXTS:
        for reading in READINGS:
            said = store.chosen_after(reading, context)
            if said is not None:
                made = [s for c, r, s in history if context_key(c) == context_key(context) and r == reading]
                assert said == made[-1], (context, reading)


@settings(max_examples=100, deadline=None)
@given(history=events, bound=st.integers(1, 6))
# Issue 29: A was chosen after の while の (a spelling of the reading) made the context an echo,
# so the context kept B; evicting の let that stale B beat the last choice.
@example(history=[("の", "しりょう", "B"), ("", "しりょう", "の"), ("の", "しりょう", "A")], bound=1)
# The context's last choice (B, used once) evicted before its older, more used A: A must not answer.
@example(history=[("会議の", "しりょう", "A")] * 3 + [("会議の", "しりょう", "B"), ("動物の", "きしゃ", "A")],
         bound=2)
def test_property_bounds_hold_and_the_last_choice_survives(tmp_path_factory, history, bound):
    path = tmp_path_factory.mktemp("bound") / "l.json"
    store = LearningStore(path, save_delay=None, max_entries=bound, max_context_entries=bound)
    for step, (context, reading, surface) in enumerate(history, 1):
        store.record(reading, surface, context)
        assert len(store) <= bound and store.context_entries <= bound
        assert store.lookup(reading, context)[0] == surface
        _answers_its_last_choice(store, history[:step])
    assert store.save()
    again = LearningStore(path, save_delay=None, max_entries=bound, max_context_entries=bound)
    for context in CONTEXTS:
        for reading in READINGS:
            assert again.lookup(reading, context) == store.lookup(reading, context)
