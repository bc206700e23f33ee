"""Interpolated modified Kneser-Ney over integer word ids, counted with numpy, then pruned.

Input: word ids laid end to end with each sentence's length (flatten()) (ids < 2**16; UNK, BOS and EOS are word_ngram's). The
n-grams of each order are packed into int64 keys (16 bits per word) and counted with np.unique;
the lower orders use continuation counts (how many distinct words precede them), except the
n-grams starting with BOS, which nothing can precede (Chen & Goodman 1998, "An empirical study
of smoothing techniques for language modeling", sections 3 and 4.1.6; three discounts per
order from its count-of-counts).

The result is in backoff form, as an ARPA file is: the interpolated probability of every kept
n-gram, and for every kept context the backoff weight that makes the words it does not keep
sum, with the lower order's, to one. So pruning (the n-grams seen fewer than `min_counts`
times dropped) keeps a proper distribution: the backoff weights are computed after it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Sequence

import numpy as np

UNK, BOS, EOS = 0, 1, 2
BITS = 16
MASK = (1 << BITS) - 1


@dataclass
class Estimate:
    """Natural-log probabilities and backoffs, all in float64 (word_ngram quantises them).

    unigram_logp / unigram_backoff: per word id (BOS has no probability: -inf).
    keys[k], logp[k], backoff[k]: the kept n-grams of order k + 2 (sorted packed keys); a
    backoff is the weight of that n-gram as a context (0 where nothing of the next order is kept).
    """

    vocabulary: int
    unigram_logp: np.ndarray
    unigram_backoff: np.ndarray
    keys: list[np.ndarray]
    logp: list[np.ndarray]
    backoff: list[np.ndarray]

    def logp_of(self, keys: np.ndarray, n: int) -> np.ndarray:
        """log P of the last word of each packed n-gram under the pruned backoff model."""
        if n == 1:
            return self.unigram_logp[keys]
        table = self.keys[n - 2]
        out = np.empty(keys.size)
        hit = np.zeros(keys.size, dtype=bool)
        if table.size:
            at = np.minimum(np.searchsorted(table, keys), table.size - 1)
            hit = table[at] == keys
            out[hit] = self.logp[n - 2][at[hit]]
        miss = ~hit
        if miss.any():
            lower = keys[miss] & ((1 << (BITS * (n - 1))) - 1)
            out[miss] = self.backoff_of(keys[miss] >> BITS, n - 1) + self.logp_of(lower, n - 1)
        return out

    def backoff_of(self, contexts: np.ndarray, n: int) -> np.ndarray:
        """The backoff weight of each packed n-gram as a context (0 when it is not kept)."""
        if n == 1:
            return self.unigram_backoff[contexts]
        table = self.keys[n - 2]
        if table.size == 0:
            return np.zeros(contexts.size)
        at = np.minimum(np.searchsorted(table, contexts), table.size - 1)
        return np.where(table[at] == contexts, self.backoff[n - 2][at], 0.0)



def packed(flat: np.ndarray, lengths: np.ndarray, order: int) -> list[np.ndarray]:
    """All n-gram keys of orders 1..order (one entry per occurrence) of the sentences laid end
    to end in `flat` (lengths[i] words each, without BOS and EOS, which are added here)."""
    lengths = np.asarray(lengths, dtype=np.int64)
    sentence = np.repeat(np.arange(lengths.size), lengths + 2)
    words = np.empty(int(lengths.sum()) + 2 * lengths.size, dtype=np.int64)
    first = np.concatenate(([0], np.cumsum(lengths + 2)[:-1])) if lengths.size else np.zeros(0, np.int64)
    inside = np.ones(words.size, dtype=bool)
    inside[first] = False
    inside[first + lengths + 1] = False
    words[first] = BOS
    words[first + lengths + 1] = EOS
    words[inside] = flat
    out = []
    for n in range(1, order + 1):
        m = max(words.size - n + 1, 0)
        valid = sentence[:m] == sentence[n - 1:n - 1 + m]
        key = np.zeros(m, dtype=np.int64)
        for k in range(n):
            key = (key << BITS) | words[k:k + m]
        out.append(key[valid])
    return out


def flatten(sentences: Iterable[Sequence[int]]) -> tuple[np.ndarray, np.ndarray]:
    """Sentences as one array of ids and their lengths (what estimate() reads)."""
    ids = [np.asarray(s, dtype=np.int64) for s in sentences]
    flat = np.concatenate(ids) if ids else np.zeros(0, np.int64)
    return flat, np.array([s.size for s in ids], dtype=np.int64)


def discounts(counts: np.ndarray) -> np.ndarray:
    """D1, D2, D3+ from the count-of-counts (Chen & Goodman's estimates; 0.5, 1, 1.5 where a
    tiny corpus lacks the counts)."""
    n = [int(np.count_nonzero(counts == k)) for k in (1, 2, 3, 4)]
    if min(n) == 0:
        return np.array([0.5, 1.0, 1.5])
    y = n[0] / (n[0] + 2 * n[1])
    d = np.array([1 - 2 * y * n[1] / n[0], 2 - 3 * y * n[2] / n[1], 3 - 4 * y * n[3] / n[2]])
    return np.clip(d, 0.05, np.array([1.0, 2.0, 3.0]))


def _discounted(keys: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per n-gram: discounted count / context total; per n-gram: its context's interpolation
    weight gamma; and the context of each n-gram (key >> BITS)."""
    d = discounts(counts)
    context = keys >> BITS
    starts = np.flatnonzero(np.concatenate(([True], context[1:] != context[:-1])))
    group = np.cumsum(np.concatenate(([False], context[1:] != context[:-1])))
    totals = np.add.reduceat(counts, starts).astype(np.float64)
    discount = d[np.minimum(counts, 3) - 1]
    mass = np.add.reduceat(discount, starts)
    return (counts - discount) / totals[group], (mass / totals)[group], context


