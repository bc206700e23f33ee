"""Explicit conversion's candidate list: the lattice N-best and the model's texts, ranked.

Candidates come from the lattice N-best (with learning and user dictionary, which the base
converter already merges) and the model (greedy and beam), ranked by one score of lattice path
cost, model NLL (one batched scorer pass), n-gram and learning; or, with scheme "verify",
Zenzai-style verification of the lattice's best (verify.py). How much model work a Space gets is
planned from the stage timings within its budget (SpacePlan); RunOptions says how a run goes.
"""

from __future__ import annotations

import logging
import time
from dataclasses import replace

from karukan_engine.conversion.chunking import chunk_left_context, split_chunks
from karukan_engine.conversion.fused.live_text import LiveConversion, presentable
from karukan_engine.conversion.fused.run_options import SPACE, RunOptions, SpacePlan
from karukan_engine.conversion.fused.shared import FusionShared
from karukan_engine.conversion.model_slot import ModelSlot
from karukan_engine.conversion.ranking import PLACED_BY_SCORE, Evidence, rank
from karukan_engine.conversion.verify import verify_draft
from karukan_engine.core.candidates import unique_surfaces
from karukan_engine.core.types import Candidate, ConversionRequest, Source
from karukan_engine.neural.errors import NeuralError
from karukan_engine.scheduling.deadline import Option
from karukan_engine.scheduling.scheduler import Cancelled

log = logging.getLogger(__name__)

# Stage names of explicit conversion's model work in the timing predictor (deadline.py).
SPACE_GREEDY = "space/greedy"  # per reading character of the chunk the greedy text converts
SPACE_BEAM = "space/beam"      # per reading character of the chunk the beam converts
SPACE_SCORE = "space/score"    # per surface character the NLL pass scores


