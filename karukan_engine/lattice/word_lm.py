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
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from karukan_engine.dictionary.format import SURFACE_IS_KATAKANA, SURFACE_IS_READING
from karukan_engine.dictionary.system import SystemDictionary
from karukan_engine.kana import to_hiragana, to_katakana
from karukan_engine.lattice.lattice import Lattice
from karukan_engine.lattice.search import BOS, EOS
from karukan_engine.lattice.topic_paths import TopicContext, topic_nats
from karukan_engine.lm.topic_vectors import BUNDLED as TOPICS
from karukan_engine.lm.topic_vectors import TopicVectors, TopicVectorsError
from karukan_engine.lm.word_ngram import BOS as WORD_BOS
from karukan_engine.lm.word_ngram import BUNDLED, UNK, WordNgram

log = logging.getLogger(__name__)

SENTENCE_ENDS = set("。．.！!？?\n「『（(【[")
MAX_CONTEXT_WORD = 8


@dataclass(frozen=True)
class WordLmWeights:
    """`weight` cost units per nat of the word bigram (0: not used) and the nats a word it does
    not know pays. Fitted with the character n-gram by tools/lattice_lm_fit.py on the even rows
    of every dev set (docs/benchmarks.md "Word n-gram in the lattice search")."""

    weight: float = 800.0
    unknown: float = 14.0
    # share of `weight` per nat the trigram's correction of the bigram gets when the first
    # distinct paths are judged (lattice/lm_paths.py; 0: the bigram of the search alone)
    trigram: float = 0.5
    # the character n-gram's weight (lm_paths.LmWeights.weight) while this model is in use:
    # fitted together, it says more beside the word n-gram than alone (1000 against 650)
    char_weight: float = 1000.0
    # cost units by which the language models' best path must beat the dictionary's own first
    # choice to replace it (lm_paths.keep_dictionary_choice; tools/dictionary_margin_fit.py)
    dictionary_margin: float = 2000.0
    # cost units per nat of a judged path's content words' association with the text around
    # them (lattice/topic_paths.py; 0: not used; fitted by tools/topic_fit.py)
    topic: float = 300.0
    # where there is no text left of the caret, the chance that the reading does not start a
    # sentence (a phrase converted on its own, a field whose text is unknown): its first words
    # are scored by a mixture of P(w | sentence start) and P(w) (tools/open_start_fit.py)
    open_start: float = 0.7
    # the margin instead where the dictionary's choice is a single word with no text before it
    # (dictionary_margin below)
    lone_word_margin: float = math.inf

    def __post_init__(self) -> None:
        if (min(self.weight, self.unknown, self.trigram, self.char_weight, self.dictionary_margin, self.topic,
                self.open_start, self.lone_word_margin) < 0 or self.weight != self.weight or self.open_start > 1):
            raise ValueError("word language-model weights must be non-negative (open_start at most 1)")


class WordScorer:
    """A word n-gram bound to one system dictionary: each entry's word id, found once; with
    the topic vectors of its vocabulary when there are some."""

    def __init__(self, model: WordNgram, dictionary: SystemDictionary, topics: TopicVectors | None = None) -> None:
        self.model = model
        self.dictionary = dictionary
        self.entry_word = self._entry_words()
        model.word_id("", "")   # build the lookup tables now, not on a key
        model.surface_id("")
        self.topics = TopicContext(topics, model.surface_id) if topics is not None else None

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

    def node_words(self, lattice: Lattice, known: np.ndarray | None = None) -> np.ndarray:
        """Word id of each lattice node (UNK where unknown; BOS/EOS nodes UNK too). known: the
        ids of the first nodes, from the lattice this one extends."""
        entry = lattice.entry
        words = np.where(entry >= 0, self.entry_word[np.maximum(entry, 0)], UNK).astype(np.int64)
        first = 2 if known is None else known.size
        for node in (np.flatnonzero(entry[first:] < 0) + first).tolist():   # user, learned and fallback words
            words[node] = self.model.word_id(lattice.surface(node), to_hiragana(lattice.node_reading(node)))
        if known is not None:
            words[:first] = known
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


@dataclass(frozen=True)
class SearchTerms:
    """SearchSpace's extra_cost and pairs (prev, cur, bonus) for a span of a lattice, with each
    node's word id and how many of the pairs (the last ones) go into the end, so the terms of
    a lattice that extends this one reuse them."""

    words: np.ndarray
    extra_cost: np.ndarray
    pairs: tuple[np.ndarray, np.ndarray, np.ndarray]
    into_end: int

    def space_args(self) -> dict:
        return {"extra_cost": self.extra_cost, "pairs": self.pairs}