def estimate(flat: np.ndarray, lengths: np.ndarray, vocabulary: int, order: int = 3,
             min_counts: Sequence[int] = ()) -> Estimate:
    """The model of `order` over the sentences flatten() laid out, ids < vocabulary; min_counts[k]: the fewest times an n-gram of
    order k + 2 must be seen to be kept (raw counts; non-decreasing, so every kept n-gram's
    context is kept too)."""
    if vocabulary > MASK + 1:
        raise ValueError(f"at most {MASK + 1} word ids")
    occurrences = packed(flat, lengths, order)
    raw = [np.unique(k, return_counts=True) for k in occurrences]
    # continuation counts: distinct words before each (n-1)-gram, raw counts after BOS
    adjusted: list[tuple[np.ndarray, np.ndarray]] = []
    for n in range(1, order + 1):
        keys, counts = raw[n - 1]
        if n < order:
            suffixes = raw[n][0] & ((1 << (BITS * n)) - 1)
            cont_keys, cont = np.unique(suffixes, return_counts=True)
            at = np.minimum(np.searchsorted(cont_keys, keys), max(cont_keys.size - 1, 0))
            continued = (np.where(cont_keys[at] == keys, cont[at], 0) if cont_keys.size
                         else np.zeros(keys.size, dtype=np.int64))
            # nothing precedes BOS: the n-grams it starts keep their raw counts (orders >= 2)
            counts = np.where((keys >> (BITS * (n - 1)) == BOS) & (n > 1), counts, continued)
            keep = counts > 0
            keys, counts = keys[keep], counts[keep]
        adjusted.append((keys, counts))
    # unigrams: discounted continuation counts, interpolated with the uniform distribution over
    # every word but BOS
    uni_keys, uni_counts = adjusted[0]
    predictable = vocabulary - 1
    d = discounts(uni_counts)
    discount = d[np.minimum(uni_counts, 3) - 1]
    total = float(uni_counts.sum())
    p1 = np.full(vocabulary, discount.sum() / total / predictable if total else 1.0 / predictable)
    if total:
        p1[uni_keys] += (uni_counts - discount) / total
    p1[BOS] = 0.0
    with np.errstate(divide="ignore"):
        unigram_logp = np.log(p1)
    # interpolated probabilities of every (unpruned) n-gram, order by order
    full = [None, p1]        # full[n]: probabilities of adjusted[n-1]'s keys (n >= 2)
    for n in range(2, order + 1):
        keys, counts = adjusted[n - 1]
        if keys.size == 0:
            full.append(np.zeros(0))
            continue
        disc, gamma, _ = _discounted(keys, counts)
        lower = _lookup_full(full, adjusted, keys & ((1 << (BITS * (n - 1))) - 1), n - 1)
        full.append(disc + gamma * lower)
    # prune by raw counts, then the backoff weights of the pruned model
    kept_keys, kept_logp = [], []
    for n in range(2, order + 1):
        keys = adjusted[n - 1][0]
        raw_keys, raw_counts = raw[n - 1]
        threshold = min_counts[n - 2] if len(min_counts) > n - 2 else 1
        at = np.searchsorted(raw_keys, keys)
        keep = raw_counts[at] >= threshold
        kept_keys.append(keys[keep])
        kept_logp.append(np.log(full[n][keep]))
    unigram_backoff = np.zeros(vocabulary)
    backoffs: list[np.ndarray] = [np.zeros(k.size) for k in kept_keys]
    model = Estimate(vocabulary, unigram_logp, unigram_backoff, kept_keys, kept_logp, backoffs)
    for n in range(2, order + 1):
        keys = kept_keys[n - 2]
        if keys.size == 0:
            continue
        contexts, group = np.unique(keys >> BITS, return_inverse=True)
        kept_mass = np.bincount(group, weights=np.exp(kept_logp[n - 2]))
        lower = np.exp(model.logp_of(keys & ((1 << (BITS * (n - 1))) - 1), n - 1))
        lower_mass = np.bincount(group, weights=lower)
        weight = np.log(np.maximum(1 - kept_mass, 1e-12)) - np.log(np.maximum(1 - lower_mass, 1e-12))
        if n == 2:
            unigram_backoff[contexts] = weight
        else:
            target = model.keys[n - 3]
            backoffs[n - 3][np.searchsorted(target, contexts)] = weight
    return model


def _lookup_full(full: list, adjusted: list, keys: np.ndarray, n: int) -> np.ndarray:
    if n == 1:
        return full[1][keys]
    return full[n][np.searchsorted(adjusted[n - 1][0], keys)]


def pack(words: Sequence[int]) -> int:
    key = 0
    for w in words:
        key = (key << BITS) | int(w)
    return key
