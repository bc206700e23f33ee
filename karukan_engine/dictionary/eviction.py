"""Which learned entry leaves a full table first: the weakest by score, one entry at a time.

A learned entry's score (recency plus a weight per use) only grows, so the table keeps a lazy
min-heap: every change pushes the entry's new (score, last use, key), and an item whose entry has
since changed or gone is skipped when it reaches the top. Finding the weakest costs a few heap
pops instead of sorting the table, so a full store evicts exactly what is over its bound on every
commit instead of a tenth of the table at once.
"""

from __future__ import annotations

import heapq
from typing import Hashable


class WeakestFirst:
    """The keys of a {key: use} table, weakest first (lowest score, then least recent, then key)."""

    def __init__(self) -> None:
        self._heap: list[tuple[int, int, Hashable]] = []

    def __len__(self) -> int:
        return len(self._heap)

    def note(self, key: Hashable, uses: dict) -> None:
        """`key` of `uses` was added or used again (its score grew)."""
        use = uses[key]
        heapq.heappush(self._heap, (use.score(), use.last, key))
        self._compact(uses)

    def rebuild(self, uses: dict) -> None:
        """Start again from the table as it is (after a load or a merge)."""
        self._heap = [(use.score(), use.last, key) for key, use in uses.items()]
        heapq.heapify(self._heap)

    def pop(self, uses: dict, keep: Hashable = None) -> Hashable | None:
        """The weakest key of `uses` other than `keep`, taken off the heap (the caller deletes it
        from the table); None when there is none."""
        kept = None
        found = None
        while self._heap:
            item = heapq.heappop(self._heap)
            score, last, key = item
            use = uses.get(key)
            if use is None or use.score() != score or use.last != last:
                continue   # left behind by a later change, or already gone
            if key == keep:
                kept = item
                continue
            found = key
            break
        if kept is not None:
            heapq.heappush(self._heap, kept)
        self._compact(uses)
        return found

    def _compact(self, uses: dict) -> None:
        if len(self._heap) > 2 * len(uses) + 64:   # mostly stale items: drop them (amortised O(1))
            self.rebuild(uses)
