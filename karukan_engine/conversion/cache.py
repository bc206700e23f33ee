"""An LRU cache of finished conversions, shared by all sessions and worker threads.

Keyed by (reading, left context, model id): the same chunk typed in a different context or
converted by a different model is a different conversion. Empty results are not cached, so a
failed or cancelled conversion is retried next time.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Callable, Generic, Hashable, TypeVar

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
        self._entries: OrderedDict[Hashable, V] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def get(self, key: CacheKey) -> V | None:
        with self._lock:
            value = self._entries.get(key)
            if value is None:
                self.misses += 1
                return None
            self._entries.move_to_end(key)
            self.hits += 1
            return value

    def put(self, key: CacheKey, value: V) -> None:
        if not value:
            return
        with self._lock:
            self._entries[key] = value
            self._entries.move_to_end(key)
            while len(self._entries) > self.capacity:
                self._entries.popitem(last=False)

    def discard_if(self, stale: Callable[[CacheKey], bool]) -> int:
        """Drop the entries whose key `stale` accepts; returns how many."""
        with self._lock:
            keys = [key for key in self._entries if stale(key)]
            for key in keys:
                del self._entries[key]
            return len(keys)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)

    def __contains__(self, key: object) -> bool:
        with self._lock:
            return key in self._entries
