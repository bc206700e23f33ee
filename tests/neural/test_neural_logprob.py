"""Log-softmax and top-k (pure)."""

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from karukan_engine.neural.logprob import argmax_logprob, log_softmax, log_softmax_rows, top_k, top_k_rows

finite = st.floats(min_value=-30, max_value=30, allow_nan=False, width=32)


@given(arrays(np.float32, st.integers(1, 40), elements=finite))
def test_log_softmax_sums_to_one(x):
    lp = log_softmax(x)
    assert abs(np.exp(lp).sum() - 1.0) < 1e-9
    assert np.all(lp <= 1e-12)


@given(arrays(np.float32, st.integers(1, 30), elements=st.sampled_from([0.0, 1.0, 2.5, -1.0])), st.integers(0, 35))
def test_top_k_is_sorted_by_value_then_id(x, k):
    lp = log_softmax(x)
    got = top_k(lp, k)
    expected = sorted(range(len(lp)), key=lambda t: (-lp[t], t))[: min(k, len(lp))]
    assert [t for t, _ in got] == expected


@given(
    st.integers(1, 5).flatmap(
        lambda n: arrays(np.float32, st.tuples(st.just(n), st.integers(1, 25)), elements=st.sampled_from([0.0, 0.5, 3.0, -2.0]))
    ),
    st.integers(1, 30),
)
def test_top_k_rows_matches_single_row(x, k):
    lps = log_softmax_rows(x)
    ids, vals = top_k_rows(lps, k)
    for r in range(x.shape[0]):
        single = top_k(lps[r], k)
        assert ids[r].tolist() == [t for t, _ in single]
        assert np.allclose(vals[r], [v for _, v in single])


def test_rows_agree_with_float64_reference():
    x = np.random.default_rng(0).standard_normal((3, 500)).astype(np.float32) * 5
    assert np.allclose(log_softmax_rows(x), log_softmax(x), atol=1e-5)


@given(arrays(np.float32, st.integers(1, 40), elements=finite))
def test_argmax_logprob_matches_log_softmax(x):
    token, lp = argmax_logprob(x)
    full = log_softmax(x)
    assert token == int(np.argmax(x))
    assert abs(lp - full[token]) < 1e-5


def test_argmax_prefers_lower_id_on_ties():
    assert argmax_logprob(np.array([1.0, 3.0, 3.0], dtype=np.float32))[0] == 1
