"""The first candidate page, typed as key sequences (reading, Space) through a Session over the
bundled dictionary: real words and known phrases before one-kanji guesses, word salad after the
kana forms, the hiragana and katakana forms always on the page, the last learned choice first.
Plus properties of the pure ordering (lattice/candidate_filter.py) and the page comparison
script (benchmarks/candidate_pages_eval.py)."""

from __future__ import annotations

import importlib.util
import tempfile
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from karukan_engine.config import Config
from karukan_engine.dictionary.learning import LearningStore
from karukan_engine.dictionary.system import DEFAULT_DIR
from karukan_engine.kana import to_katakana
from karukan_engine.lattice.candidate_filter import (
    GUESS_OFFSET,
    Shape,
    Spelling,
    bring_forward,
    order_spellings,
    reference_cost,
    shape_of,
)
from karukan_engine.lattice.converter import LatticeConverter
from karukan_engine.session import Session, State
from karukan_engine.session.keys_cli import parse_keys

ROOT = Path(__file__).resolve().parents[2]
needs_dictionary = pytest.mark.skipif(not (DEFAULT_DIR / "meta.json").is_file(), reason="compiled dictionary not built")


def press(s: Session, keys: str) -> None:
    for _, keysym, modifiers in parse_keys(keys):
        s.process_key(keysym, modifiers)


def first_page(s: Session, romaji: str) -> list[str]:
    """Type romaji, press Space, read the candidate window; cancel after."""
    press(s, romaji + "<space>")
    assert s.state is State.CONVERSION
    page = [item.text for item in s.view.candidates.items]
    press(s, "<Escape><Escape>")
    return page


def fresh_session(system, learning: bool = False) -> Session:
    store = (LearningStore(Path(tempfile.mkdtemp(prefix="karukan-learn-")) / "learning.json", save_delay=None)
             if learning else None)
    return Session(LatticeConverter(system, None, store), Config())


READINGS = {"kyouha": "きょうは", "kaigino": "かいぎの", "watashiha": "わたしは", "hitoga": "ひとが",
            "kyoumo": "きょうも", "amedesu": "あめです"}


@needs_dictionary
@pytest.mark.parametrize("romaji", sorted(READINGS))
def test_the_hiragana_and_katakana_forms_are_on_the_first_page(system, romaji):
    page = first_page(fresh_session(system), romaji)
    assert len(page) <= 9
    assert READINGS[romaji] in page and to_katakana(READINGS[romaji]) in page


@needs_dictionary
def test_a_real_word_comes_before_one_kanji_guesses(system):
    """きょうは: the word 教派 before 教は, 強は, 凶は (a single kanji + は, each over a hundred
    times less likely than 今日は); 今日は and きょうは keep their places."""
    page = first_page(fresh_session(system), "kyouha")
    assert page[:2] == ["今日は", "きょうは"]
    guesses = [page.index(s) for s in ("教は", "強は") if s in page]
    assert guesses and page.index("教派") < min(guesses)


@needs_dictionary
def test_word_salad_comes_after_the_words_and_the_kana_forms(system):
    """かいぎの: 回技の and 階技の (two content words glued) after 会議の, 懐疑の, かいぎの, カイギノ."""
    page = first_page(fresh_session(system), "kaigino")
    assert page[:2] == ["会議の", "懐疑の"]
    kana = max(page.index("かいぎの"), page.index("カイギノ"))
    salad = [page.index(s) for s in ("回技の", "階技の") if s in page]
    assert salad and kana < min(salad)


@needs_dictionary
def test_the_last_learned_choice_still_leads_the_page(system):
    s = fresh_session(system, learning=True)
    press(s, "kyouha<space>")
    for _ in range(20):
        if s.view.preedit_text == "強は":
            break
        press(s, "<Down>")
    assert s.view.preedit_text == "強は"
    press(s, "<Return>")
    page = first_page(s, "kyouha")
    assert page[0] == "強は" and "今日は" in page


@needs_dictionary
def test_a_learned_word_does_not_thin_out_the_rest_of_the_page(system):
    """After 教派 is chosen it leads; the page keeps the spellings it had (キョウは), because the
    filter and the guess rule measure from the cheapest spelling that is not the user's own."""
    s = fresh_session(system, learning=True)
    before = first_page(s, "kyouha")
    press(s, "kyouha<space>")
    while s.view.preedit_text != "教派":
        press(s, "<Down>")
    press(s, "<Return>")
    after = first_page(Session(s.converter, Config()), "kyouha")   # the same learning, no left context
    assert after[0] == "教派"
    assert set(before) - {"教派"} <= set(after) | set(before[len(after) - 1:])
    assert "キョウは" in after and "キョウハ" in after