class SpaceRanking:
    def __init__(self, shared: FusionShared, live: LiveConversion) -> None:
        self.shared = shared
        self.live = live   # the text of the chunks before the one the model converts
        self.base = shared.base
        self.settings = shared.settings

    def candidates(self, request: ConversionRequest, n: int, run: RunOptions = SPACE) -> list[Candidate]:
        if n <= 0:
            return []
        if run.started is None:
            run = replace(run, started=time.perf_counter())
        base = self.base.candidates(request, max(n, self.settings.lattice_nbest))
        slots = self.shared.ready_slots()
        if not slots or not request.reading:
            return base[:n]
        try:
            if self.settings.scheme == "verify" and self.shared.aligner is not None:
                return self._verified(slots[0], request, base)[:n]
            run.checkpoint()
            ranked = self.reranked(slots[0], request, base, n, run)
            if self.shared.chosen_before(request, base):
                # the user's last choice for exactly this reading (after this context, if one was
                # made there) leads, whatever the weights (as in live conversion and the verify
                # scheme); the base converter puts it first
                ranked = unique_surfaces([base[0], *ranked])
            return ranked[:n]
        except NeuralError as exc:
            if run.raise_model_errors:
                raise
            log.warning("model conversion failed: %s", type(exc).__name__)
            return base[:n]

    def model_candidates(self, slot: ModelSlot, request: ConversionRequest, beam: bool = True,
                         greedy: bool = True, run: RunOptions = SPACE) -> list[Candidate]:
        """The model's greedy and (with `beam`) beam outputs for the trailing chunk (earlier
        chunks keep their live text). Unarbitrated: the ranking weighs them, so the pool is the
        same whatever the weights (benchmarks/fused_quality.py fits the weights on one gathered
        pool). greedy False: the greedy text only if it was decoded lately (typing did)."""
        chunks = split_chunks(request.reading, self.settings.chunk_limits)
        if not chunks or not chunks[-1].japanese:
            return []
        head_reading = "".join(c.text for c in chunks[:-1])
        if head_reading and not greedy:
            head = self.live.quick(ConversionRequest(head_reading, request.left_context))
        else:
            head = self.live.text(ConversionRequest(head_reading, request.left_context)) if head_reading else ""
        tail = chunks[-1].text
        context = chunk_left_context(request.left_context, [head], self.settings.context_chars)
        max_new = self.shared.max_new_for(tail)
        run.checkpoint()
        if greedy:
            started = time.perf_counter()
            found = slot.greedy(tail, context, max_new, None, run.should_stop)
            if run.timed and not slot.last_call_atypical():
                self.shared.timings.observe(SPACE_GREEDY, time.perf_counter() - started, len(tail))
        else:
            found = slot.remembered_greedy(tail, context, max_new)
        texts = [found.text] if found is not None else []
        if beam:
            run.checkpoint()
            started = time.perf_counter()
            texts += self._beam_texts(slot, tail, context, run)
            if run.timed:
                self.shared.timings.observe(SPACE_BEAM, time.perf_counter() - started, len(tail))
        return [Candidate(head + text, source=Source.MODEL) for text in texts if presentable(text)]

    def _beam_texts(self, slot: ModelSlot, tail: str, context: str, run: RunOptions) -> list[str]:
        """The beam's texts. A beam with a stop check is checked at every step, and one cut
        short ends the run (scheduler.Cancelled), so a kept conversion has the whole beam."""
        stopped = False
        stop = run.should_stop

        def should_stop() -> bool:
            nonlocal stopped
            stopped = stopped or stop()
            return stopped

        found = slot.get().beam(tail, context, beam=self.settings.beam_width,
                                max_new=self.shared.max_new_for(tail),
                                should_stop=should_stop if stop is not None else None)
        if stopped:
            raise Cancelled()
        return [g.text for g in found]

    def reranked(self, slot: ModelSlot, request: ConversionRequest, base: list[Candidate], n: int,
                 run: RunOptions = SPACE) -> list[Candidate]:
        """The pool of `base` and the model's candidates, ranked, with the model work of
        run.plan (None: what the Space budget affords from run.started, or from now)."""
        if self.shared.model_never_wins():
            # Only learning and the pool's order can count: skip the NLL pass and alignments,
            # and the model's candidates too when the dictionary's fill the n shown before them.
            shown = unique_surfaces(c for c in base if c.source != Source.VARIANT)
            extra = [] if len(shown) >= n else self.model_candidates(slot, request, run=run)
            evidence = [Evidence(c, learning=_learning(c)) for c in unique_surfaces(base + extra)]
        else:
            plan = run.plan if run.plan is not None else self._space_plan(
                slot, request, base, time.perf_counter() if run.started is None else run.started)
            extra = self.model_candidates(slot, request, beam=plan.beam, greedy=plan.decodes, run=run)
            pool = unique_surfaces(base + extra)
            if self.settings.weights.keep_base_order and not any(c.source in PLACED_BY_SCORE for c in pool):
                # Nothing the score would place (no model text, nothing learned): the base's
                # order stands whatever the scores, so none is worked out (a quick Space's
                # alignments were half its time).
                evidence = [Evidence(c) for c in pool]
            else:
                evidence = self._weigh(slot, request, pool, score=plan.scores and self.settings.weights.uses_nll,
                                       run=run)
        return rank(evidence, len(request.reading), self.settings.weights)

    def _space_plan(self, slot: ModelSlot, request: ConversionRequest, base: list[Candidate],
                    started: float) -> SpacePlan:
        """How much model work explicit conversion can afford within the Space budget, best
        first (SpacePlan). Units: reading characters of the last chunk (greedy, beam), surface
        characters scored (NLL pass). A greedy text typing already decoded costs nothing, so it
        is not counted, nor is an NLL pass whose NLL no weight reads (it is skipped)."""
        chunks = split_chunks(request.reading, self.settings.chunk_limits)
        tail_chars = len(chunks[-1].text) if chunks else 0
        scored_chars = (sum(len(c.surface) for c in base if c.source != Source.VARIANT)
                        if self.settings.weights.uses_nll else 0)   # no NLL pass to pay for
        decoded = len(chunks) == 1 and slot.remembered_greedy(
            chunks[0].text, chunk_left_context(request.left_context, [""], self.settings.context_chars),
            self.shared.max_new_for(chunks[0].text)) is not None
        greedy = (SPACE_GREEDY, 0 if decoded else tail_chars)
        options = [Option(SpacePlan.BEAM, (greedy, (SPACE_BEAM, tail_chars), (SPACE_SCORE, scored_chars))),
                   Option(SpacePlan.SCORE, (greedy, (SPACE_SCORE, scored_chars))),
                   Option(SpacePlan.GREEDY, (greedy,))]
        remaining = self.settings.space_budget_ms / 1000.0 - (time.perf_counter() - started)
        choice = self.shared.chooser.choose(options, remaining)
        return choice.name if choice is not None else SpacePlan.LEAN

    def evidence(self, slot: ModelSlot, request: ConversionRequest, base: list[Candidate]) -> list[Evidence]:
        """Every candidate with what the ranking weighs (path cost, model NLL, n-gram score,
        learning), with all of the model work whatever the Space budget: what the fit sees."""
        return self._weigh(slot, request, unique_surfaces(base + self.model_candidates(slot, request)))

    def _weigh(self, slot: ModelSlot, request: ConversionRequest, pool: list[Candidate],
               score: bool = True, run: RunOptions = SPACE) -> list[Evidence]:
        """score False: no NLL pass, so no candidate carries the model's NLL (none is favoured)."""
        ranked = [c for c in pool if c.source != Source.VARIANT]
        surfaces = [c.surface for c in ranked]
        if score:
            run.checkpoint()
            started = time.perf_counter()
            nlls = slot.get().score_many(request.reading, request.left_context, surfaces)
            if run.timed:
                self.shared.timings.observe(SPACE_SCORE, time.perf_counter() - started, sum(map(len, surfaces)))
        else:
            nlls = [None] * len(surfaces)
        lms = self.shared.ngram_scores(request.left_context, surfaces)
        run.checkpoint()
        alignments = self.shared.alignments(request.reading, surfaces)
        evidence = [Evidence(c, a.cost if a is not None else None, nll, _learning(c), lm)
                    for c, a, nll, lm in zip(ranked, alignments, nlls, lms)]
        return evidence + [Evidence(c) for c in pool if c.source == Source.VARIANT]

    def _verified(self, slot: ModelSlot, request: ConversionRequest, base: list[Candidate]) -> list[Candidate]:
        if not base or base[0].source == Source.LEARNING:
            return base
        verified = verify_draft(slot, self.shared.aligner, request.reading, request.left_context,
                                base[0].surface, self.settings.verify_rounds)
        if verified == base[0].surface:
            return base
        return unique_surfaces([Candidate(verified, source=Source.MODEL)] + base)


def _learning(candidate: Candidate) -> float:
    return 1.0 if candidate.source == Source.LEARNING else 0.0
