"""The word n-gram: interpolated modified Kneser-Ney (lm/kneser_ney.py) and its quantised,
memory-mapped file (lm/word_ngram.py), built from each test's own tiny corpora."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from karukan_engine.lm.kneser_ney import BOS, EOS, UNK, estimate, flatten, pack
from karukan_engine.lm.word_ngram import WordNgram, WordNgramError, quantise

corpora = st.lists(st.lists(st.integers(3, 9), max_size=7), min_size=1, max_size=40)
VOCABULARY = 10


def _distribution(model, context: tuple[int, ...]) -> float:
    """Sum over every word but BOS (UNK and EOS included) of P(word | context)."""
    words = [w for w in range(VOCABULARY) if w != BOS]
    n = len(context) + 1
    keys = np.array([pack((*context, w)) for w in words], dtype=np.int64)
    return float(np.exp(model.logp_of(keys, n)).sum())


@settings(max_examples=80, deadline=None)
@given(sentences=corpora, min2=st.integers(1, 3), extra=st.integers(0, 2), data=st.data())
def test_every_context_is_a_distribution_pruned_or_not(sentences, min2, extra, data):
    model = estimate(*flatten(sentences), VOCABULARY, order=3, min_counts=(min2, min2 + extra))
    seen = [w for s in sentences for w in s] or [3]
    u, v = data.draw(st.sampled_from([BOS, *seen])), data.draw(st.sampled_from(seen))
    for context in ((), (v,), (u, v), (UNK,), (UNK, v)):
        assert _distribution(model, context) == pytest.approx(1.0, abs=1e-9)
    assert all(lp <= 1e-12 for keys in model.logp for lp in keys)


@settings(max_examples=80, deadline=None)
@given(values=st.lists(st.floats(-30, 5, allow_nan=False), max_size=300))
def test_quantised_values_are_within_half_a_step(values):
    codes, low, step = quantise(np.array(values))
    if values:
        back = low + step * codes.astype(np.float64)
        assert np.all(np.abs(back - np.array(values)) <= step / 2 + 1e-9)
        assert step <= max(1e-12, (max(values) - min(values)) / 255) or max(values) == min(values)


def _tiny(tmp_path, sentences, words, min_counts=(1, 1)):
    model = estimate(*flatten(sentences), len(words) + EOS + 1, order=3, min_counts=min_counts)
    path = tmp_path / "tiny.npz"
    WordNgram.save(path, model, words)
    return model, WordNgram.load(path)


WORDS = ["会議\tかいぎ", "の\tの", "資料\tしりょう", "を\tを", "送る\tおくる", "快技\tかいぎ"]
# ids: 会議 3, の 4, 資料 5, を 6, 送る 7, 快技 8
TEXT = [[3, 4, 5, 6, 7]] * 20 + [[5, 6, 7]] * 5 + [[8, 4]]


def test_the_file_maps_its_arrays_and_matches_the_estimate(tmp_path):
    exact, stored = _tiny(tmp_path, TEXT, WORDS)
    assert isinstance(stored.keys[0].base, np.memmap) and stored.order == 3
    # mapped in place and aligned (numpy copies an unaligned table on every search)
    assert all(keys.flags.aligned and keys.ctypes.data % 64 == 0 for keys in stored.keys)
    with np.load(tmp_path / "tiny.npz") as plain:   # still an ordinary .npz
        assert np.array_equal(plain["keys3"], stored.keys[1])
    assert stored.word_id("会議", "かいぎ") == 3 and stored.word_id("会議", "かいき") == UNK
    assert stored.surface_id("資料") == 5 and stored.surface_id("無い") == UNK
    steps = [stored._logp_scale[0][1], stored._logp_scale[1][1], stored._backoff_scale[0][1]]
    for context in ((BOS,), (3,), (BOS, 3), (3, 4), (8,)):
        for word in range(len(stored)):
            if word == BOS:
                continue
            key = np.array([pack((*context, word))])
            n = len(context) + 1
            # one rounding per stored n-gram or backoff on the way down
            assert abs(stored.logp_packed(key, n)[0] - exact.logp_of(key, n)[0]) <= sum(steps) / 2 + 1e-6
    # the common spelling is the likelier after BOS and before の
    assert stored.sentence_logp([3, 4]) > stored.sentence_logp([8, 4])
    hit, logp = stored.bigram_hits(np.array([3, 8, 7]), np.array([4, 4, 3]))
    assert hit.tolist() == [True, True, False] and logp[0] > math.log(0.5)


def test_a_damaged_or_missing_file_is_a_word_ngram_error(tmp_path):
    with pytest.raises(WordNgramError):
        WordNgram.load(tmp_path / "missing.npz")
    bad = tmp_path / "bad.npz"
    bad.write_bytes(b"PK\x03\x04 not a zip")
    with pytest.raises(WordNgramError):
        WordNgram.load(bad)


def test_pruning_drops_rare_ngrams_but_keeps_their_contexts(tmp_path):
    exact, stored = _tiny(tmp_path, TEXT, WORDS, min_counts=(2, 3))
    kept = set(exact.keys[0].tolist())
    assert pack((8, 4)) not in kept and pack((3, 4)) in kept
    assert all((key >> 16) in kept for key in exact.keys[1].tolist())
