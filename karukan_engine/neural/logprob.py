"""Log-softmax and top-k over one row of logits (ties go to the lower token id)."""

from __future__ import annotations

import numpy as np


def log_softmax(logits: np.ndarray) -> np.ndarray:
    """log p over the last axis, computed in float64 for stable sums across steps."""
    x = np.asarray(logits, dtype=np.float64)
    top = np.max(x, axis=-1, keepdims=True)
    return x - (top + np.log(np.sum(np.exp(x - top), axis=-1, keepdims=True)))


def top_k(logprobs: np.ndarray, k: int) -> list[tuple[int, float]]:
    """The k best (token id, log p), best first; equal values ordered by token id."""
    n = logprobs.shape[-1]
    k = max(0, min(k, n))
    if k == 0:
        return []
    if k < n:
        # argpartition may cut through a tie at the k-th value: take every id tied with it.
        kth = np.partition(logprobs, n - k)[n - k]
        ids = np.flatnonzero(logprobs >= kth)
    else:
        ids = np.arange(n)
    order = np.lexsort((ids, -logprobs[ids]))[:k]
    chosen = ids[order]
    return [(int(t), float(logprobs[t])) for t in chosen]


def argmax_logprob(logits: np.ndarray) -> tuple[int, float]:
    """Greedy choice: the best token (lowest id on ties) and its log p.

    log p(best) = best - (best + log sum exp(x - best)) = -log sum exp(x - best): one float32
    exp pass with a float64 sum, no full log-softmax (this runs once per generated token)."""
    x = np.asarray(logits, dtype=np.float32)
    token = int(np.argmax(x))  # numpy returns the first maximum = the lowest id
    total = np.sum(np.exp(x - x[token]), dtype=np.float64)
    return token, float(-np.log(total))


def log_normalizers(logits: np.ndarray) -> np.ndarray:
    """Per row log sum exp (float64), computed with one float32 exp pass."""
    x = np.asarray(logits, dtype=np.float32)
    top = np.max(x, axis=1, keepdims=True)
    total = np.sum(np.exp(x - top), axis=1, keepdims=True, dtype=np.float64)
    return top.astype(np.float64) + np.log(total)


def log_softmax_rows(logits: np.ndarray) -> np.ndarray:
    """Row-wise log-softmax of a 2-D array (float64 result; see log_normalizers)."""
    x = np.asarray(logits, dtype=np.float32)
    return x.astype(np.float64) - log_normalizers(x)


def top_k_rows(logprobs: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Per row the k best ids and values, best first, ties to the lower id: shapes (n, k)."""
    n, v = logprobs.shape
    k = max(0, min(k, v))
    if k == 0:
        return np.zeros((n, 0), dtype=np.int64), np.zeros((n, 0))
    kth = np.partition(logprobs, v - k, axis=1)[:, v - k] if k < v else logprobs.min(axis=1)
    rows, cols = np.nonzero(logprobs >= kth[:, None])  # >= k per row (more on boundary ties)
    vals = logprobs[rows, cols]
    order = np.lexsort((cols, -vals, rows))
    rows, cols, vals = rows[order], cols[order], vals[order]
    starts = np.searchsorted(rows, np.arange(n))
    rank = np.arange(len(rows)) - starts[rows]
    keep = rank < k
    return cols[keep].reshape(n, k), vals[keep].reshape(n, k)