# -- the pure ordering ---------------------------------------------------------------------------

costs = st.integers(0, 30000)
spellings = st.builds(Spelling, surface=st.text("あいう亜伊宇", min_size=1, max_size=4), cost=costs,
                      structure=costs, words=st.integers(1, 4), personal=st.booleans(),
                      content_words=st.integers(1, 3), lone_kanji=st.booleans())


def cheapest_first(items: list[Spelling]) -> list[Spelling]:
    return sorted(items, key=lambda s: s.cost)


@given(st.lists(spellings, min_size=1, max_size=12))
def test_ordering_keeps_every_spelling_and_the_top_first(items):
    items = cheapest_first(items)
    ordered = order_spellings(items)
    assert ordered[0] is items[0]
    assert sorted(map(id, ordered)) == sorted(map(id, items))


@given(st.lists(spellings, min_size=1, max_size=12))
def test_ordering_is_by_shape_then_cost_and_stable(items):
    items = cheapest_first(items)
    ordered = order_spellings(items)
    reference = reference_cost(items)
    shapes = [shape_of(s, reference) for s in ordered[1:]]
    assert shapes == sorted(shapes)
    for shape in Shape:
        same = [s for s in ordered[1:] if shape_of(s, reference) == shape]
        assert same == [s for s in items[1:] if shape_of(s, reference) == shape]   # input order kept


@given(st.lists(spellings, min_size=1, max_size=12))
def test_guesses_are_measured_from_the_cheapest_spelling_that_is_not_the_users(items):
    items = cheapest_first(items)
    dictionary = [s for s in items if not s.personal]
    assert reference_cost(items) == (dictionary[0].cost if dictionary else items[0].cost)


@given(spellings, costs)
def test_personal_words_and_near_spellings_are_never_guesses(spelling, top_cost):
    shape = shape_of(spelling, top_cost)
    if spelling.personal:
        assert shape is Shape.WORD
    if spelling.content_words == 1 and spelling.cost <= top_cost + GUESS_OFFSET:
        assert shape is Shape.WORD
    if not spelling.personal and spelling.content_words > 1:
        assert shape is Shape.COMPOSED
    if spelling.content_words == 1:
        assert shape_of(replace(spelling, lone_kanji=False), top_cost) is Shape.WORD


@given(st.lists(st.integers(0, 30), unique=True, max_size=15), st.integers(0, 30), st.integers(1, 12))
def test_bringing_forward_puts_the_item_by_its_place_and_moves_nothing_else_out_of_order(items, item, place):
    moved = bring_forward(items, item, place)
    assert sorted(moved) == sorted(items)
    if item in items:
        assert moved.index(item) <= max(place - 1, 0) or moved == items
        assert moved.index(item) <= items.index(item)
    rest = [x for x in moved if x != item]
    assert rest == [x for x in items if x != item]


# -- the comparison script ------------------------------------------------------------------------

