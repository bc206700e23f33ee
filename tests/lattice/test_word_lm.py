"""The word n-gram inside the lattice search (lattice/word_lm.py), with tiny models counted from
the test's own sentences over the bundled dictionary (tests never read the corpus)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from karukan_engine.core.types import ConversionRequest
from karukan_engine.dictionary.system import DEFAULT_DIR, SystemDictionary
from karukan_engine.lattice.converter import LatticeConverter
from karukan_engine.lattice.search import EOS
from karukan_engine.lattice.word_lm import WordLmWeights, WordScorer, dictionary_margin, search_terms
from karukan_engine.lm.kneser_ney import BOS, UNK, estimate, flatten
from karukan_engine.lm.word_ngram import WordNgram
from karukan_engine.session.field_context import LINE_START

pytestmark = pytest.mark.skipif(not (DEFAULT_DIR / "meta.json").is_file(), reason="dictionary not built")

WORDS = ["新聞\tしんぶん", "記者\tきしゃ", "蒸気\tじょうき", "汽車\tきしゃ", "の\tの", "会議\tかいぎ", "資料\tしりょう"]


@pytest.fixture(scope="module")
def system():
    return SystemDictionary()


def scorer_of(system, tmp_path, sentences: list[list[str]]) -> WordScorer:
    ids = {word.split("\t")[0]: i for i, word in enumerate(WORDS, BOS + 2)}
    model = estimate(*flatten([[ids[w] for w in s] for s in sentences]), len(WORDS) + BOS + 2, order=3)
    path = tmp_path / "words.npz"
    WordNgram.save(path, model, WORDS)
    return WordScorer(WordNgram.load(path), system)


@pytest.fixture(scope="module")
def scorer(system, tmp_path_factory):
    text = [["新聞", "記者"]] * 30 + [["蒸気", "汽車"]] * 30 + [["会議", "の", "資料"]] * 10
    return scorer_of(system, tmp_path_factory.mktemp("wordlm"), text)


def test_dictionary_entries_and_lattice_nodes_get_their_word_ids(system, scorer):
    converter = LatticeConverter(system, None, None)
    lattice = converter.builder.build("きしゃ")
    words = scorer.node_words(lattice)
    spelled = {lattice.surface(n): int(w) for n, w in enumerate(words) if n > EOS and w != UNK}
    assert spelled.get("記者") == scorer.model.word_id("記者", "きしゃ")
    assert spelled.get("汽車") == scorer.model.word_id("汽車", "きしゃ")
    assert "貴社" not in spelled   # not in the model: the dictionary alone judges it
    assert scorer.context_word("今日の新聞") == scorer.model.word_id("新聞", "しんぶん")
    assert scorer.context_word("終わり。") == BOS and scorer.context_word("ほげ") == UNK


def test_the_left_context_picks_the_homophone_it_was_seen_with(system, scorer):
    converter = LatticeConverter(system, None, None, word_lm=lambda: scorer,
                                 word_weights=WordLmWeights(weight=2000.0, unknown=12.0))
    assert converter.live(ConversionRequest("きしゃ", left_context="新聞")) == "記者"
    assert converter.live(ConversionRequest("きしゃ", left_context="蒸気")) == "汽車"
    # without the model (weight 0) the context word changes nothing the model said
    plain = LatticeConverter(system, None, None, word_lm=lambda: scorer, word_weights=WordLmWeights(weight=0.0))
    assert plain.live(ConversionRequest("きしゃ", left_context="新聞")) == plain.live(
        ConversionRequest("きしゃ", left_context="蒸気"))


def test_a_loading_model_leaves_the_dictionary_alone(system):
    converter = LatticeConverter(system, None, None, word_lm=lambda: None, word_weights=WordLmWeights(weight=900.0))
    alone = LatticeConverter(system, None, None)
    request = ConversionRequest("かいぎのしりょう")
    assert converter.live(request) == alone.live(request)


@settings(max_examples=30, deadline=None)
@given(reading=st.text(alphabet="きしゃのかいぎしりょうしんぶん", min_size=1, max_size=10),
       context=st.sampled_from(["", "新聞", "蒸気。", "ほげ"]), weight=st.floats(1, 3000),
       unknown=st.floats(0, 30), open_start=st.sampled_from([0.0, 0.5, 1.0]))
def test_terms_only_lower_transitions_and_the_best_path_is_the_cheapest(system, scorer, reading, context,
                                                                     weight, unknown, open_start):
    weights = WordLmWeights(weight=weight, unknown=unknown, open_start=open_start)
    converter = LatticeConverter(system, None, None, word_lm=lambda: scorer, word_weights=weights)
    analysis = converter._analyse(ConversionRequest(reading, left_context=context))
    terms = search_terms(scorer, analysis.lattice, 0, len(reading), context, weights)
    extra, (prev, cur, bonus) = terms.extra_cost, terms.pairs
    assert np.all(bonus <= 0) and np.all(extra >= 0)
    space = analysis.space
    best = space.best_path()
    assert space.path_cost(best) == space.alpha[EOS]
    first_cost, first = next(space.paths())
    assert first_cost == space.alpha[EOS] and space.path_cost(first) == first_cost


def test_the_trigram_judges_the_paths_where_the_bigram_cannot_tell(system, tmp_path):
    # の -> 記者 and の -> 汽車 are equally common: only the word before の tells them apart
    scorer = scorer_of(system, tmp_path, [["新聞", "の", "記者"]] * 30 + [["蒸気", "の", "汽車"]] * 30)
    picks = {}
    for share in (0.0, 1.0):
        weights = WordLmWeights(weight=1500.0, unknown=12.0, trigram=share)
        converter = LatticeConverter(system, None, None, word_lm=lambda: scorer, word_weights=weights)
        picks[share] = [converter.live(ConversionRequest("のきしゃ", left_context=c)) for c in ("新聞", "蒸気")]
    assert picks[1.0] == ["の記者", "の汽車"]
    assert picks[0.0][0] == picks[0.0][1]


def test_a_damaged_word_model_leaves_the_converter_without_it(system, tmp_path, caplog):
    from karukan_engine.lattice.word_lm import LoadedWordScorer

    bad = tmp_path / "word-3gram.npz"
    bad.write_bytes(b"PK\x03\x04 damaged")
    loaded = LoadedWordScorer(system, bad)
    assert loaded.handle.settle(30)
    assert loaded() is None and loaded() is None
    assert sum("word n-gram unavailable" in r.message for r in caplog.records) == 1
    converter = LatticeConverter(system, None, None, word_lm=loaded, word_weights=WordLmWeights(weight=800.0))
    assert converter.live(ConversionRequest("かいぎ")) == LatticeConverter(system, None, None).live(ConversionRequest("かいぎ"))


def _paths(scores: list[float]) -> list:
    from karukan_engine.lattice.lm_paths import ScoredPath

    ordered = sorted(scores)
    return [ScoredPath(score, 0, f"s{i}", ()) for i, score in enumerate(ordered)]


@settings(max_examples=200, deadline=None)
@given(scores=st.lists(st.floats(-1e5, 1e5), min_size=1, max_size=8, unique=True),
       pick=st.integers(0, 9), margin=st.floats(0, 1e4))
def test_the_dictionary_keeps_its_choice_unless_the_models_lead_by_the_margin(scores, pick, margin):
    from karukan_engine.lattice.lm_paths import keep_dictionary_choice

    ranked = _paths(scores)
    surface = f"s{pick}"
    kept = keep_dictionary_choice(ranked, surface, margin)
    assert sorted(p.surface for p in kept) == sorted(p.surface for p in ranked)   # nothing lost or added
    present = [p for p in ranked if p.surface == surface]
    if present and present[0].score - ranked[0].score < margin:
        assert kept[0] == present[0] and kept[1:] == [p for p in ranked if p is not present[0]]
    else:
        assert kept == ranked


def test_a_close_call_keeps_the_dictionarys_conversion(system, scorer):
    """The word n-gram's context choice survives only with a lead the margin allows."""
    request = ConversionRequest("きしゃ", left_context="蒸気")
    alone = LatticeConverter(system, None, None).live(request)
    picks = {}
    for margin in (0.0, 1e9):
        weights = WordLmWeights(weight=2000.0, unknown=12.0, dictionary_margin=margin)
        picks[margin] = LatticeConverter(system, None, None, word_lm=lambda: scorer, word_weights=weights).live(request)
    assert picks[0.0] == "汽車" != alone
    assert picks[1e9] == alone


