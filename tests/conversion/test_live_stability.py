"""Live conversion does not flicker: the unfinished tail stays kana until it is a word.

Key sequences through a real Session over the bundled dictionary (no learning, so the answers
are the dictionary's own), then the stabilizer's pure logic with a scripted aligner.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from karukan_engine.config import Config
from karukan_engine.conversion.align import AlignedWord, Alignment
from karukan_engine.live.live_service import LateUpdate, LiveLink, LiveService
from karukan_engine.conversion.stability import LiveStabilizer, kana_tail, tail_unfinished
from karukan_engine.core.types import ConversionRequest
from karukan_engine.dictionary.system import DEFAULT_DIR, SystemDictionary
from karukan_engine.evaluation.flicker import Step, measure
from karukan_engine.session import Session
from karukan_engine.session.keys_cli import parse_keys

needs_dictionary = pytest.mark.skipif(not (DEFAULT_DIR / "meta.json").is_file(),
                                      reason="compiled dictionary not built")


@pytest.fixture(scope="module")
def lattice():
    from karukan_engine.lattice.converter import LatticeConverter

    return LatticeConverter(SystemDictionary(), None, None)


def live_session(converter) -> Session:
    config = Config()
    return Session(converter, replace(config, session=replace(config.session, live_conversion=True)))


def type_keys(session: Session, keys: str) -> list[str]:
    """The preedit after every key."""
    return [session.process_key(keysym, mods).preedit_text for _, keysym, mods in parse_keys(keys)]


def settled_reading(session: Session) -> str:
    return "".join(u.text for u in session._composer.units)


# -- key sequences ---------------------------------------------------------------------------------

@needs_dictionary
def test_typing_the_issues_sentence_shows_no_odd_kanji_on_the_way(lattice):
    # Before: 今日は良い点ｋ while the k of き was pending (いい rewritten behind the caret).
    session = live_session(lattice)
    steps = []
    for _, keysym, mods in parse_keys("kyouhaiitenkidesune"):
        view = session.process_key(keysym, mods)
        pending = len(session._composer.text()) - len(settled_reading(session))
        shown = view.preedit_text[: len(view.preedit_text) - pending]
        steps.append(Step(shown, settled_reading(session)))
    final = session.process_key(*next(iter(parse_keys("<Return>")))[1:]).commit
    assert final == "今日はいい天気ですね"
    result = measure(steps, final)
    assert result.flickers == 0, result.flicker_strings
    assert result.rewritten_chars == 0


@needs_dictionary
def test_kana_typed_while_a_key_is_pending_stay_kana(lattice):
    session = live_session(lattice)
    preedits = type_keys(session, "kyouhaiiten")
    assert preedits[-1] == "今日はいいてｎ"
    # n resolves to ん and k is pending: the word てん… is still being typed.
    assert type_keys(session, "k") == ["今日はいいてんｋ"]
    assert type_keys(session, "i") == ["今日はいい天気"]


@needs_dictionary
def test_a_trailing_consonant_leaves_the_text_as_it_was(lattice):
    session = live_session(lattice)
    before = type_keys(session, "kaigi")[-1]
    assert before == "会議"
    assert type_keys(session, "n") == ["会議ｎ"]


@needs_dictionary
def test_a_one_or_two_kana_tail_stays_kana_until_the_reading_goes_on(lattice):
    session = live_session(lattice)
    assert type_keys(session, "hana")[-1] == "はな"                 # not 花 (はなし is coming)
    assert type_keys(session, "shi")[-1] == lattice.live(ConversionRequest("はなし"))
    assert type_keys(session, "te")[-1].startswith("話して")


@needs_dictionary
def test_return_converts_the_tail_it_showed_as_kana(lattice):
    session = live_session(lattice)
    assert type_keys(session, "hana")[-1] == "はな"
    commit = session.process_key(*next(iter(parse_keys("<Return>")))[1:]).commit
    assert commit == lattice.live(ConversionRequest("はな"))   # the converter's own text
    assert commit != "はな"


@needs_dictionary
def test_a_short_word_the_user_chose_before_shows_converted(tmp_path):
    from karukan_engine.dictionary.learning import LearningStore
    from karukan_engine.lattice.converter import LatticeConverter
    from karukan_engine.session import State

    store = LearningStore(tmp_path / "learning.json", save_delay=None)
    converter = LatticeConverter(SystemDictionary(), None, store)
    session = live_session(converter)
    type_keys(session, "hana<space>")
    for _ in range(40):
        if session.view.preedit_text == "鼻":
            break
        type_keys(session, "<Down>")
    assert session.state is State.CONVERSION and session.view.preedit_text == "鼻"
    type_keys(session, "<Return>")
    assert type_keys(session, "hana")[-1] == "鼻"    # a word this user types, not a start


@needs_dictionary
def test_the_models_refinement_obeys_the_same_rule(lattice):
    session = live_session(lattice)
    service = LiveService(lattice)
    try:
        session.attach_live(LiveLink(service, 1, lambda update: None))
        type_keys(session, "kyouha")
        # A refinement ending in a one-kana kanji: shown as kana like the dictionary's text.
        view = session.apply_live_update(LateUpdate.live(1, session._work.epoch, "きょうは", "今日歯"))
        assert view is not None and view.preedit_text == "今日は"
        type_keys(session, "iitenk")
        # While a key is pending a refinement does not change what is shown.
        view = session.apply_live_update(LateUpdate.live(1, session._work.epoch, "きょうはいいてん", "今日は良い点"))
        assert view is not None and view.preedit_text == "今日はいいてんｋ"
    finally:
        service.shutdown()


@needs_dictionary
def test_without_live_conversion_nothing_changes(lattice):
    config = Config()
    session = Session(lattice, replace(config, session=replace(config.session, live_conversion=False)))
    assert type_keys(session, "hana")[-1] == "はな"
    assert session.process_key(*next(iter(parse_keys("<Return>")))[1:]).commit == "はな"


# -- the stabilizer's logic, with a scripted aligner -------------------------------------------------

KANA = "かきくけこさしすせそはなっ"
KANJI = [chr(0x4E00 + i) for i in range(200)]


class ScriptedAligner:
    """Aligns only the texts it wrote (and their tails from a word boundary): each word is either
    its reading or one kanji."""

    def __init__(self) -> None:
        self.known: dict[tuple[str, str], tuple[AlignedWord, ...]] = {}
        self.kanji_reading: dict[str, str] = {}

    def write(self, reading: str, cuts: list[int], kanji: list[bool]) -> str:
        points = sorted({c for c in cuts if 0 < c < len(reading)} | {0, len(reading)})
        words = []
        for (lo, hi), spell in zip(zip(points, points[1:]), kanji + [False] * len(points)):
            part = reading[lo:hi]
            if spell:
                char = KANJI[(hash(part) % 100) + 100 * (len(part) % 2)]
                self.kanji_reading.setdefault(char, part)
                if self.kanji_reading[char] != part:
                    spell = False
            words.append(AlignedWord(part, char if spell else part, 0, 0))
        for k in range(len(words)):   # every tail from a word boundary aligns too
            rest = words[k:]
            self.known.setdefault(("".join(w.reading for w in rest), "".join(w.surface for w in rest)),
                                  tuple(rest))
        return "".join(w.surface for w in words)

    def align(self, reading: str, surface: str) -> Alignment | None:
        words = self.known.get((reading, surface))
        return Alignment(words, 0) if words is not None else None

    def reading_of(self, text: str) -> str:
        return "".join(self.kanji_reading.get(ch, ch) for ch in text)


typing = st.lists(
    st.tuples(st.integers(1, 3), st.lists(st.integers(1, 12), max_size=4),
              st.lists(st.booleans(), max_size=5), st.booleans()),
    min_size=1, max_size=12)


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=KANA, min_size=1, max_size=14), typing)
def test_what_is_shown_always_reads_as_typed_and_choosing_again_changes_nothing(sentence, keys):
    aligner = ScriptedAligner()
    stabilizer = LiveStabilizer(aligner)
    typed = 0
    for grow, cuts, kanji, pending in keys:
        typed = min(len(sentence), typed + grow)
        reading = sentence[:typed]
        proposal = aligner.write(reading, cuts, kanji)
        shown = stabilizer.choose(reading, proposal, pending)
        assert aligner.reading_of(shown) == reading
        again = stabilizer.choose(reading, proposal, pending)
        assert again == shown
    final = aligner.write(sentence, [], [True])
    assert stabilizer.choose(sentence, final, finished=True) == final


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=KANA.replace("っ", ""), min_size=1, max_size=10), st.lists(st.integers(1, 9), max_size=4),
       st.lists(st.booleans(), max_size=5))
def test_a_finished_reading_shows_the_proposal_but_a_short_converted_tail(reading, cuts, kanji):
    aligner = ScriptedAligner()
    proposal = aligner.write(reading, cuts, kanji)
    words = [(w.reading, w.surface) for w in aligner.known[(reading, proposal)]]
    shown = LiveStabilizer(aligner).choose(reading, proposal)
    assert shown == (kana_tail(words) if tail_unfinished(words[-1]) else proposal)


def test_without_an_aligner_the_text_passes_unchanged():
    stabilizer = LiveStabilizer(None)
    assert stabilizer.choose("はな", "花") == "花"
    assert stabilizer.choose("はなｓ", "花", pending=True) == "花"


def test_a_dictionary_only_session_does_not_load_the_neural_runtime():
    """The service's first context is created in its event loop: importing the fused converter
    (and llama.cpp with it) there took 0.25-0.35 s, past the IBus engine's 0.25 s call timeout,
    so every key typed while the service started passed through as romaji."""
    import subprocess
    import sys

    script = ("import sys\n"
              "from karukan_engine.conversion.factory import ConverterOptions, build_converter\n"
              "from karukan_engine.session import Session\n"
              "from karukan_engine.config import Config\n"
              "Session(build_converter(ConverterOptions(use_model=False, load_in_background=True)), Config())\n"
              "print('llama_cpp' in sys.modules, 'karukan_engine.conversion.fused' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.split() == ["False", "False"]
