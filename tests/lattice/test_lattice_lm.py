"""The language model inside the lattice converter (karukan_engine/lattice/lm_paths.py): the
dictionary's distinct paths judged by cost + weight * -log P, with a real character n-gram
counted from the test's own text (tests never read the corpus)."""

from __future__ import annotations

import hashlib
import math

import pytest
from hypothesis import given, settings, strategies as st

from karukan_engine.core.types import ConversionRequest
from karukan_engine.dictionary.system import DEFAULT_DIR, SystemDictionary
from karukan_engine.lattice.converter import LatticeConverter
from karukan_engine.lattice.lm_paths import LmWeights, distinct_paths, ranked_paths
from karukan_engine.lattice.search import SearchSpace
from karukan_engine.lm.char_ngram import CharNgram

pytestmark = pytest.mark.skipif(not (DEFAULT_DIR / "meta.json").is_file(), reason="dictionary not built")


@pytest.fixture(scope="module")
def system():
    return SystemDictionary()


def ngram_of(*sentences: str, times: int = 30) -> CharNgram:
    return CharNgram.count(list(sentences) * times)


class HashScorer:
    """A log P per (text, context) that is arbitrary but fixed: any ranking may come out."""

    def __init__(self, salt: int) -> None:
        self.salt = salt
        self.calls: list[list[tuple[str, str]]] = []

    def score_many(self, pairs, open_start=False):
        self.calls.append(list(pairs))
        return [-(hashlib.sha1(f"{self.salt}:{t}:{c}:{open_start}".encode()).digest()[0] / 16.0) for t, c in pairs]


READINGS = st.text(alphabet="かきくけこしのはをにいうがたてで", min_size=1, max_size=8)


@settings(max_examples=40)
@given(reading=READINGS, salt=st.integers(0, 1000), weight=st.floats(0, 2000), paths=st.integers(1, 12),
       context=st.text(alphabet="今日は銀行の", max_size=12), share=st.sampled_from([0.0, 0.4, 1.0]))
def test_ranked_paths_are_the_distinct_paths_in_score_order(system, reading, salt, weight, paths, context, share):
    converter = LatticeConverter(system, None, None)
    analysis = converter._analyse(ConversionRequest(reading))
    scorer = HashScorer(salt)
    weights = LmWeights(weight=weight, paths=paths, context_chars=4)
    ranked = ranked_paths(analysis.lattice, analysis.space, scorer, context, weights, open_start=share)
    found = distinct_paths(analysis.lattice, analysis.space, paths if weight > 0 else 1)
    assert sorted(p.surface for p in ranked) == sorted(s for _, s, _ in found)
    assert len({p.surface for p in ranked}) == len(ranked)
    assert [p.score for p in ranked] == sorted(p.score for p in ranked)
    if weight == 0 or len(found) < 2:
        assert not scorer.calls and [p.surface for p in ranked] == [found[0][1]]
    else:   # the scorer saw every surface after the context's last characters, once (twice: open start)
        pairs = [(s, context[-4:]) for _, s, _ in found]
        assert scorer.calls == [pairs] * (2 if share else 1)
        anchored, unanchored = scorer.score_many(pairs), scorer.score_many(pairs, open_start=True)
        # an open start: P is (1 - share) P(after a sentence start) + share P(anywhere)
        mixed = [math.log((1 - share) * math.exp(a) + share * math.exp(u)) for a, u in zip(anchored, unanchored)]
        logs = dict(zip((s for _, s, _ in found), mixed))
        for p in ranked:
            assert p.score == pytest.approx(p.cost - weight * logs[p.surface])
    for p in ranked:   # every path is the lattice's own and costs what the search says
        assert "".join(analysis.lattice.surface(n) for n in p.nodes) == p.surface
        assert analysis.space.path_cost(list(p.nodes)) == p.cost


def test_no_scorer_or_no_weight_is_the_dictionary_alone(system):
    plain = LatticeConverter(system, None, None)
    lm = ngram_of("有志の会に入る")
    silent = LatticeConverter(system, None, None, lm=lambda: lm, lm_weights=LmWeights(weight=0))
    loading = LatticeConverter(system, None, None, lm=lambda: None)
    for reading in ("ゆうし", "きかいをつかう", "かいぎのしりょう"):
        request = ConversionRequest(reading)
        expected = plain.candidates(request, 5)
        assert silent.candidates(request, 5) == expected == loading.candidates(request, 5)


def test_the_text_the_ngram_knows_wins_in_every_view(system):
    reading = "ゆうし"
    dictionary_first = LatticeConverter(system, None, None).live(ConversionRequest(reading))
    other = "有志" if dictionary_first != "有志" else "融資"
    lm = ngram_of(f"私たちは{other}です", f"{other}が集まる")
    converter = LatticeConverter(system, None, None, lm=lambda: lm)
    request = ConversionRequest(reading)
    assert converter.live(request) == other
    assert converter.candidates(request, 5)[0].surface == other
    assert converter.convert(request)[0].candidates[0].surface == other
    assert dictionary_first in [c.surface for c in converter.candidates(request, 5)]   # still offered


def test_left_context_steers_the_choice(system):
    lm = ngram_of("銀行の融資を受ける", "有志の会が開かれる")
    converter = LatticeConverter(system, None, None, lm=lambda: lm)
    assert converter.live(ConversionRequest("ゆうし", left_context="銀行の")) == "融資"
    assert converter.live(ConversionRequest("ゆうしのかい")) == "有志の会"


def test_the_model_arriving_later_is_used_at_once(system):
    """While the n-gram loads the dictionary answers; the cached analysis of that time is not
    reused once it has loaded."""
    lm = ngram_of("有志が集まる", "有志の会")
    state = {"lm": None}
    converter = LatticeConverter(system, None, None, lm=lambda: state["lm"])
    plain = LatticeConverter(system, None, None)
    request = ConversionRequest("ゆうし")
    assert converter.live(request) == plain.live(request)
    state["lm"] = lm
    assert converter.live(request) == "有志"


def test_weights_are_checked():
    with pytest.raises(ValueError):
        LmWeights(weight=-1)
    with pytest.raises(ValueError):
        LmWeights(paths=0)
    with pytest.raises(ValueError):
        LmWeights(weight=float("nan"))


def test_an_unreachable_lattice_has_no_paths(system):
    converter = LatticeConverter(system, None, None)
    analysis = converter._analyse(ConversionRequest("か"))
    space = SearchSpace(analysis.lattice, system, 0, 1, eos_lid=0, inside_segment=True)
    ranked = ranked_paths(analysis.lattice, space, HashScorer(1), "", LmWeights())
    assert all(p.surface for p in ranked)
