"""One bounded cache that forgets the least recently used entry first, for every cache here.

Not locked: each owner already holds a lock over the cache together with the state beside it
(counters, preparations under way), so a lock of its own would only be taken twice.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Generic, Hashable, Iterator, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")
_ABSENT = object()


class Lru(Generic[K, V]):
    """At most `capacity` entries; reading or writing one makes it the most recent."""

    def __init__(self, capacity: int) -> None:
        if capacity < 0:
            raise ValueError("an LRU capacity cannot be negative")
        self.capacity = capacity   # 0 keeps nothing (a cache turned off)
        self._entries: OrderedDict[K, V] = OrderedDict()

    def get(self, key: K, default=None):
        """The value of `key` (now the most recent), or `default` when absent. A default that
        no value can be tells a stored None from a missing key."""
        value = self._entries.get(key, _ABSENT)
        if value is _ABSENT:
            return default
        self._entries.move_to_end(key)
        return value

    def peek(self, key: K, default=None):
        """The value of `key`, or `default` when absent (recency unchanged)."""
        return self._entries.get(key, default)

    def put(self, key: K, value: V) -> None:
        """Store `value` as the most recent entry, dropping the least recent beyond capacity."""
        self._entries[key] = value
        self._entries.move_to_end(key)
        while len(self._entries) > self.capacity:
            self._entries.popitem(last=False)

    def pop(self, key: K, default=None):
        """Remove `key` and return its value, or `default` when absent."""
        return self._entries.pop(key, default)

    def clear(self) -> None:
        self._entries.clear()

    def keys(self) -> list[K]:
        """The keys, least recent first (recency unchanged)."""
        return list(self._entries)

    def __contains__(self, key: object) -> bool:   # recency unchanged
        return key in self._entries

    def __len__(self) -> int:
        return len(self._entries)

    def __iter__(self) -> Iterator[K]:
        return iter(list(self._entries))
