"""Space: explicit conversion within its budget, prepared while the user pauses, or quick.

- convert: the ranked candidates (space_ranking.py) cut into segments (space_segments.py)
  within the Space budget.
- Prepared Space: `prepare` computes the conversion on a scheduler worker while the user
  pauses, with all of the model work, and keeps it (scheduling/prepared.py) under a key naming
  what it depends on; `convert` answers from it when the key matches. Stages check the run's
  stop in between, so a newer key or more urgent work ends a preparation early.
- Quick Space: `convert_quick` answers at once (prepared, or lean: no model work beyond a greedy
  text typing decoded) and `refined_conversion` computes what a waiting Space would have shown.
"""

from __future__ import annotations

import math
import time
from typing import Callable

from karukan_engine.conversion.fused.run_options import SPACE, RunOptions, SpacePlan, preparation
from karukan_engine.conversion.fused.shared import FusionShared
from karukan_engine.conversion.fused.space_ranking import SpaceRanking
from karukan_engine.conversion.fused.space_segments import SegmentSplitter
from karukan_engine.core.types import ConversionRequest, Segment, first_listed, settled_first_listed
from karukan_engine.neural.errors import NeuralError
from karukan_engine.scheduling.prepared import PreparedConversions
from karukan_engine.scheduling.scheduler import Cancelled, JobContext

# How long a Space waits for the preparation of its own conversion that is still running: this
# share of its budget, then it converts within what is left. Waiting the whole budget made a
# loaded machine's Spaces slower than not preparing (docs/benchmarks.md, "Space prepared while
# the user pauses"). Without a budget the preparation does exactly Space's work, so waiting
# never costs more than starting over; the cap only bounds a stuck one.
PREPARED_WAIT_SHARE = 0.4
PREPARED_WAIT_CAP_S = 5.0