def load_script():
    spec = importlib.util.spec_from_file_location("candidate_pages_eval", ROOT / "benchmarks" / "candidate_pages_eval.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    return script


@needs_dictionary
def test_the_page_classes_are_mechanical(system):
    classes = load_script().EntryClasses(system)
    assert classes.classify("きょうは", "きょうは") == "kana"
    assert classes.classify("きょうは", "キョウハ") == "kana"
    assert classes.classify("きょうは", "ｷｮｳﾊ") == "form"
    assert classes.classify("きょうは", "教派") == "word"
    assert classes.classify("きょうは", "今日は") == "phrase"
    assert classes.classify("きょうは", "教は") == "guess"
    assert classes.classify("かいぎの", "回技の") == "junk"
    assert classes.classify("かいぎの", "鮨の") == "junk"


@needs_dictionary
def test_the_comparison_scores_a_recorded_fixture(system):
    script = load_script()
    items = [{"reading": "きょうは", "kind": "segment", "count": 2, "gold": "今日は"}]
    mozc = {"きょうは": {"segments": ["きょうは"], "top": "今日は", "page": ["今日は", "きょうは", "教は", "教派"]}}
    result = script.measure(items, mozc, {}, script.EntryClasses(system))
    assert result["pages"] == 1 and result["gold_first"] == 1.0 and result["gold_on_page"] == 1.0
    assert result["guesses_per_page"] == 1 and result["guess_before_word"] == 1.0
    assert result["hiragana"]["places"] == {2: 1} and result["katakana"]["on_page"] == 0
    fixture = script.FIXTURE.read_text(encoding="utf-8")
    assert '"mozc_version": "2.28' in fixture


# -- the fused pipeline's list for a segment ------------------------------------------------------

def test_the_fused_list_keeps_the_dictionarys_order_and_takes_in_what_its_page_lacks():
    from karukan_engine.conversion.fused.space_segments import segment_list
    from karukan_engine.core.types import Candidate, Source

    def c(surface, source=Source.DICTIONARY):
        return Candidate(surface, "", source)

    listed = [c(s) for s in ("今日は", "きょうは", "教派", "キョウは", "教は", "強は", "凶は", "経は", "キョウハ", "境")]
    others = [c("きょうは"), c("教は"), c("強は"), c("境"), c("凶派", Source.MODEL)]
    got = [x.surface for x in segment_list("きょうは", c("今日は"), others, listed, {"教派", "境"})]
    # the model's span and 境 (a word the list's first page lacks) in the whole-reading order, then
    # the list in its own order (教は and 強は do not jump ahead of 教派)
    assert got[:4] == ["今日は", "境", "凶派", "きょうは"]
    assert got.index("教派") < got.index("教は") < got.index("強は")
    assert "キョウハ" in got[:9]


@given(st.lists(st.sampled_from(["雨", "天", "飴", "あめ", "アメ", "亜目", "編め", "在目"]), unique=True, max_size=8),
       st.lists(st.sampled_from(["雨", "天", "飴", "あめ", "アメ", "亜目", "編め", "在目"]), unique=True, max_size=5))
def test_the_fused_list_keeps_the_best_first_and_loses_nothing(listed, others):
    from karukan_engine.conversion.fused.space_segments import segment_list
    from karukan_engine.core.types import Candidate

    best = Candidate("雨")
    got = [x.surface for x in segment_list("あめ", best, [Candidate(s) for s in others],
                                           [Candidate(s) for s in listed], {"天", "飴"})]
    assert got[0] == "雨" and len(got) == len(set(got))
    assert set(got) == {"雨", *listed, *others}
    for form, place in (("あめ", 8), ("アメ", 9)):
        if form in got:
            assert got.index(form) < place


# -- reading Mozc's helper output (tools/mozc_pages.py; no Mozc needed) ----------------------------

def test_mozc_helper_output_is_read_into_segments_and_the_first_page():
    from tools.mozc_pages import parse_sexp, preedit_segments, window_page

    line = ('((emacs-event-id . 8)(emacs-session-id . 1)(output . ((mode . hiragana)(preedit . ((cursor . 4)'
            '(segment ((annotation . highlight)(value . "今日は")(key . "きょうは")))))(candidates . ((focused-index . 1)'
            '(size . 11)(candidate ' + "".join(f'((index . {i})(value . "候補{i}\\"")(id . {i}))' for i in range(11))
            + ')(page-size . 9))))))')
    output = [item for item in parse_sexp(line) if item[0] == "output"][0][2]
    assert preedit_segments(output) == [("きょうは", "今日は")]
    assert window_page(output) == [f'候補{i}"' for i in range(9)]


@needs_dictionary
def test_the_fused_pipeline_shows_the_same_clean_page(system, tmp_path):
    """Space through the fused pipeline (a tiny real model loaded, weighted as the bundled one,
    without its n-gram): the other whole-reading paths' spans (教は, 強は) no longer come before the word
    教派, and the kana forms show."""
    pytest.importorskip("llama_cpp")
    from karukan_engine.conversion.fused import FusedConverter
    from karukan_engine.conversion.model_slot import ModelSlot
    from karukan_engine.conversion.settings import FITTED_WEIGHTS, ConversionSettings
    from karukan_engine.neural.model import load_model
    from karukan_testing.tiny_models import TinyModelSpec, write_model_dir

    model = load_model(write_model_dir(tmp_path / "tiny", TinyModelSpec(seed=3, eos_scale=2.0)))
    try:
        fused = FusedConverter(LatticeConverter(system, None, None), [ModelSlot(model, "tiny")],
                               ConversionSettings(chunk_chars=8, weights=FITTED_WEIGHTS["karukan-bundled"]),
                               lexicon=system)
        page = first_page(Session(fused, Config()), "kyouha")
    finally:
        model.close()
    assert page[0] == "今日は"
    guesses = [page.index(s) for s in ("教は", "強は") if s in page]
    assert page.index("教派") < min(guesses, default=len(page))
    assert "きょうは" in page and "キョウハ" in page
