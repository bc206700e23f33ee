"""Left context: which POS the text left of the caret ends with, so the first word of the
reading connects to it instead of to a sentence start.

The last word of the context is the longest suffix (up to MAX_SUFFIX characters) that is a
dictionary surface; each of its entries is a possible left neighbour (its right POS id, with its
cost above the cheapest as a penalty), and the search picks the one that fits the reading best.
Sentence ends (and no context) give the sentence start, as without context.

The entries-by-surface index costs about 100 ms to build (an argsort of every entry): the engine
builds it on a thread at startup (`prepare`), never on the first key after a commit, which is
the first key with a left context (issue 30: that key took 87-118 ms). Answers are cached by the
context's tail, since every key of a composition asks again for the same one.
"""

from __future__ import annotations

import threading

import numpy as np

from karukan_engine.core.lru import Lru
from karukan_engine.dictionary.format import SURFACE_IS_KATAKANA, SURFACE_IS_READING
from karukan_engine.dictionary.system import SystemDictionary
from karukan_engine.kana import is_hiragana, is_katakana, to_hiragana

MAX_SUFFIX = 8
START = ((0, 0),)
SENTENCE_ENDS = set("。．.！!？?\n「『（(【[")
NEIGHBOUR_CACHE_SIZE = 64   # context tails remembered (one per field the user types in, and more)


class ContextAnalyzer:
    def __init__(self, dictionary: SystemDictionary) -> None:
        self.dictionary = dictionary
        self._lock = threading.Lock()
        self._by_surface: tuple[np.ndarray, np.ndarray] | None = None
        self.index_builds = 0   # times the index was built (tests: once, and not by a key)
        self._neighbours: Lru[str, tuple[tuple[int, int], ...]] = Lru(NEIGHBOUR_CACHE_SIZE)
        self._cache_lock = threading.Lock()   # not the index's: a build must not block a cache hit

    def prepare(self) -> None:
        """Build the index now (any thread): the first key with a left context then finds it."""
        self._surface_index()

    @property
    def prepared(self) -> bool:
        return self._by_surface is not None

    def _surface_index(self) -> tuple[np.ndarray, np.ndarray]:
        """Entries sorted by stored-surface id, and the id of each (built on first use: the
        dictionary stores entries by reading only)."""
        with self._lock:
            if self._by_surface is None:
                ids = self.dictionary.surface_ids
                order = np.argsort(ids, kind="stable")
                self._by_surface = (order, ids[order])
                self.index_builds += 1
            return self._by_surface

    def _entries_for(self, surface: str) -> np.ndarray:
        d = self.dictionary
        found = []
        surface_id = d.surface_id_of(surface)
        if surface_id is not None:
            order, sorted_ids = self._surface_index()
            # keys of the index's own dtype: Python ints would make numpy cast the whole
            # index (1.3M entries) to int64 on every lookup
            keys = np.array([surface_id, surface_id + 1], dtype=sorted_ids.dtype)
            a, b = np.searchsorted(sorted_ids, keys)
            found.append(order[a:b])
        for reading, code in ((surface, SURFACE_IS_READING), (to_hiragana(surface), SURFACE_IS_KATAKANA)):
            if (code == SURFACE_IS_READING and is_hiragana(surface)) or (
                    code == SURFACE_IS_KATAKANA and is_katakana(surface)):
                span = d.key_range(reading)
                if span:
                    idx = np.arange(*span)
                    found.append(idx[d.surface_ids[idx] == code])
        return np.concatenate(found) if found else np.empty(0, dtype=np.int64)

    def left_neighbours(self, context: str) -> tuple[tuple[int, int], ...]:
        """(right POS id, penalty) choices for what precedes the reading; ((0, 0),) = a
        sentence start."""
        context = context.rstrip(" \t\u3000")
        if not context or context[-1] in SENTENCE_ENDS:
            return START
        tail = context[-MAX_SUFFIX:]
        with self._cache_lock:
            found = self._neighbours.get(tail)
        if found is None:
            found = self._neighbours_of(tail)
            with self._cache_lock:
                self._neighbours.put(tail, found)
        return found

    def _neighbours_of(self, tail: str) -> tuple[tuple[int, int], ...]:
        for length in range(len(tail), 0, -1):
            entries = self._entries_for(tail[-length:])
            if entries.size:
                costs = self.dictionary.cost[entries].astype(np.int64)
                best: dict[int, int] = {}
                for rid, cost in zip(self.dictionary.rid[entries].tolist(), (costs - costs.min()).tolist()):
                    best[rid] = min(cost, best.get(rid, cost))
                return tuple(sorted(best.items()))
        return START
