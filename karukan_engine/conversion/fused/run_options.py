"""What one explicit conversion may do (its plan of model work) and how it runs (RunOptions)."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Callable

from karukan_engine.scheduling.scheduler import Cancelled


class SpacePlan(enum.Enum):
    """How much of explicit conversion's model work to do, most first."""

    BEAM = "beam"       # the greedy text, the beam and the NLL pass (all of it)
    SCORE = "score"     # the greedy text and the NLL pass
    GREEDY = "greedy"   # the greedy text alone
    LEAN = "lean"       # none: lattice, n-gram, learning, and a greedy text typing decoded

    @property
    def beam(self) -> bool:
        return self is SpacePlan.BEAM

    @property
    def decodes(self) -> bool:
        """Whether the greedy text is decoded (LEAN takes it only if typing decoded it)."""
        return self is not SpacePlan.LEAN

    @property
    def scores(self) -> bool:
        """Whether the NLL pass runs."""
        return self in (SpacePlan.BEAM, SpacePlan.SCORE)


@dataclass(frozen=True)
class RunOptions:
    """How one explicit conversion runs. The defaults are a Space's: the plan is what the Space
    budget affords, counted from `started`; stage timings are recorded; a model error leaves
    the dictionary's candidates."""

    plan: SpacePlan | None = None     # None: what the Space budget affords
    started: float | None = None      # when the budget began (time.perf_counter); None: now
    # Checked between stages (and at decode steps): True ends the run with scheduler.Cancelled.
    should_stop: Callable[[], bool] | None = None
    timed: bool = True                # False: not Space's own timings (a preparation's)
    raise_model_errors: bool = False  # True: a NeuralError propagates instead

    def checkpoint(self) -> None:
        """Between stages: end the run (scheduler.Cancelled) when it should stop."""
        if self.should_stop is not None and self.should_stop():
            raise Cancelled()


SPACE = RunOptions()


def preparation(should_stop: Callable[[], bool], plan: SpacePlan = SpacePlan.BEAM) -> RunOptions:
    """A preparation's run: all of the model work (no key is waiting) unless `plan` says less,
    untimed, stopped between stages, and a model error ends it (it keeps nothing; the Space
    then converts for itself)."""
    return RunOptions(plan=plan, should_stop=should_stop, timed=False, raise_model_errors=True)
