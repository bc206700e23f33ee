"""The incremental lattice (LatticeBuilder.extend, SearchSpace's base, search_terms' base):
a reading that continues an analysed one is analysed from the shorter one's lattice, forward
costs and word n-gram terms, and must come out exactly as a full rebuild, ties included."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from karukan_engine.core.types import ConversionRequest
from karukan_engine.dictionary.learning import LearningStore
from karukan_engine.dictionary.system import DEFAULT_DIR, SystemDictionary
from karukan_engine.dictionary.user_dictionary import UserDictionary
from karukan_engine.lattice.converter import LatticeConverter
from karukan_engine.lattice.search import SearchSpace
from karukan_engine.lattice.word_lm import WordScorer, search_terms
from karukan_engine.lm.bundled import BUNDLED as CHAR_NGRAM
from karukan_engine.lm.char_ngram import CharNgram
from karukan_engine.lm.word_ngram import BUNDLED as WORD_NGRAM
from karukan_engine.lm.word_ngram import WordNgram

pytestmark = pytest.mark.skipif(not (DEFAULT_DIR / "meta.json").is_file(), reason="dictionary not built")

# kana that make many dictionary words, digits and Latin letters (pass-through runs), a symbol
READINGS = st.text(alphabet="かいぎのしりょうをおくりますきょうはてんきにほんごゅー12ab。", min_size=2, max_size=14)
COLUMNS = ("start", "end", "lid", "rid", "cost", "surface_id", "entry")
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@pytest.fixture(scope="module")
def system():
    return SystemDictionary()


@pytest.fixture(scope="module")
def scorer(system):
    return WordScorer(WordNgram.load(WORD_NGRAM), system)


@pytest.fixture(scope="module")
def char_ngram():
    return CharNgram.load(CHAR_NGRAM)


@pytest.fixture(scope="module")
def converters(system, scorer, char_ngram, tmp_path_factory):
    """Two converters over the same user words and learning: one analyses every prefix first."""
    folder = tmp_path_factory.mktemp("extend")
    user = UserDictionary(folder / "user.tsv", pos_names=system.user_pos)
    user.add("かいぎの", "会議野")   # a user word across the usual cut
    user.add("のし", "熨斗")
    learning = LearningStore(folder / "learning.json")
    learning.record("きょう", "京")
    learning.record("しりょうを", "試料を")
    made = [LatticeConverter(system, user, learning, lm=lambda: char_ngram, word_lm=lambda: scorer)
            for _ in range(2)]
    yield made
    for converter in made:
        converter.close()


def one_run(a: str, b: str) -> bool:
    return (a in "12" and b in "12") or (a in "ab" and b in "ab")


def split(reading: str, data) -> int:
    return data.draw(st.integers(1, len(reading) - 1), label="prefix length")


@SETTINGS
@given(reading=READINGS, data=st.data())
def test_an_extended_lattice_is_the_full_lattice_node_for_node(converters, reading, data):
    builder = converters[0].builder
    k = split(reading, data)
    base, full = builder.build(reading[:k]), builder.build(reading)
    extended = builder.extend(base, reading)
    if extended is None:
        # only a digit or Latin run going on across the join is refused (its node grows)
        assert one_run(reading[k - 1], reading[k])
        return
    for name in COLUMNS:
        assert np.array_equal(getattr(extended, name), getattr(full, name)), name
    nodes = range(len(full))
    assert [extended.surface(n) for n in nodes] == [full.surface(n) for n in nodes]
    assert [extended.source(n) for n in nodes] == [full.source(n) for n in nodes]
    assert np.all(np.diff(full.end[2:]) >= 0)   # the order extend relies on
    # base's nodes stay where they were
    for name in COLUMNS[2:]:
        assert np.array_equal(getattr(extended, name)[2:len(base)], getattr(base, name)[2:])


@SETTINGS
@given(reading=READINGS, context=st.sampled_from(["", "新聞の", "終わり。"]), data=st.data())
def test_extended_searches_reuse_the_forward_costs_and_terms_exactly(converters, system, scorer, reading,
                                                                      context, data):
    builder, weights = converters[0].builder, converters[0].word_weights
    k = split(reading, data)
    base = builder.build(reading[:k])
    extended = builder.extend(base, reading)
    if extended is None:
        return
    full = builder.build(reading)
    base_terms = search_terms(scorer, base, 0, k, context, weights)
    full_terms = search_terms(scorer, full, 0, len(reading), context, weights)
    terms = search_terms(scorer, extended, 0, len(reading), context, weights, base_terms)
    assert np.array_equal(terms.words, full_terms.words)
    assert np.array_equal(terms.extra_cost, full_terms.extra_cost)
    pairs = set(zip(*(part.tolist() for part in terms.pairs)))
    assert pairs == set(zip(*(part.tolist() for part in full_terms.pairs)))
    assert len(pairs) == terms.pairs[0].size and terms.into_end == full_terms.into_end
    for base_args, args, full_args in ((base_terms.space_args(), terms.space_args(), full_terms.space_args()),
                                       ({}, {}, {})):
        shorter = SearchSpace(base, system, 0, k, **base_args)
        list(shorter.paths(100))   # its predecessor lists are worked out and carried over
        reused = SearchSpace(extended, system, 0, len(reading), base=shorter, **args)
        rebuilt = SearchSpace(full, system, 0, len(reading), **full_args)
        assert np.array_equal(reused.alpha, rebuilt.alpha)
        assert list(reused.paths(300)) == list(rebuilt.paths(300))
        assert list(reused.paths(300, distinct=True)) == list(rebuilt.paths(300, distinct=True))


@SETTINGS
@given(reading=READINGS, context=st.sampled_from(["", "新聞の"]))
def test_typing_key_by_key_converts_as_the_whole_reading_does(converters, reading, context):
    typed, fresh = converters
    typed.clear_cache()
    fresh.clear_cache()
    for k in range(1, len(reading)):   # each key's analysis is the next one's base
        typed.live(ConversionRequest(reading[:k], left_context=context))
    request = ConversionRequest(reading, left_context=context)
    assert typed._analyse(request).lattice is not fresh._analyse(request).lattice
    assert [p.nodes for p in typed._analyse(request).ranked] == [p.nodes for p in fresh._analyse(request).ranked]
    assert typed.live(request) == fresh.live(request)
    assert typed.candidates(request, 8) == fresh.candidates(request, 8)
    assert ([s.candidates[:5] for s in typed.convert(request)]
            == [s.candidates[:5] for s in fresh.convert(request)])


def test_typing_extends_the_previous_keys_lattice(converters, monkeypatch):
    typed = converters[0]
    typed.clear_cache()
    extended = []
    extend = typed.builder.extend
    monkeypatch.setattr(typed.builder, "extend", lambda base, reading: extended.append(base.reading) or extend(base, reading))
    base = typed._analyse(ConversionRequest("かいぎの"))
    longer = typed._analyse(ConversionRequest("かいぎのしりょう"))
    assert extended == ["かいぎの"]
    assert np.array_equal(longer.lattice.cost[2:len(base.lattice)], base.lattice.cost[2:])
    assert np.array_equal(longer.space.alpha[2:len(base.lattice)], base.space.alpha[2:])
    # the longest analysed prefix is the base; another left context is another search
    typed._analyse(ConversionRequest("かいぎのしりょうを"))
    typed._analyse(ConversionRequest("かいぎのしりょうをおくります", left_context="昨日の"))
    assert extended == ["かいぎの", "かいぎのしりょう"]


def test_a_fixed_boundary_is_never_extended(converters):
    builder = converters[0].builder
    base = builder.build("かいぎの", cuts=[2])
    assert builder.extend(base, "かいぎのしりょう") is None
    assert builder.extend(builder.build("かいぎ"), "かいぎ") is None     # nothing added
    assert builder.extend(builder.build("かいぎ"), "しりょう") is None   # not a continuation
