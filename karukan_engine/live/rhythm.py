"""When a user has paused: longer than they usually leave between keys.

Space's conversion is prepared with the model once the user pauses (live_service.prepare_for).
That work holds the interpreter in stretches; a key that arrives while it runs waits at every
hand-over between the service's threads (bus reader, session worker, reply): about 1 ms more at
the median and 3 ms at p95 (docs/benchmarks.md, "Space prepared after the user's own pause").
A fixed pause of 100 ms is exactly the gap of someone typing ten keys a second, so the
preparation started just as their next key came, on most keys. The pause is therefore measured
against each context's own rhythm: a few times the median gap between its recent events,
within fixed bounds.
"""

from __future__ import annotations

import statistics
from collections import deque
from typing import Hashable

# Gaps between events remembered per context; the median of these is the context's rhythm.
WINDOW = 8
# A pause is this many times the median gap (a typist's gaps vary by about a third either way).
FACTOR = 2.0


class TypingRhythm:
    """Each context's recent gaps between events, and the pause that means "stopped typing"."""

    def __init__(self, floor_s: float, ceiling_s: float, factor: float = FACTOR, window: int = WINDOW) -> None:
        if not 0 <= floor_s <= ceiling_s or factor <= 0 or window < 1:
            raise ValueError("need 0 <= floor <= ceiling, a positive factor and a window of at least 1")
        self.floor_s, self.ceiling_s, self.factor, self.window = floor_s, ceiling_s, factor, window
        self._last: dict[Hashable, float] = {}
        self._gaps: dict[Hashable, deque[float]] = {}

    def event(self, context: Hashable, at: float) -> None:
        """An event (a key, a click) of `context` at time `at` (seconds, monotonic)."""
        last = self._last.get(context)
        self._last[context] = at
        if last is not None and at >= last:
            self._gaps.setdefault(context, deque(maxlen=self.window)).append(at - last)

    def pause_s(self, context: Hashable) -> float:
        """How long after an event the context counts as paused: FACTOR x the median of its
        recent gaps, never below floor_s (also the answer before two gaps are known) nor above
        ceiling_s."""
        gaps = self._gaps.get(context)
        if not gaps or len(gaps) < 2:
            return self.floor_s
        return min(self.ceiling_s, max(self.floor_s, self.factor * statistics.median(gaps)))

    def forget(self, context: Hashable) -> None:
        self._last.pop(context, None)
        self._gaps.pop(context, None)