class SpaceConversion:
    def __init__(self, shared: FusionShared, ranking: SpaceRanking, splitter: SegmentSplitter) -> None:
        self.shared = shared
        self.ranking = ranking
        self.splitter = splitter
        self.base = shared.base
        self.settings = shared.settings
        self.prepared = PreparedConversions()

    def convert(self, request: ConversionRequest) -> list[Segment]:
        if not request.reading or request.fixed_lengths or not self.shared.ready_slots():
            return self.base.convert(request)
        return self._converted_within(request, self.settings.space_budget_ms / 1000.0)

    def converted(self, request: ConversionRequest, run: RunOptions = SPACE) -> list[Segment]:
        """The conversion of `request` as `run` says, prepared or not."""
        ranked = self.ranking.candidates(request, self.settings.num_candidates, run)
        if not ranked:
            return self.base.convert(request)
        return self.splitter.segments_for(request, ranked[0], ranked[1:], run)

    def _converted_within(self, request: ConversionRequest, limit: float,
                          superseded: Callable[[], bool] | None = None) -> list[Segment] | None:
        """Space's conversion within `limit` seconds (its budget, or less): a preparation of it
        under way waited for up to its share (_prepared_wait_s), then the model work that fits
        what is left. None: `superseded()` said so after that wait."""
        began = time.perf_counter()
        found = self.prepared.take(self.prepared_key(request), self._prepared_wait_s(limit))
        if found is not None or (superseded is not None and superseded()):
            return found
        if not math.isfinite(limit):
            return self.converted(request, RunOptions(started=began))
        # the plan gets what is left of `limit`: as if Space had started (budget - limit) before
        return self.converted(request, RunOptions(started=began - (self.settings.space_budget_ms / 1000.0 - limit)))

    # --- prepared Space ----------------------------------------------------------------------

    def can_prepare(self) -> bool:
        return self.settings.prepare_space and bool(self.shared.ready_slots())

    def prepared_key(self, request: ConversionRequest) -> tuple:
        """Everything convert(request) depends on beyond the fixed settings and dictionary: the
        request, the models ready, whether the n-gram is, and the user's data (a choice learned
        or a word added since a preparation makes it stale)."""
        return (request.reading, request.left_context, request.learn,
                tuple(slot.model_id for slot in self.shared.ready_slots()),
                self.shared.ngram_ready(), self.base.data_version())

    def prepare(self, request: ConversionRequest, ctx: JobContext | None = None) -> bool:
        """Compute convert(request) with all of the model work (no key is waiting) and keep
        it for the Space that asks for it. Stops between stages once ctx is superseded (unless
        that Space is waiting for this very result) or outranked by more urgent work."""
        if not self.can_prepare() or not request.reading or request.fixed_lengths:
            return False
        key = self.prepared_key(request)
        running = self.prepared.start(key)
        if running is None:
            return True   # prepared already, or under way on another worker
        stop = running.stop(ctx.cancelled if ctx is not None else (lambda: False))
        outranked = ctx.outranked if ctx is not None else (lambda: False)

        def should_stop() -> bool:
            return stop() or (outranked() and not running.claimed.is_set())

        try:
            if self.quick_space():
                # A quick Space that comes before the end shows this at once (15-20 ms of work).
                running.lean = tuple(first_listed(self.lean(request, preparation(should_stop, SpacePlan.LEAN))))
            segments = first_listed(self.converted(request, preparation(should_stop)))
            if self.prepared_key(request) != key:
                return False   # the user's data changed meanwhile: this result may be stale
            self.prepared.finish(running, segments)
            return True
        except (Cancelled, NeuralError):
            return False
        finally:
            self.prepared.abandon(running)   # no-op once finished

    # --- quick Space ---------------------------------------------------------------------------

    def convert_quick(self, request: ConversionRequest) -> tuple[list[Segment], bool]:
        """Space's conversion without waiting for the model: the prepared one (True: final), or,
        while model work is left, the lean one: lattice, n-gram, learning and a greedy text typing
        decoded (False: refined_conversion does the rest). A preparation under way gives its
        lean conversion, which it computes first; before that, it is waited for as long as
        convert() would (the lean conversion would compete with it for the interpreter). Either
        way it stays claimed, for refined_conversion."""
        if (not self.quick_space() or not request.reading or request.fixed_lengths
                or not self.shared.ready_slots() or self.shared.model_never_wins()):
            return self.convert(request), True
        key = self.prepared_key(request)
        first = self.prepared.first_answer(key)
        if first is not None:
            return first
        budget = self.settings.space_budget_ms / 1000.0
        prepared = self.prepared.take(key, self._prepared_wait_s(budget), keep_claim=True)
        if prepared is not None:
            return prepared, True
        return self.lean(request, RunOptions(plan=SpacePlan.LEAN)), False

    def warm(self, request: ConversionRequest) -> None:
        """Where Space's first answer is the dictionary's conversion (no model ready yet, or a
        quick Space's lean answer), that conversion with its first segment's list, computed now
        so that the caches hold it."""
        if not request.reading or request.fixed_lengths:
            return
        if not self.shared.ready_slots() or (self.quick_space() and not self.shared.model_never_wins()
                                             and self.shared.model_never_first()):
            settled_first_listed(self.base.convert(request))

    def lean(self, request: ConversionRequest, run: RunOptions) -> list[Segment]:
        """Quick Space's first answer, with no model work. Where the model's text can never come
        first (model_never_first: the default's infinite margin) that answer's preedit is the
        dictionary's whatever the ranking, so it is the dictionary's own conversion: the
        ranking's n-gram scores and alignments, which only order the rest of the list, were
        half of a Space typed right after a burst (docs/benchmarks.md), and the refined
        conversion that follows puts the model's texts in the lists."""
        if self.shared.model_never_first():
            return self.base.convert(request)
        return self.converted(request, run)

    def quick_space(self) -> bool:
        """Whether Space answers lean first. Only with a Space budget: without one (the
        downloaded models' default) Space does all of the model work, which takes 0.7-2 s on 2
        cores and would come too late to replace a first answer (QUICK_SPACE_LIMIT_S); those
        users downloaded the model for that answer."""
        return (self.settings.quick_space and self.settings.scheme == "rerank"
                and math.isfinite(self.settings.space_budget_ms))

    def refined_conversion(self, request: ConversionRequest, ctx: JobContext | None = None) -> list[Segment] | None:
        """The conversion a Space that waited would have shown, after convert_quick answered
        lean: within the Space budget (counted from this call, and no later than ctx's
        deadline), a preparation under way first waited for up to its share of it, as Space
        itself does. None: nothing to add (no budget: convert_quick was final), or superseded."""
        budget = self.settings.space_budget_ms / 1000.0
        if not request.reading or request.fixed_lengths or not self.shared.ready_slots() or math.isinf(budget):
            return None
        limit = min(budget, ctx.remaining()) if ctx is not None else budget
        return self._converted_within(request, limit, ctx.cancelled if ctx is not None else None)

    @staticmethod
    def _prepared_wait_s(limit: float) -> float:
        """How long a Space with `limit` seconds waits for its preparation still under way: a
        share of it (then it converts within what is left), or the cap when it has none."""
        return PREPARED_WAIT_SHARE * limit if math.isfinite(limit) else PREPARED_WAIT_CAP_S
