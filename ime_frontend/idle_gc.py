"""Python's cyclic garbage collector run while the user pauses, not inside a key.

CPython starts a collection after 700 net allocations of containers, whichever thread allocates
the 700th, so about one key in sixteen paid for one. Through fcitx5 at a typist's pace those
collections took about 1 ms (up to 2.3; a generation-1 one 5 ms) and sat inside the slowest keys
(docs/benchmarks.md, "Issue 30: garbage collection between keys"). Here the objects built while starting
(the dictionary's tables, the models' vocabularies) are frozen out of every collection, the
allocation threshold is raised to a backstop that only a long burst of keys reaches, and a
collection runs from the event loop once no call came for QUIET_S.
"""

from __future__ import annotations

import asyncio
import gc

# After this long without a call the user has paused: collect then. Longer than a key's
# deferred work takes to start (10 ms) and shorter than the gap between a typist's keys.
QUIET_S = 0.040
# Net container allocations that still start a collection by themselves (CPython's default: 700).
BACKSTOP_ALLOCATIONS = 5000
# Fewer new containers than this since the last collection: nothing worth collecting.
MIN_YOUNG = 100

_started = False


class IdleCollector:
    """One per process (EngineCore's): told of every call, collects once the calls pause."""

    def __init__(self, quiet_s: float = QUIET_S) -> None:
        self.quiet_s = quiet_s
        self._pending: asyncio.TimerHandle | None = None
        self.collections = 0   # how many ran (tests)

    @staticmethod
    def start() -> None:
        """Freeze what exists now and raise the allocation threshold (once per process)."""
        global _started
        if _started:
            return
        _started = True
        gc.collect()
        gc.freeze()
        gc.set_threshold(BACKSTOP_ALLOCATIONS, *gc.get_threshold()[1:])

    def activity(self, loop: asyncio.AbstractEventLoop) -> None:
        """A call ended (on `loop`): collect once QUIET_S passed with no other."""
        if self._pending is not None:
            self._pending.cancel()
        self._pending = loop.call_later(self.quiet_s, self._collect)

    def _collect(self) -> None:
        self._pending = None
        generation = generation_due(gc.get_count(), gc.get_threshold())
        if generation is not None:
            gc.collect(generation)
            self.collections += 1


def generation_due(counts: tuple[int, int, int], thresholds: tuple[int, int, int]) -> int | None:
    """Which generation a pause collects (with the younger ones), None when too little is new:
    the oldest once CPython itself would have reached it, else the younger two (a collection of
    generation 1 counts one towards generation 2, as CPython's own do)."""
    young, _, older = counts
    if young < MIN_YOUNG:
        return None
    return 2 if older >= thresholds[2] else 1