def search_terms(scorer: WordScorer, lattice: Lattice, lo: int, hi: int, context: str,
                 weights: WordLmWeights, base: SearchTerms | None = None) -> SearchTerms:
    """The word n-gram's terms for the span [lo, hi) of a lattice. base: the terms of the same
    search over the lattice this one extends (LatticeBuilder.extend, lo = 0): only the pairs
    into the new nodes and the end are looked up."""
    model, scale = scorer.model, weights.weight
    words = scorer.node_words(lattice, None if base is None else base.words)
    known = words != UNK
    uni = -model.unigram_logp[words].astype(np.float64)
    backoff = -model.unigram_backoff[words].astype(np.float64)
    nats = np.where(known, uni + backoff, weights.unknown)
    nats[[BOS, EOS]] = 0.0
    first_word = scorer.context_word(context)
    start, end = lattice.start, lattice.end
    inside = (start >= lo) & (end <= hi)
    inside[[BOS, EOS]] = False
    first = inside & (start == lo)
    members = np.flatnonzero(inside & known)
    if open_start(context, weights):
        # the first words' cost is worked out here whole; no pair leaves the context's word
        nats[first] = _open_start_nats(model, words[first], known[first], backoff[first], weights)
        first_word = UNK
    # the first word pays for following the context's word when the pair is unseen
    first_backoff = -float(model.unigram_backoff[first_word]) if first_word != UNK else 0.0
    nats[first] += first_backoff
    # the left side of every transition inside the span: known words ending before hi, and the
    # context's word at lo; the right side: known words starting at or after lo. Each side is
    # grouped by (position, word) (a word's POS variants share their terms), every pair of
    # groups meeting at a position is looked up at once, and the kept pairs spread to the nodes.
    prev = members[end[members] < hi]
    prev_pos, prev_words, prev_backoff = end[prev].astype(np.int64), words[prev], backoff[prev]
    if first_word != UNK:
        prev = np.concatenate(([BOS], prev))
        prev_pos = np.concatenate(([lo], prev_pos))
        prev_words = np.concatenate(([first_word], prev_words))
        prev_backoff = np.concatenate(([first_backoff], prev_backoff))
    order = np.lexsort((prev_words, prev_pos))
    prev, prev_pos, prev_words, prev_backoff = prev[order], prev_pos[order], prev_words[order], prev_backoff[order]
    # a transition into an old node joins old nodes: base has it
    right = members if base is None else members[members >= base.words.size]
    cur = right[np.lexsort((words[right], start[right]))]
    cur_pos, cur_words = start[cur].astype(np.int64), words[cur]
    p_first, p_size = _groups(prev_pos, prev_words)
    c_first, c_size = _groups(cur_pos, cur_words)
    c_pos = cur_pos[c_first]
    a = np.searchsorted(c_pos, prev_pos[p_first], "left")
    b = np.searchsorted(c_pos, prev_pos[p_first], "right")
    _, gi, gj = _ranges_product(np.arange(p_first.size), np.ones(p_first.size, dtype=np.int64), a, b - a)
    hit, logp = model.bigram_hits(prev_words[p_first[gi]], cur_words[c_first[gj]])
    gi, gj, logp = gi[hit], gj[hit], logp[hit]
    k, x, y = _ranges_product(p_first[gi], p_size[gi], c_first[gj], c_size[gj])
    # kept pair: -log P(cur | prev) instead of the unigram + backoff the nodes already pay
    delta = -logp[k] - (uni[cur[y]] + prev_backoff[x])
    keep = delta < 0
    # the reading need not end a sentence: the last word's backoff is given back
    last = members[end[members] == hi]
    extra = np.rint(scale * nats).astype(np.int64)
    prev_all = [prev[x[keep]], last]
    cur_all = [cur[y[keep]], np.full(last.size, EOS)]
    # cost units, never positive (base's are already)
    bonus_all = [np.minimum(np.rint(scale * gain), 0) for gain in (delta[keep], -backoff[last])]
    if base is not None:
        inner = base.pairs[0].size - base.into_end
        for kept, old in zip((prev_all, cur_all, bonus_all), base.pairs):
            kept.insert(0, old[:inner])
    pairs = tuple(np.concatenate(part).astype(np.int64) for part in (prev_all, cur_all, bonus_all))
    return SearchTerms(words, extra, pairs, int(last.size))


def open_start(context: str, weights: WordLmWeights) -> bool:
    """Whether the reading's first word is scored as maybe not starting a sentence."""
    return weights.open_start > 0 and not context.strip(" \t\u3000")


def dictionary_margin(weights: WordLmWeights, context: str, dictionary_words: int) -> float:
    """Cost units by which the language models' best path must beat the dictionary's own choice
    of `dictionary_words` words (lm_paths.keep_dictionary_choice). A lone word with no text
    before it (none known, or a line start) is judged by the dictionary: the n-grams then know
    little more than how common each spelling is over the whole corpus, names and every
    register included (松 against 待つ for まつ, 有 against 保つ for たもつ), while the
    dictionary's word costs were set for what people convert. With text before it the n-grams
    and the topic vectors read that text, and the usual margin applies."""
    if dictionary_words == 1 and not context.strip():
        return max(weights.dictionary_margin, weights.lone_word_margin)
    return weights.dictionary_margin


