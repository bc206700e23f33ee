"""A small predictor of stage timings, and the choice of what fits a key's time budget.

Stages are named by the caller, e.g. "prefill" (per prompt token), "decode/1" (per step at batch
size 1), "lattice" (per call). The predictor keeps the most recent per-unit timings of each stage
and estimates a plan's cost from a high quantile of them times a safety margin, so one lucky fast
run does not make it promise what the machine cannot keep.

`choose` walks the options best first and takes the first whose estimate fits the remaining
budget. A stage never measured is tried (that is how it gets measured). An option refused many
times in a row is tried once anyway, with its stages' old timings forgotten: the retry measures
afresh, so a slow spell (another process hogging the CPU, a first call without a warm cache) is
not remembered forever, while an option that is still slow is refused again.
"""

from __future__ import annotations

import math
import threading
from collections import deque
from dataclasses import dataclass, field
from typing import Hashable, Sequence

# (stage name, units of work in that stage), e.g. ("prefill", 12) or ("decode/1", 9).
Plan = Sequence[tuple[str, float]]


@dataclass(frozen=True)
class Option:
    name: Hashable      # e.g. a model id ("main", "light") or an explicit conversion's plan
    plan: tuple[tuple[str, float], ...] = field(default_factory=tuple)


class StageTimings:
    def __init__(self, window: int = 32, quantile: float = 0.9, margin: float = 1.2) -> None:
        if window < 1 or not 0.0 < quantile <= 1.0 or margin < 1.0:
            raise ValueError("bad predictor settings")
        self.window = window
        self.quantile = quantile
        self.margin = margin
        self._samples: dict[str, deque[float]] = {}
        self._lock = threading.Lock()

    def observe(self, stage: str, seconds: float, units: float = 1.0) -> None:
        """Record that `units` of `stage` took `seconds`."""
        if units <= 0 or seconds < 0 or not math.isfinite(seconds):
            return
        with self._lock:
            samples = self._samples.setdefault(stage, deque(maxlen=self.window))
            samples.append(seconds / units)

    def forget(self, stages: Sequence[str]) -> None:
        """Drop the timings of these stages: the next observation starts their window afresh."""
        with self._lock:
            for stage in stages:
                self._samples.pop(stage, None)

    def per_unit(self, stage: str) -> float | None:
        """Predicted seconds per unit of `stage` (with margin), None when never measured."""
        with self._lock:
            samples = sorted(self._samples.get(stage, ()))
        if not samples:
            return None
        index = min(len(samples) - 1, math.ceil(self.quantile * len(samples)) - 1)
        return samples[max(0, index)] * self.margin

    def estimate(self, plan: Plan) -> float | None:
        """Predicted seconds for a plan, None when one of its stages was never measured."""
        total = 0.0
        for stage, units in plan:
            if units <= 0:
                continue
            per_unit = self.per_unit(stage)
            if per_unit is None:
                return None
            total += per_unit * units
        return total


class BudgetChooser:
    """Picks the best option that fits a budget, with occasional retries of refused ones."""

    def __init__(self, timings: StageTimings, retry_after: int = 50) -> None:
        self.timings = timings
        self.retry_after = retry_after
        self._refusals: dict[Hashable, int] = {}
        self._lock = threading.Lock()

    def choose(self, options: Sequence[Option], budget_s: float) -> Option | None:
        """The first option (best first) predicted to finish within budget_s, or None."""
        for option in options:
            estimate = self.timings.estimate(option.plan)
            if estimate is None or estimate <= budget_s:
                with self._lock:
                    self._refusals[option.name] = 0
                return option
            with self._lock:
                refused = self._refusals.get(option.name, 0) + 1
                self._refusals[option.name] = refused
                if refused >= self.retry_after:
                    self._refusals[option.name] = 0
                    self.timings.forget([stage for stage, _ in option.plan])
                    return option
        return None
