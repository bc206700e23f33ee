"""The word n-gram inside the lattice search: what each word and each pair of words costs.

A path's cost becomes its dictionary cost plus `weight` cost units per nat of the word bigram's
-log P of its words, each after the one before (the first after the end of the left context).
The bigram's backoff form splits that into terms the Viterbi can add without tracking more
state: every word pays -log P_unigram(w) - log backoff(w) on its node (the backoff is what the
next word pays when the pair is unseen), and each pair the model keeps gets the difference on
its transition, a bonus (clipped at 0, so the search's cheapest-arrival grouping stays exact).
A word the model lacks (a Mozc compound UniDic cuts, a user word) pays `unknown` nats and
leaves the dictionary's connection cost to judge it: the dictionary is the backoff.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import numpy as np

from karukan_engine.dictionary.format import SURFACE_IS_KATAKANA, SURFACE_IS_READING
from karukan_engine.dictionary.system import SystemDictionary
from karukan_engine.kana import to_hiragana, to_katakana
from karukan_engine.lattice.lattice import Lattice
from karukan_engine.lattice.search import BOS, EOS
from karukan_engine.lm.word_ngram import BOS as WORD_BOS
from karukan_engine.lm.word_ngram import UNK, WordNgram

SENTENCE_ENDS = set("。．.！!？?\n「『（(【[")
MAX_CONTEXT_WORD = 8


@dataclass(frozen=True)
class WordLmWeights:
    """`weight` cost units per nat of the word bigram (0: not used) and the nats a word it does
    not know pays. Fitted by tools/lattice_lm_fit.py (docs/benchmarks.md)."""

    weight: float = 0.0
    unknown: float = 12.0

    def __post_init__(self) -> None:
        if not self.weight >= 0 or not self.unknown >= 0:
            raise ValueError("word language-model weights must be non-negative")


class WordScorer:
    """A word n-gram bound to one system dictionary: each entry's word id, found once."""

    def __init__(self, model: WordNgram, dictionary: SystemDictionary) -> None:
        self.model = model
        self.dictionary = dictionary
        self.entry_word = self._entry_words()
        self._lock = threading.Lock()

    def _entry_words(self) -> np.ndarray:
        """Word id of every dictionary entry: the word whose surface and reading it spells."""
        d = self.dictionary
        out = np.zeros(d.lid.size, dtype=np.int32)   # UNK
        for word_id, word in enumerate(self.model.words[WORD_BOS + 2:], WORD_BOS + 2):
            surface, _, reading = word.partition("\t")
            span = d.key_range(reading)
            if span is None:
                continue
            if surface == reading:
                code = SURFACE_IS_READING
            elif surface == to_katakana(reading):
                code = SURFACE_IS_KATAKANA
            else:
                code = d.surface_id_of(surface)
                if code is None:
                    continue
            a, b = span
            hits = np.flatnonzero(d.surface_ids[a:b] == code) + a
            out[hits[out[hits] == UNK]] = word_id
        return out

    def node_words(self, lattice: Lattice) -> np.ndarray:
        """Word id of each lattice node (UNK where unknown; BOS/EOS nodes UNK too)."""
        entry = lattice.entry
        words = np.where(entry >= 0, self.entry_word[np.maximum(entry, 0)], UNK).astype(np.int64)
        for node in np.flatnonzero(entry < 0)[2:].tolist():   # user, learned and fallback words
            words[node] = self.model.word_id(lattice.surface(node), to_hiragana(lattice.node_reading(node)))
        words[[BOS, EOS]] = UNK
        return words

    def context_word(self, context: str) -> int:
        """The word the left context ends with: BOS after a sentence end (or none), the longest
        known surface among its last characters, else UNK (nothing known: unigram)."""
        context = context.rstrip(" \t\u3000")
        if not context or context[-1] in SENTENCE_ENDS:
            return WORD_BOS
        tail = context[-MAX_CONTEXT_WORD:]
        for length in range(len(tail), 0, -1):
            word = self.model.surface_id(tail[-length:])
            if word != UNK:
                return word
        return UNK


def search_terms(scorer: WordScorer, lattice: Lattice, lo: int, hi: int, context: str,
                 weights: WordLmWeights) -> tuple[np.ndarray, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """SearchSpace's extra_cost and pairs for the span [lo, hi) of a lattice."""
    model, scale = scorer.model, weights.weight
    words = scorer.node_words(lattice)
    known = words != UNK
    uni = -model.unigram_logp[words].astype(np.float64)
    backoff = -model.unigram_backoff[words].astype(np.float64)
    nats = np.where(known, uni + backoff, weights.unknown)
    nats[[BOS, EOS]] = 0.0
    first_word = scorer.context_word(context)
    start, end = lattice.start, lattice.end
    inside = (start >= lo) & (end <= hi)
    inside[[BOS, EOS]] = False
    # the first word pays for following the context's word when the pair is unseen
    first = inside & (start == lo)
    first_backoff = -float(model.unigram_backoff[first_word]) if first_word != UNK else 0.0
    nats[first] += first_backoff
    prev_all, cur_all, bonus_all = [], [], []
    members = np.flatnonzero(inside & known)
    for position in range(lo, hi + 1):
        if position == lo:
            prev = np.array([BOS]) if first_word != UNK else np.zeros(0, dtype=np.int64)
            prev_words = np.array([first_word])
            prev_backoff = np.array([first_backoff])
        else:
            prev = members[end[members] == position]
            prev_words, prev_backoff = words[prev], backoff[prev]
        if prev.size == 0:
            continue
        if position == hi:
            # the reading need not end a sentence: the last word's backoff is given back
            refund = np.minimum(-prev_backoff, 0.0) if position != lo else np.zeros(0)
            if refund.size:
                prev_all.append(prev)
                cur_all.append(np.full(prev.size, EOS))
                bonus_all.append(refund)
            continue
        cur = members[start[members] == position]
        if cur.size == 0:
            continue
        p_index = np.repeat(np.arange(prev.size), cur.size)
        c_index = np.tile(np.arange(cur.size), prev.size)
        hit, logp = model.bigram_hits(prev_words[p_index], words[cur][c_index])
        if not hit.any():
            continue
        p_index, c_index, logp = p_index[hit], c_index[hit], logp[hit]
        # kept pair: -log P(cur | prev) instead of the unigram + backoff the nodes already pay
        delta = -logp - (uni[cur][c_index] + prev_backoff[p_index])
        keep = delta < 0
        prev_all.append(prev[p_index[keep]])
        cur_all.append(cur[c_index[keep]])
        bonus_all.append(delta[keep])
    extra = np.rint(scale * nats).astype(np.int64)
    if not prev_all:
        empty = np.zeros(0, dtype=np.int64)
        return extra, (empty, empty, empty)
    pairs = (np.concatenate(prev_all).astype(np.int64), np.concatenate(cur_all).astype(np.int64),
             np.minimum(np.rint(scale * np.concatenate(bonus_all)), 0).astype(np.int64))
    return extra, pairs


def space_terms(scorer: WordScorer | None, lattice: Lattice, context: str, weights: WordLmWeights) -> dict:
    """SearchSpace keyword arguments for a whole reading ({} without a scorer or weight)."""
    if scorer is None or weights.weight <= 0:
        return {}
    extra, pairs = search_terms(scorer, lattice, 0, len(lattice.reading), context, weights)
    return {"extra_cost": extra, "pairs": pairs}
