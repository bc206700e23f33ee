"""An LRU cache of finished conversions, shared by all sessions and worker threads.

Keyed by (reading, left context, model id): the same chunk typed in a different context or
converted by a different model is a different conversion. Empty results are not cached, so a
failed or cancelled conversion is retried next time.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Callable, Generic, TypeVar

from karukan_engine.core.lru import Lru

V = TypeVar("V")


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
        self._entries: Lru[CacheKey, V] = Lru(capacity)
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def get(self, key: CacheKey) -> V | None:
        with self._lock:
            value = self._entries.get(key)
            if value is None:
                self.misses += 1
                return None
            self.hits += 1
            return value

    def put(self, key: CacheKey, value: V) -> None:
        if not value:
            return
        with self._lock:
            self._entries.put(key, value)

    def discard_if(self, stale: Callable[[CacheKey], bool]) -> int:
        """Drop the entries whose key `stale` accepts; returns how many."""
        with self._lock:
            return self._entries.discard_if(stale)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def keys(self) -> list[CacheKey]:
        """The keys held, least recently used first."""
        with self._lock:
            return self._entries.keys()

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)

    def __contains__(self, key: object) -> bool:
        with self._lock:
            return key in self._entries
