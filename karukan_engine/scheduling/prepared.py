"""Explicit conversions prepared while the user pauses, kept for the Space that follows.

A preparation runs the whole conversion ahead of Space on a scheduler worker and keeps its
segments under a key that names everything they depend on (conversion/fused/space_conversion.py);
`take` hands them to the Space whose key matches. A Space that arrives while the preparation of
its own key is still running waits for it instead of starting over, up to a limit, and
`Preparation.stop` keeps such a preparation going although the Space's event superseded it.
"""

from __future__ import annotations

import threading
from typing import Callable, Hashable, Sequence

from karukan_engine.core.lru import Lru
from karukan_engine.core.types import Segment

# Conversions kept: one per context that paused lately (a Space converts what was prepared last).
PREPARED_CAPACITY = 8
# How long a superseded preparation waits for the Space that superseded it to ask for it: the
# event's own work runs between the two (keymap, composer) and takes well under a millisecond.
CLAIM_GRACE_S = 0.002


class Preparation:
    """One preparation in progress; `finish` or `abandon` ends it."""

    def __init__(self, key: Hashable) -> None:
        self.key = key
        self.segments: tuple[Segment, ...] | None = None
        # The lean conversion, computed first for a quick Space that comes before the end.
        self.lean: tuple[Segment, ...] | None = None
        self.ended = threading.Event()
        self.claimed = threading.Event()   # a Space with this key waits for the result

    def stop(self, superseded: Callable[[], bool]) -> Callable[[], bool]:
        """A should-stop check for the preparation's stages: stop once `superseded()` unless a
        Space for this very key claims the result (the Space is the event that superseded it;
        it is given a moment to ask)."""
        def should_stop() -> bool:
            if not superseded() or self.claimed.is_set():
                return False
            return not self.claimed.wait(CLAIM_GRACE_S)
        return should_stop


class PreparedConversions:
    """A small LRU of prepared conversions, and the preparations under way."""

    def __init__(self, capacity: int = PREPARED_CAPACITY) -> None:
        if capacity < 1:
            raise ValueError("capacity must be positive")
        self.capacity = capacity
        self._done: Lru[Hashable, tuple[Segment, ...]] = Lru(capacity)
        self._running: dict[Hashable, Preparation] = {}
        self._lock = threading.Lock()
        # For benchmarks and tests: Spaces answered from a preparation or not, preparations
        # that finished or were abandoned (superseded, outranked, stale).
        self.hits = self.misses = self.finished = self.abandoned = 0

    def start(self, key: Hashable) -> Preparation | None:
        """A preparation of `key`, or None when it is prepared or being prepared already."""
        with self._lock:
            if key in self._done or key in self._running:
                return None
            preparation = self._running[key] = Preparation(key)
            return preparation

    def finish(self, preparation: Preparation, segments: Sequence[Segment]) -> None:
        with self._lock:
            self._running.pop(preparation.key, None)
            preparation.segments = tuple(segments)
            self._done.put(preparation.key, preparation.segments)
            self.finished += 1
        preparation.ended.set()

    def abandon(self, preparation: Preparation) -> None:
        with self._lock:
            if self._running.get(preparation.key) is preparation:
                del self._running[preparation.key]
                self.abandoned += 1
        preparation.ended.set()

    def _hit(self, key: Hashable) -> list[Segment] | None:
        """The finished segments for `key`, counted as a hit (under the lock)."""
        done = self._done.get(key)
        if done is None:
            return None
        self.hits += 1
        return list(done)

    def take(self, key: Hashable, wait_s: float, keep_claim: bool = False) -> list[Segment] | None:
        """The prepared segments for `key` (waiting up to wait_s for a preparation of it that is
        under way), or None: convert as usual. keep_claim: such a preparation stays claimed
        when the wait ends, so that it runs on past the Space that superseded it, for the
        refinement that follows a quick Space."""
        with self._lock:
            found = self._hit(key)
            if found is not None:
                return found
            preparation = self._running.get(key)
            if preparation is None:
                self.misses += 1
                return None
            preparation.claimed.set()
        if not preparation.ended.wait(wait_s) and not keep_claim:
            preparation.claimed.clear()   # too late for this Space: let it stop at its next stage
        with self._lock:
            found = preparation.segments
            if found is None:
                self.misses += 1
                return None
            self.hits += 1
            return list(found)

    def first_answer(self, key: Hashable) -> tuple[list[Segment], bool] | None:
        """What a quick Space can show at once: the prepared segments (True: final), or the lean
        ones of a preparation under way (False; the preparation stays claimed, as with
        `take(keep_claim=True)`), or None."""
        with self._lock:
            found = self._hit(key)
            if found is not None:
                return found, True
            preparation = self._running.get(key)
            if preparation is None or preparation.lean is None:
                return None
            preparation.claimed.set()
            return list(preparation.lean), False

    def clear(self) -> None:
        with self._lock:
            self._done.clear()

    def __len__(self) -> int:
        with self._lock:
            return len(self._done)