def _open_start_nats(model: WordNgram, words: np.ndarray, known: np.ndarray, backoff: np.ndarray,
                     weights: WordLmWeights) -> np.ndarray:
    """-log of (1 - s) P(w | sentence start) + s P(w) for each first word w (s = open_start),
    plus the backoff its successor pays; unknown words pay `unknown` nats either way."""
    share = weights.open_start
    uni = model.unigram_logp[words].astype(np.float64)
    after_start = uni + float(model.unigram_backoff[WORD_BOS])
    hit, logp = model.bigram_hits(np.full(words.size, WORD_BOS), words)
    after_start[hit] = logp[hit]
    with np.errstate(divide="ignore"):
        mixed = np.logaddexp(np.log1p(-share) + after_start, np.log(share) + uni)
    return np.where(known, backoff - mixed, weights.unknown)


def _groups(positions: np.ndarray, words: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """First index and size of each run of equal (position, word) in arrays sorted by both."""
    if positions.size == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    change = np.concatenate(([True], (positions[1:] != positions[:-1]) | (words[1:] != words[:-1])))
    first = np.flatnonzero(change)
    return first, np.diff(np.concatenate((first, [positions.size])))


def _ranges_product(a0: np.ndarray, na: np.ndarray, b0: np.ndarray, nb: np.ndarray):
    """For each k, every pair of [a0[k], a0[k] + na[k]) x [b0[k], b0[k] + nb[k]): (k, x, y)."""
    n = na * nb
    k = np.repeat(np.arange(n.size), n)
    offset = np.arange(int(n.sum())) - np.repeat(np.cumsum(n) - n, n)
    return k, a0[k] + offset // np.maximum(nb[k], 1), b0[k] + offset % np.maximum(nb[k], 1)


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


def trigram_nats(scorer: WordScorer, paths: list[list[int]], first_word: int) -> list[float]:
    """What the trigram says of each path (its words) beyond the bigram the search scored it
    with, in nats: -log P3 + log P2 summed over the words whose two predecessors are known (< 0
    where the trigram likes the path better). One lookup for all the paths."""
    owners, three, two = [], [], []
    for k, words in enumerate(paths):
        history = [first_word, *words]
        for a, b, c in zip(history, history[1:], history[2:]):
            if UNK not in (a, b, c):
                owners.append(k)
                three.append((a << 32) | (b << 16) | c)
                two.append((b << 16) | c)
    out = np.zeros(len(paths))
    if owners:
        model = scorer.model
        gain = model.logp_packed(np.array(three, dtype=np.int64), 3) - model.logp_packed(np.array(two, dtype=np.int64), 2)
        np.add.at(out, np.array(owners), -gain)
    return out.tolist()


def path_rescorer(scorer: WordScorer | None, lattice: Lattice, context: str, weights: WordLmWeights):
    """Cost units to add to the judged paths' scores (lm_paths.ranked_paths), or None: the
    trigram's correction of the bigram and the content words' association with the context."""
    if scorer is None or weights.weight <= 0:
        return None
    trigram = weights.weight * weights.trigram if scorer.model.order >= 3 else 0.0
    topic = weights.topic if scorer.topics is not None else 0.0
    if trigram <= 0 and topic <= 0:
        return None
    # an open start has no sentence start for the trigram to condition the first words on
    first = UNK if open_start(context, weights) else scorer.context_word(context)

    def rescore(paths: list[list[int]]) -> list[float]:
        words = [path_words(scorer, lattice, p) for p in paths]
        out = [trigram * v for v in trigram_nats(scorer, words, first)] if trigram > 0 else [0.0] * len(words)
        if topic > 0:
            nats = topic_nats(scorer.topics.vectors, scorer.topics.rows(context), words)
            out = [v - topic * t for v, t in zip(out, nats)]
        return out

    return rescore


class LoadedWordScorer:
    """Called for the word scorer: it once the bundled word n-gram has loaded and been bound to
    the dictionary (on a thread of its own, under a second), None before or when it failed (said
    once in the log: the dictionary and the character n-gram convert alone)."""

    def __init__(self, dictionary: SystemDictionary, path: Path = BUNDLED, topics: Path = TOPICS) -> None:
        from karukan_engine.neural.background import LoadHandle

        self.handle = LoadHandle(lambda: _load_scorer(path, topics, dictionary), name="karukan-wordlm-load")
        self._told = False

    def __call__(self) -> WordScorer | None:
        if self.handle.ready():
            return self.handle.wait(0)
        if self.handle.done() and not self._told:
            self._told = True
            log.warning("word n-gram unavailable (%s); converting without it", self.handle.error)
        return None


def _load_scorer(path: Path, topics: Path, dictionary: SystemDictionary) -> WordScorer:
    """The word n-gram bound to the dictionary, with its topic vectors unless they are missing
    or unreadable (said in the log: the paths are judged without them)."""
    model = WordNgram.load(path)
    vectors = None
    try:
        vectors = TopicVectors.load(topics, digest=model.vocabulary_digest)
    except TopicVectorsError as exc:
        log.warning("topic vectors unavailable (%s); judging without them", exc)
    return WordScorer(model, dictionary, vectors)
