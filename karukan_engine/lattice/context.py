"""Left context: which POS the text left of the caret ends with, so the first word of the
reading connects to it instead of to a sentence start.

The last word of the context is the longest suffix (up to MAX_SUFFIX characters) that is a
dictionary surface; each of its entries is a possible left neighbour (its right POS id, with its
cost above the cheapest as a penalty), and the search picks the one that fits the reading best.
Sentence ends (and no context) give the sentence start, as without context.
"""

from __future__ import annotations

import threading

import numpy as np

from karukan_engine.dictionary.format import SURFACE_IS_KATAKANA, SURFACE_IS_READING
from karukan_engine.dictionary.system import SystemDictionary
from karukan_engine.kana import is_hiragana, is_katakana, to_hiragana

MAX_SUFFIX = 8
START = ((0, 0),)
SENTENCE_ENDS = set("。．.！!？?\n「『（(【[")


class ContextAnalyzer:
    def __init__(self, dictionary: SystemDictionary) -> None:
        self.dictionary = dictionary
        self._lock = threading.Lock()
        self._by_surface: tuple[np.ndarray, np.ndarray] | None = None

    def _surface_index(self) -> tuple[np.ndarray, np.ndarray]:
        """Entries sorted by stored-surface id, and the id of each (built on first use: the
        dictionary stores entries by reading only)."""
        with self._lock:
            if self._by_surface is None:
                ids = self.dictionary.surface_ids
                order = np.argsort(ids, kind="stable")
                self._by_surface = (order, ids[order])
            return self._by_surface

    def _entries_for(self, surface: str) -> np.ndarray:
        d = self.dictionary
        found = []
        surface_id = d.surface_id_of(surface)
        if surface_id is not None:
            order, sorted_ids = self._surface_index()
            a, b = np.searchsorted(sorted_ids, [surface_id, surface_id + 1])
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
        for length in range(len(tail), 0, -1):
            entries = self._entries_for(tail[-length:])
            if entries.size:
                costs = self.dictionary.cost[entries].astype(np.int64)
                best: dict[int, int] = {}
                for rid, cost in zip(self.dictionary.rid[entries].tolist(), (costs - costs.min()).tolist()):
                    best[rid] = min(cost, best.get(rid, cost))
                return tuple(sorted(best.items()))
        return START
