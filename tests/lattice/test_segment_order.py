"""Compositions the word n-gram never saw leave a segment's list (lattice/segment_order.py), with
tiny word models counted from the test's own sentences over the bundled dictionary."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from karukan_engine.core.types import ConversionRequest
from karukan_engine.dictionary.system import DEFAULT_DIR, SystemDictionary
from karukan_engine.kana import to_katakana
from karukan_engine.lattice.converter import LatticeConverter
from karukan_engine.lattice.segment_order import seen_together, split_compositions
from karukan_engine.lattice.word_lm import WordScorer
from karukan_engine.core.types import Candidate
from karukan_engine.lm.kneser_ney import BOS, estimate, flatten
from karukan_engine.lm.word_ngram import WordNgram

pytestmark = pytest.mark.skipif(not (DEFAULT_DIR / "meta.json").is_file(), reason="dictionary not built")

WORDS = ["会議\tかいぎ", "懐疑\tかいぎ", "の\tの", "回\tかい", "技\tぎ", "階\tかい", "過\tか", "意義\tいぎ", "資料\tしりょう"]


def model_of(tmp_path, sentences: list[list[str]]) -> WordNgram:
    ids = {word.split("\t")[0]: i for i, word in enumerate(WORDS, BOS + 2)}
    counts = estimate(*flatten([[ids[w] for w in s] for s in sentences]), len(WORDS) + BOS + 2, order=3)
    path = tmp_path / "words.npz"
    WordNgram.save(path, counts, WORDS)
    return WordNgram.load(path)


# 回 and 技 were seen side by side; 階 + 技 and 過 + 意義 never were
TEXT = [["会議", "の", "資料"]] * 20 + [["懐疑", "の"]] * 5 + [["回", "技", "の"]] * 5 + [["階"], ["過"], ["意義"], ["技"]] * 5


@pytest.fixture(scope="module")
def system():
    return SystemDictionary()


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    return model_of(tmp_path_factory.mktemp("segorder"), TEXT)


class Unfiltered(LatticeConverter):
    """The same converter with today's segment lists (no word n-gram judging compositions)."""

    def _segment_lm(self):
        return None


def converters(system, model):
    scorer = WordScorer(model, system)
    return LatticeConverter(system, None, None, word_lm=lambda: scorer), Unfiltered(system, None, None, word_lm=lambda: scorer)


def segment_lists(converter, reading):
    return [[c.surface for c in s.candidates] for s in converter.convert(ConversionRequest(reading))]


def test_unseen_compositions_leave_the_list_and_seen_ones_stay(system, model):
    filtered, plain = converters(system, model)
    before, = segment_lists(plain, "かいぎの")
    after, = segment_lists(filtered, "かいぎの")
    assert {"階技の", "過意義の"} <= set(before)   # today's list has the word salad
    assert after[0] == before[0] == "会議の"
    assert "階技の" not in after and "過意義の" not in after
    assert "回技の" in after                         # its words were seen together
    assert {"懐疑の", "かいぎの", "カイギノ"} <= set(after[:9])
    assert [s for s in before if s in after] == after   # nothing added, nothing reordered


def test_seen_together_needs_every_word_known_and_every_pair_kept(model):
    assert seen_together(model, [("会議", "かいぎ"), ("の", "の")])
    assert seen_together(model, [("回", "かい"), ("技", "ぎ"), ("の", "の")])
    assert not seen_together(model, [("階", "かい"), ("技", "ぎ")])
    assert not seen_together(model, [("過", "か"), ("意義", "いぎ"), ("の", "の")])
    assert not seen_together(model, [("快技", "かいぎ")])   # not in the model
    assert seen_together(model, [("会議", "かいぎ")])


VOCABULARY = [tuple(w.split("\t")) for w in WORDS] + [("快", "かい")]


@given(st.lists(st.lists(st.sampled_from(VOCABULARY), min_size=1, max_size=4), max_size=8), st.booleans())
def test_split_compositions_is_an_order_keeping_partition(model, spellings, with_model):
    candidates = [Candidate("".join(s for s, _ in w) + str(i), "") for i, w in enumerate(spellings)]
    kept, left_out = split_compositions(candidates, spellings, model if with_model else None)
    assert sorted(kept + left_out, key=candidates.index) == candidates
    assert [c for c in candidates if c in kept] == kept and [c for c in candidates if c in left_out] == left_out
    if not with_model:
        assert kept == candidates
    else:
        assert all(seen_together(model, spellings[candidates.index(c)]) for c in kept)
        assert not any(seen_together(model, spellings[candidates.index(c)]) for c in left_out)


@settings(max_examples=30, deadline=None)
@given(st.text(alphabet="かいぎのしりょうあめはでが", min_size=1, max_size=7))
def test_first_candidate_and_kana_stay_and_only_compositions_leave(system, model, reading):
    filtered, plain = converters(system, model)
    before, after = segment_lists(plain, reading), segment_lists(filtered, reading)
    assert [s.reading for s in filtered.convert(ConversionRequest(reading))] == \
        [s.reading for s in plain.convert(ConversionRequest(reading))]
    for segment, old, new in zip(filtered.convert(ConversionRequest(reading)), before, after):
        assert new[0] == old[0]
        assert len(new) == len(set(new))
        assert [s for s in old if s in new] == new   # a subsequence: nothing added or reordered
        for form in (segment.reading, to_katakana(segment.reading)):
            assert (form in new) == (form in old)
        # what left is a spelling with at least two words, one of them after the first in kanji
        assert all(len(s) > 1 and s not in (segment.reading, to_katakana(segment.reading)) for s in old if s not in new)
