"""An LRU cache of finished conversions, shared by all sessions and worker threads.

Keyed by (reading, left context, model id): the same chunk typed in a different context or
converted by a different model is a different conversion. Empty results are not cached, so a
failed or cancelled conversion is retried next time.

A choice the user commits makes the entries whose reading holds its reading stale
(`forget_readings`). Committing is a key's work, and scanning a thousand entries there cost the
Return key about 0.6 ms, growing with the cache; so the commit only notes the readings, and each
entry is checked against the readings noted since it was stored when it is next read.
"""

from __future__ import annotations

import threading
from collections import deque
from dataclasses import dataclass
from typing import Generic, Sequence, TypeVar

from karukan_engine.core.lru import Lru

V = TypeVar("V")

# Commits remembered for checking older entries; an entry stored before all of them cannot be
# checked and counts as stale.
FORGOTTEN_KEPT = 256


@dataclass(frozen=True)
class CacheKey:
    reading: str
    left_context: str
    model_id: str


class ConversionCache(Generic[V]):
    def __init__(self, capacity: int = 1024) -> None:
        if capacity < 1:
            raise ValueError("cache capacity must be at least 1")
        self.capacity = capacity
        self._entries: Lru[CacheKey, tuple[V, int]] = Lru(capacity)   # (value, generation stored at)
        self._lock = threading.Lock()
        self._generation = 0   # how many forget_readings calls so far
        self._forgotten: deque[tuple[int, tuple[str, ...]]] = deque(maxlen=FORGOTTEN_KEPT)
        self.hits = 0
        self.misses = 0

    def get(self, key: CacheKey) -> V | None:
        with self._lock:
            stored = self._entries.get(key)
            if stored is not None and not self._current(key, stored[1]):
                self._entries.pop(key)
                stored = None
            if stored is None:
                self.misses += 1
                return None
            self.hits += 1
            if stored[1] != self._generation:   # checked: no need to check it again
                self._entries.put(key, (stored[0], self._generation))
            return stored[0]

    def put(self, key: CacheKey, value: V) -> None:
        if not value:
            return
        with self._lock:
            self._entries.put(key, (value, self._generation))

    def forget_readings(self, readings: Sequence[str]) -> None:
        """The entries whose reading holds one of `readings` are stale from now on."""
        readings = tuple(r for r in readings if r)
        if readings:
            with self._lock:
                self._generation += 1
                self._forgotten.append((self._generation, readings))

    def _current(self, key: CacheKey, stored_at: int) -> bool:
        """No reading forgotten since the entry was stored is in its reading (lock held)."""
        if stored_at == self._generation:
            return True
        if self._forgotten[0][0] > stored_at + 1:
            return False   # some of the commits since were not kept: it cannot be checked
        return not any(generation > stored_at and any(r in key.reading for r in readings)
                       for generation, readings in self._forgotten)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def keys(self) -> list[CacheKey]:
        """The keys of the entries still current, least recently used first."""
        with self._lock:
            return [key for key in self._entries.keys() if self._current(key, self._entries.peek(key)[1])]

    def __len__(self) -> int:
        """Entries held, the stale ones not yet read included."""
        with self._lock:
            return len(self._entries)

    def __contains__(self, key: object) -> bool:
        with self._lock:
            stored = self._entries.peek(key)
            return stored is not None and self._current(key, stored[1])