def test_an_unknown_left_context_need_not_start_a_sentence(system, tmp_path):
    # 汽車 opens sentences; 記者 is the commoner word but never comes first
    scorer = scorer_of(system, tmp_path, [["汽車", "の", "資料"]] * 8 + [["新聞", "記者"]] * 40)
    picks = {}
    for share in (0.0, 0.9):
        # lone_word_margin 0: the n-grams judge a lone word too (the mixture is what is tried)
        weights = WordLmWeights(weight=2000.0, unknown=12.0, open_start=share, lone_word_margin=0.0)
        converter = LatticeConverter(system, None, None, word_lm=lambda: scorer, word_weights=weights)
        picks[share] = [converter.live(ConversionRequest("きしゃ", left_context=c)) for c in ("", "終わり。", LINE_START)]
    assert picks[0.0] == ["汽車", "汽車", "汽車"]
    # no text known left of the caret: the commoner word; after a sentence end, or where the
    # application says the caret starts a line: still a sentence start
    assert picks[0.9] == ["記者", "汽車", "汽車"]


def test_a_lone_word_with_no_text_before_it_keeps_the_dictionarys_choice(system, tmp_path):
    """With nothing before it the n-grams know only how common each spelling is: the dictionary
    judges a lone word. A reading of more words, or text before it, and they judge again."""
    alone = LatticeConverter(system, None, None)
    first = alone.live(ConversionRequest("きしゃ"))
    other = "汽車" if first == "記者" else "記者"
    scorer = scorer_of(system, tmp_path, [[other]] * 60 + [[other, "の", "資料"]] * 60)
    weights = WordLmWeights(weight=2000.0, unknown=12.0)
    converter = LatticeConverter(system, None, None, word_lm=lambda: scorer, word_weights=weights)
    for context in ("", LINE_START, " \n"):
        assert converter.live(ConversionRequest("きしゃ", left_context=context)) == first
        assert converter.candidates(ConversionRequest("きしゃ", left_context=context), 3)[0].surface == first
    # text before it (even a finished sentence): the n-grams read it and their choice stands
    assert converter.live(ConversionRequest("きしゃ", left_context="終わり。")) == other
    # more than one word: the usual margin
    assert converter.live(ConversionRequest("きしゃのしりょう")) == other + "の資料"
    # lone_word_margin 0: the usual margin for the lone word too
    usual = LatticeConverter(system, None, None, word_lm=lambda: scorer,
                             word_weights=WordLmWeights(weight=2000.0, unknown=12.0, lone_word_margin=0.0))
    assert usual.live(ConversionRequest("きしゃ")) == other


@settings(max_examples=200, deadline=None)
@given(context=st.text(alphabet=" \t\n\u3000。あ", max_size=4), words=st.integers(0, 5),
       margin=st.floats(0, 1e4), lone=st.floats(0, 1e5) | st.just(float("inf")))
def test_only_a_lone_word_with_no_text_before_it_gets_the_lone_word_margin(context, words, margin, lone):
    weights = WordLmWeights(dictionary_margin=margin, lone_word_margin=lone)
    got = dictionary_margin(weights, context, words)
    assert got >= margin
    assert got == (max(margin, lone) if words == 1 and not context.strip() else margin)


@pytest.mark.parametrize("share", [-0.1, 1.5])
def test_the_open_start_share_is_a_probability(share):
    with pytest.raises(ValueError):
        WordLmWeights(open_start=share)
