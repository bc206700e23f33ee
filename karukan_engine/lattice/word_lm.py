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

import logging
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from karukan_engine.dictionary.format import SURFACE_IS_KATAKANA, SURFACE_IS_READING
from karukan_engine.dictionary.system import SystemDictionary
from karukan_engine.kana import to_hiragana, to_katakana
from karukan_engine.lattice.lattice import Lattice
from karukan_engine.lattice.search import BOS, EOS
from karukan_engine.lm.word_ngram import BOS as WORD_BOS
from karukan_engine.lm.word_ngram import BUNDLED, UNK, WordNgram

log = logging.getLogger(__name__)

SENTENCE_ENDS = set("。．.！!？?\n「『（(【[")
MAX_CONTEXT_WORD = 8


@dataclass(frozen=True)
class WordLmWeights:
    """`weight` cost units per nat of the word bigram (0: not used) and the nats a word it does
    not know pays. Fitted by tools/lattice_lm_fit.py (docs/benchmarks.md)."""

    weight: float = 0.0
    unknown: float = 12.0
    # share of `weight` per nat the trigram's correction of the bigram gets when the first
    # distinct paths are judged (lattice/lm_paths.py; 0: the bigram of the search alone)
    trigram: float = 0.0

    def __post_init__(self) -> None:
        if not self.weight >= 0 or not self.unknown >= 0 or not self.trigram >= 0:
            raise ValueError("word language-model weights must be non-negative")


class WordScorer:
    """A word n-gram bound to one system dictionary: each entry's word id, found once."""

    def __init__(self, model: WordNgram, dictionary: SystemDictionary) -> None:
        self.model = model
        self.dictionary = dictionary
        self.entry_word = self._entry_words()
        model.word_id("", "")   # build the lookup tables now, not on a key
        model.surface_id("")

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
    # per position: the nodes on each side and their distinct words; every pair of words of all
    # positions is then looked up at once (one sorted search), and the hits spread to the nodes
    sides, queries = [], []
    for position in range(lo, hi + 1):
        if position == lo:
            prev = np.array([BOS]) if first_word != UNK else np.zeros(0, dtype=np.int64)
            prev_words, prev_backoff = np.array([first_word]), np.array([first_backoff])
        else:
            prev = members[end[members] == position]
            prev_words, prev_backoff = words[prev], backoff[prev]
        if prev.size == 0:
            continue
        if position == hi:
            # the reading need not end a sentence: the last word's backoff is given back
            if position != lo:
                prev_all.append(prev)
                cur_all.append(np.full(prev.size, EOS))
                bonus_all.append(np.minimum(-prev_backoff, 0.0))
            continue
        cur = members[start[members] == position]
        if cur.size == 0:
            continue
        left, right = np.unique(prev_words), np.unique(words[cur])
        sides.append((prev, prev_words, prev_backoff, cur, left, right))
        queries.append(((left[:, None] << 16) | right[None, :]).ravel())
    if queries:
        keys, inverse = np.unique(np.concatenate(queries), return_inverse=True)
        hit, logp = model.bigram_hits(keys >> 16, keys & 0xFFFF)
        hit, logp = hit[inverse], logp[inverse]
        offset = 0
        for (prev, prev_words, prev_backoff, cur, left, right), query in zip(sides, queries):
            grid_hit = hit[offset:offset + query.size].reshape(left.size, right.size)
            grid_logp = logp[offset:offset + query.size].reshape(left.size, right.size)
            offset += query.size
            if not grid_hit.any():
                continue
            li, ri = np.searchsorted(left, prev_words), np.searchsorted(right, words[cur])
            p_index, c_index = np.nonzero(grid_hit[li[:, None], ri[None, :]])
            # kept pair: -log P(cur | prev) instead of the unigram + backoff the nodes already pay
            delta = -grid_logp[li[p_index], ri[c_index]] - (uni[cur][c_index] + prev_backoff[p_index])
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


def path_words(scorer: WordScorer, lattice: Lattice, nodes: list[int]) -> list[int]:
    """Word id of each node of a path (UNK where the model lacks it)."""
    out = []
    for node in nodes:
        entry = int(lattice.entry[node])
        if entry >= 0:
            out.append(int(scorer.entry_word[entry]))
        else:
            out.append(scorer.model.word_id(lattice.surface(node), to_hiragana(lattice.node_reading(node))))
    return out


def trigram_nats(scorer: WordScorer, words: list[int], first_word: int) -> float:
    """What the trigram says of a path beyond the bigram the search scored it with, in nats:
    -log P3 + log P2 summed over the words whose two predecessors are known (< 0 where the
    trigram likes the path better)."""
    history = [first_word, *words]
    grams = [(a, b, c) for a, b, c in zip(history, history[1:], history[2:]) if UNK not in (a, b, c)]
    if not grams:
        return 0.0
    three = np.array([(a << 32) | (b << 16) | c for a, b, c in grams], dtype=np.int64)
    two = np.array([(b << 16) | c for _, b, c in grams], dtype=np.int64)
    return float(-(scorer.model.logp_packed(three, 3) - scorer.model.logp_packed(two, 2)).sum())


def path_rescorer(scorer: WordScorer | None, lattice: Lattice, context: str, weights: WordLmWeights):
    """Cost units to add to each judged path's score (lm_paths.ranked_paths), or None."""
    if scorer is None or weights.weight <= 0 or weights.trigram <= 0 or scorer.model.order < 3:
        return None
    first = scorer.context_word(context)
    scale = weights.weight * weights.trigram
    return lambda nodes: scale * trigram_nats(scorer, path_words(scorer, lattice, nodes), first)


def space_terms(scorer: WordScorer | None, lattice: Lattice, context: str, weights: WordLmWeights) -> dict:
    """SearchSpace keyword arguments for a whole reading ({} without a scorer or weight)."""
    if scorer is None or weights.weight <= 0:
        return {}
    extra, pairs = search_terms(scorer, lattice, 0, len(lattice.reading), context, weights)
    return {"extra_cost": extra, "pairs": pairs}


class LoadedWordScorer:
    """Called for the word scorer: it once the bundled word n-gram has loaded and been bound to
    the dictionary (on a thread of its own, under a second), None before or when it failed (said
    once in the log: the dictionary and the character n-gram convert alone)."""

    def __init__(self, dictionary: SystemDictionary, path: Path = BUNDLED) -> None:
        from karukan_engine.neural.background import LoadHandle

        self.handle = LoadHandle(lambda: WordScorer(WordNgram.load(path), dictionary), name="karukan-wordlm-load")
        self._told = False

    def __call__(self) -> WordScorer | None:
        if self.handle.ready():
            return self.handle.wait(0)
        if self.handle.done() and not self._told:
            self._told = True
            log.warning("word n-gram unavailable (%s); converting without it", self.handle.error)
        return None
