"""The fused converter: dictionary lattice + neural model + learning behind one Converter.

- Live conversion (per key): chunked; a quick dictionary answer at once (`live_quick`) and the
  model's refinement (`live_refined`), which checks the key's time budget with the stage-timing
  predictor first and stops when the key is superseded. `live()` gives the best available text
  synchronously (the CLI path).
- Explicit conversion: candidates from the lattice N-best (with learning and user dictionary,
  which the base converter already merges) and the model (greedy and beam), ranked by
  one score of lattice path cost, model NLL (one batched scorer pass) and learning; or, with
  scheme "verify", Zenzai-style verification of the lattice's best (see verify.py).
- The best candidate is aligned back to dictionary words (align.py) so segments, per-segment
  candidates, resizing and learning keep working. Each segment's list is built when it is first
  read (LazyCandidates): Space shows one segment's list, not all of them.
- Prepared Space: `prepare` computes the explicit conversion on a scheduler worker while the
  user pauses, with all of the model work, and keeps it (prepared.py) under a key naming what it
  depends on; `convert` answers from it when the key matches. Stages check a stop callback in
  between (`_checkpoint`), so a newer key or more urgent work ends a preparation early.
Without a model (missing, still loading, failed) every call is the base converter's.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections import OrderedDict
from dataclasses import replace
from functools import partial
from typing import TYPE_CHECKING, Callable, Sequence

from karukan_engine.conversion.align import Aligner, Alignment
from karukan_engine.conversion.cache import ConversionCache
from karukan_engine.conversion.chunking import chunk_left_context, split_chunks
from karukan_engine.conversion.contracts import DictionaryConverter, EngineConverter
from karukan_engine.scheduling.deadline import BudgetChooser, Option, StageTimings
from karukan_engine.conversion.live import ChunkedLive
from karukan_engine.conversion.model_slot import ModelSlot
from karukan_engine.scheduling.prepared import PreparedConversions
from karukan_engine.conversion.ranking import Evidence, rank
from karukan_engine.scheduling.scheduler import Cancelled, JobContext
from karukan_engine.conversion.settings import ConversionSettings
from karukan_engine.conversion.suggest import DICTIONARY_LIMIT, blended, learned_completions, model_pool, suggestions
from karukan_engine.core.candidates import unique_surfaces
from karukan_engine.core.types import Candidate, Completion, ConversionRequest, LazyCandidates, Segment, Source
from karukan_engine.conversion.verify import verify_draft
from karukan_engine.kana import nfkc, to_katakana
from karukan_engine.lattice.candidate_filter import HIRAGANA_BY, KATAKANA_BY, bring_forward
from karukan_engine.lm.continuation import Continuer
from karukan_engine.neural.errors import NeuralError

if TYPE_CHECKING:
    from karukan_engine.conversion.factory import ConverterOptions

log = logging.getLogger(__name__)

# Stage names of explicit conversion's model work in the timing predictor (deadline.py).
SPACE_GREEDY = "space/greedy"  # per reading character of the chunk the greedy text converts
SPACE_BEAM = "space/beam"      # per reading character of the chunk the beam converts
SPACE_SCORE = "space/score"    # per surface character the NLL pass scores
# What warm_up converts: an everyday sentence of typical length, not anything the user typed.
WARM_UP_READING = "あしたのかいぎのしりょうをおくります"
ALIGNMENT_CACHE = 4096
# Spellings of a chunk from the lattice that the model weighs in live conversion.
LIVE_NBEST = 5
# Whole-reading candidates cut into each segment's alternatives (each costs one alignment).
OTHER_CANDIDATES_SPLIT = 5
# How long a Space waits for the preparation of its own conversion that is still running: this
# share of its Space budget, then it converts within what is left of the budget. The whole
# budget was too long: on a loaded 2-core machine a preparation (all of the model work) took
# ~400 ms, and Spaces 150 ms after the last key waited out their 100 ms for it, then converted
# lean: 136 ms p50 against 70 without preparing (docs/benchmarks.md, "Space prepared while the
# user pauses"). Without a budget the preparation does exactly Space's work, so waiting never
# costs more than starting over; the cap only bounds a stuck one.
PREPARED_WAIT_SHARE = 0.4
PREPARED_WAIT_CAP_S = 5.0
# The full plan: all of explicit conversion's model work (a preparation has no key waiting).
FULL_PLAN = Option("beam")
# Predictions offer the n-gram's continuation of the live text only when it is at least this
# likely (continuation and the end after it) and the reading has this many characters: chosen
# with benchmarks/continuation_eval.py on held-out chat (docs/benchmarks.md, "The model's
# continuation in predictions").
CONTINUATION_MIN_P = 0.3
CONTINUATION_MIN_READING = 2
# No model work beyond a greedy text typing decoded: a quick Space's first answer.
LEAN_PLAN = Option("lean")


class FusedConverter:
    """Implements LiveConverter (contracts.py) over a DictionaryConverter."""

    def __init__(self, base: DictionaryConverter, slots: Sequence[ModelSlot] = (),
                 settings: ConversionSettings = ConversionSettings(), lexicon=None, ngram=None) -> None:
        """slots: models best first (e.g. main, then light); lexicon: the system dictionary;
        ngram: a LoadHandle of the character n-gram (lm/char_ngram.py), or None."""
        self.base = base
        self.slots = list(slots)
        self.ngram = ngram
        self.settings = settings
        self.lexicon = lexicon
        self.aligner = Aligner(lexicon) if lexicon is not None else None
        self.cache: ConversionCache[str] = ConversionCache(settings.cache_capacity)
        self.chunks = ChunkedLive(self.cache, settings.chunk_limits, settings.context_chars)
        self.timings = StageTimings()
        self.chooser = BudgetChooser(self.timings)
        self._alignments: OrderedDict[tuple[str, str], Alignment | None] = OrderedDict()
        self._alignments_lock = threading.Lock()
        self._continuer: Continuer | None = None   # built from the n-gram once it is loaded
        self._continuer_lock = threading.Lock()
        self.prepared = PreparedConversions()

    # --- models ------------------------------------------------------------------------------

    def ready_slots(self) -> list[ModelSlot]:
        return [slot for slot in self.slots if slot.get() is not None]

    def model_ready(self) -> bool:
        """A model is loaded and its live text can win (LiveService queues refinements only
        then: with weights that give the model no say, each key would wake a worker for nothing)."""
        return not self.model_never_wins() and any(slot.get() is not None for slot in self.slots)

    def wait_for_model(self, timeout: float | None = None) -> bool:
        """Block until the first model finished loading; True when it is usable."""
        return bool(self.slots) and self.slots[0].wait(timeout) is not None

    @staticmethod
    def greedy_stage(slot: ModelSlot) -> str:
        return f"{slot.model_id}/greedy"

    # --- live conversion ---------------------------------------------------------------------

    def live(self, request: ConversionRequest) -> str:
        refined = self.live_refined(request)
        return refined if refined is not None else self.live_quick(request)

    def live_quick(self, request: ConversionRequest) -> str:
        """The answer a key gets at once: dictionary text, with chunks a model already refined."""
        model_ids = [slot.model_id for slot in self.ready_slots()]
        return self.chunks.quick(request.reading, request.left_context, self._dictionary_chunk, model_ids)

    def live_refined(self, request: ConversionRequest, ctx: JobContext | None = None) -> str | None:
        """The model's text, or None: no model, nothing fits the budget, or superseded."""
        if not request.reading or self.model_never_wins():
            return None
        slot = self._slot_for(request, ctx)
        if slot is None:
            return None
        stop = ctx.cancelled if ctx is not None else (lambda: False)

        owner = ctx.input_context if ctx is not None else None

        def model_chunk(reading: str, context: str) -> str:
            return self._model_chunk(slot, reading, context, owner, stop)

        try:
            return self.chunks.refined(request.reading, request.left_context, self._dictionary_chunk,
                                       model_chunk, slot.model_id, should_stop=stop)
        except NeuralError as exc:  # the dictionary text stays; never the reading in the log
            log.warning("live model conversion failed: %s", type(exc).__name__)
            return None

    def _slot_for(self, request: ConversionRequest, ctx: JobContext | None) -> ModelSlot | None:
        slots = self.ready_slots()
        if not slots or ctx is None:
            return slots[0] if slots else None
        options = []
        for slot in slots:
            pending = self.chunks.pending_model_chunks(request.reading, request.left_context,
                                                       self._dictionary_chunk, slot.model_id)
            options.append(Option(slot.model_id, ((self.greedy_stage(slot), len(pending)),)))
        choice = self.chooser.choose(options, ctx.remaining())
        if choice is None:
            return None
        return next(slot for slot in slots if slot.model_id == choice.name)

    def _dictionary_chunk(self, reading: str, context: str) -> str:
        return self.base.live(ConversionRequest(reading, context))

    def _model_chunk(self, slot: ModelSlot, reading: str, context: str, owner=None,
                     should_stop=None) -> str:
        """The chunk's live text; a superseded key leaves the shared decode batch at the next
        step (scheduler.Cancelled, which ends the job without a result)."""
        learned = self._learned_best(reading, context)
        if learned is not None:
            return learned
        started = time.perf_counter()
        generation = slot.greedy(reading, context, self.max_new_for(reading), owner, should_stop)
        dictionary_text = self._dictionary_chunk(reading, context)
        model_text = generation.text if generation is not None and _presentable(generation.text) else None
        text = self._arbitrate(slot, reading, context, dictionary_text, model_text)
        if not slot.last_call_atypical():
            # Per call: with the KV cache and the draft, a key costs about the same at any length.
            self.timings.observe(self.greedy_stage(slot), time.perf_counter() - started)
        return text

    def _arbitrate(self, slot: ModelSlot, reading: str, context: str, dictionary_text: str,
                   model_text: str | None) -> str:
        """The live text of a chunk: the fused score's choice among the dictionary's text, the
        lattice's other spellings of the chunk (homophones: 機会/機械) and the model's text, with
        the same weights as explicit conversion, so a weak model cannot put nonsense in the
        preedit. Without a model score only the dictionary's text and the model's compete."""
        weights = self.settings.weights
        model = slot.get()
        pool = [dictionary_text]
        if weights.uses_model_score and model is not None:
            others = self.base.candidates(ConversionRequest(reading, context), LIVE_NBEST)
            pool += [c.surface for c in others if c.source != Source.VARIANT]
        if model_text is not None:
            pool.append(model_text)
        pool = list(dict.fromkeys(text for text in pool if text))
        if len(pool) == 1:
            return dictionary_text
        nlls = (model.score_many(reading, context, pool) if weights.uses_nll and model is not None
                else [None] * len(pool))
        evidence = [Evidence(Candidate(text, source=Source.MODEL if text == model_text else Source.DICTIONARY),
                             self.path_cost(reading, text), nll, lm=lm)
                    for text, nll, lm in zip(pool, nlls, self.ngram_scores(context, pool))]
        return rank(evidence, len(reading), weights)[0].surface

    def _loaded_ngram(self):
        """The character n-gram, or None while it loads, when it failed to, or without one
        (build_fused_converter gives one only when the weights use it)."""
        handle = self.ngram
        if handle is None or not handle.ready():
            if handle is not None and handle.done() and not handle.ready():
                # Once: a missing or damaged file leaves the ranking without the n-gram.
                log.warning("character n-gram unavailable (%s); ranking without it", handle.error)
                self.ngram = None
            return None
        return handle.wait(0)

    def ngram_scores(self, context: str, surfaces: Sequence[str]) -> list[float | None]:
        """The n-gram's log P of each surface after the context (None each without one)."""
        ngram = self._loaded_ngram()
        if ngram is None:
            return [None] * len(surfaces)
        return [float(v) for v in ngram.score_many([(s, context) for s in surfaces])]

    def model_never_wins(self) -> bool:
        """With no lattice, model or alignment weight the model's text can only tie the
        dictionary's (which then wins): the fitted weights say the model adds nothing live."""
        weights = self.settings.weights
        return weights.lattice == weights.unaligned == 0 and not weights.uses_model_score

    def max_new_for(self, reading: str) -> int:
        """Token budget of one conversion: a surface is rarely longer than its reading."""
        return min(self.settings.max_new_tokens, len(reading) + 8)

    def _learned_best(self, reading: str, context: str) -> str | None:
        """What the user chose for exactly this reading before wins over the model. A path that
        merely holds a learned word is the lattice's guess like any other: were it to win too,
        every chunk with a word the user once chose would keep the dictionary's text."""
        request = ConversionRequest(reading, context)
        top = self.base.candidates(request, 1)
        return top[0].surface if self._chosen_before(request, top) else None

    # --- explicit conversion -----------------------------------------------------------------

    def candidates(self, request: ConversionRequest, n: int) -> list[Candidate]:
        return self._candidates(request, n)

    def _candidates(self, request: ConversionRequest, n: int, started: float | None = None,
                    stop: Callable[[], bool] | None = None, plan: Option | None = None) -> list[Candidate]:
        """started: when the conversion began (perf_counter), for the Space budget. stop: a
        preparation's check between stages (it also means the full plan, untimed, and a model
        error raised instead of answered by the dictionary). plan: the model work to do, instead
        of what the budget affords."""
        if n <= 0:
            return []
        started = time.perf_counter() if started is None else started
        base = self.base.candidates(request, max(n, self.settings.lattice_nbest))
        slots = self.ready_slots()
        if not slots or not request.reading:
            return base[:n]
        model = slots[0].get()
        try:
            if self.settings.scheme == "verify" and self.aligner is not None:
                return self._verified(slots[0], request, base)[:n]
            _checkpoint(stop)
            ranked = self._reranked(slots[0], model, request, base, n, started, stop, plan)
            if self._chosen_before(request, base):
                # the user's last choice for exactly this reading (after this context, if one was
                # made there) leads, whatever the weights (as in live conversion and the verify
                # scheme); the base converter puts it first
                ranked = unique_surfaces([base[0], *ranked])
            return ranked[:n]
        except NeuralError as exc:
            if stop is not None:
                raise   # a preparation keeps nothing; Space tries for itself
            log.warning("model conversion failed: %s", type(exc).__name__)
            return base[:n]

    def _chosen_before(self, request: ConversionRequest, base: Sequence[Candidate]) -> bool:
        learning = self.base.learning
        return bool(base and base[0].source == Source.LEARNING and learning is not None
                    and base[0].surface in learning.lookup(request.reading, request.left_context))

    def model_candidates(self, slot: ModelSlot, model, request: ConversionRequest,
                         beam: bool = True, greedy: bool = True,
                         stop: Callable[[], bool] | None = None) -> list[Candidate]:
        """The model's greedy and (with `beam`) beam outputs for the trailing chunk (earlier
        chunks keep their live text). Unarbitrated: the ranking weighs them, so the pool is the
        same whatever the weights (benchmarks/fused_quality.py fits the weights on one gathered
        pool). greedy False: the greedy text only if it was decoded lately (typing did).
        stop: a preparation's check (greedy steps and between stages); its timings are not
        Space's, so they are not recorded."""
        chunks = split_chunks(request.reading, self.settings.chunk_limits)
        if not chunks or not chunks[-1].japanese:
            return []
        head_reading = "".join(c.text for c in chunks[:-1])
        if head_reading and not greedy:
            head = self.live_quick(ConversionRequest(head_reading, request.left_context))
        else:
            head = self.live(ConversionRequest(head_reading, request.left_context)) if head_reading else ""
        tail = chunks[-1].text
        context = chunk_left_context(request.left_context, [head], self.settings.context_chars)
        timed = stop is None
        _checkpoint(stop)
        if greedy:
            started = time.perf_counter()
            found = slot.greedy(tail, context, self.max_new_for(tail), None, stop)
            if timed and not slot.last_call_atypical():
                self.timings.observe(SPACE_GREEDY, time.perf_counter() - started, len(tail))
        else:
            found = slot.remembered_greedy(tail, context, self.max_new_for(tail))
        texts = [found.text] if found is not None else []
        if beam:
            _checkpoint(stop)
            started = time.perf_counter()
            texts += self._beam_texts(model, tail, context, stop)
            if timed:
                self.timings.observe(SPACE_BEAM, time.perf_counter() - started, len(tail))
        return [Candidate(head + text, source=Source.MODEL) for text in texts if _presentable(text)]

    def _beam_texts(self, model, tail: str, context: str, stop: Callable[[], bool] | None) -> list[str]:
        """The beam's texts. A preparation's beam (stop) is checked at every step, and one cut
        short ends the preparation (scheduler.Cancelled), so a kept conversion has the whole beam."""
        stopped = False

        def should_stop() -> bool:
            nonlocal stopped
            stopped = stopped or stop()
            return stopped

        found = model.beam(tail, context, beam=self.settings.beam_width, max_new=self.max_new_for(tail),
                           should_stop=should_stop if stop is not None else None)
        if stopped:
            raise Cancelled()
        return [g.text for g in found]

    def _reranked(self, slot: ModelSlot, model, request: ConversionRequest, base: list[Candidate],
                  n: int, started: float | None = None, stop: Callable[[], bool] | None = None,
                  plan: Option | None = None) -> list[Candidate]:
        """started: when the conversion began (perf_counter), for the Space budget; None: now.
        stop: a preparation's check; it takes the full plan, whatever the budget. plan: the
        model work to do (None: as above)."""
        if self.model_never_wins():
            # Only learning and the pool's order can count: skip the NLL pass and alignments,
            # and the model's candidates too when the dictionary's fill the n shown before them.
            shown = unique_surfaces(c for c in base if c.source != Source.VARIANT)
            extra = [] if len(shown) >= n else self.model_candidates(slot, model, request, stop=stop)
            evidence = [Evidence(c, learning=_learning(c)) for c in unique_surfaces(base + extra)]
        else:
            if plan is None:
                plan = FULL_PLAN if stop is not None else self._space_plan(
                    slot, request, base, time.perf_counter() if started is None else started)
            extra = self.model_candidates(slot, model, request, beam=plan.name == "beam",
                                          greedy=plan.name != "lean", stop=stop)
            evidence = self._weigh(model, request, unique_surfaces(base + extra),
                                   score=plan.name in ("beam", "score") and self.settings.weights.uses_nll,
                                   stop=stop)
        return rank(evidence, len(request.reading), self.settings.weights)

    def _space_plan(self, slot: ModelSlot, request: ConversionRequest, base: list[Candidate],
                    started: float) -> Option:
        """How much model work explicit conversion can afford within the Space budget, best
        first: the greedy text, the beam and the NLL pass ("beam"); the greedy text and the NLL
        pass ("score"); the greedy text alone ("greedy"); or none of them ("lean": lattice,
        n-gram, learning, and the greedy text only if typing decoded it). Units: reading
        characters of the last chunk (greedy, beam), surface characters scored (NLL pass). A
        greedy text typing already decoded costs nothing, so it is not counted, nor is an NLL
        pass whose NLL no weight reads (it is skipped)."""
        chunks = split_chunks(request.reading, self.settings.chunk_limits)
        tail_chars = len(chunks[-1].text) if chunks else 0
        scored_chars = (sum(len(c.surface) for c in base if c.source != Source.VARIANT)
                        if self.settings.weights.uses_nll else 0)   # no NLL pass to pay for
        decoded = len(chunks) == 1 and slot.remembered_greedy(
            chunks[0].text, chunk_left_context(request.left_context, [""], self.settings.context_chars),
            self.max_new_for(chunks[0].text)) is not None
        greedy = (SPACE_GREEDY, 0 if decoded else tail_chars)
        options = [Option("beam", (greedy, (SPACE_BEAM, tail_chars), (SPACE_SCORE, scored_chars))),
                   Option("score", (greedy, (SPACE_SCORE, scored_chars))),
                   Option("greedy", (greedy,))]
        remaining = self.settings.space_budget_ms / 1000.0 - (time.perf_counter() - started)
        return self.chooser.choose(options, remaining) or Option("lean")

    def evidence(self, slot: ModelSlot, model, request: ConversionRequest, base: list[Candidate]) -> list[Evidence]:
        """Every candidate with what the ranking weighs (path cost, model NLL, n-gram score,
        learning), with all of the model work whatever the Space budget: what the fit sees."""
        return self._weigh(model, request, unique_surfaces(base + self.model_candidates(slot, model, request)))

    def _weigh(self, model, request: ConversionRequest, pool: list[Candidate],
               score: bool = True, stop: Callable[[], bool] | None = None) -> list[Evidence]:
        """score False: no NLL pass, so no candidate carries the model's NLL (none is favoured).
        stop: a preparation's check (untimed, before the NLL pass and the alignments)."""
        ranked = [c for c in pool if c.source != Source.VARIANT]
        surfaces = [c.surface for c in ranked]
        if score:
            _checkpoint(stop)
            started = time.perf_counter()
            nlls = model.score_many(request.reading, request.left_context, surfaces)
            if stop is None:
                self.timings.observe(SPACE_SCORE, time.perf_counter() - started, sum(map(len, surfaces)))
        else:
            nlls = [None] * len(surfaces)
        lms = self.ngram_scores(request.left_context, surfaces)
        _checkpoint(stop)
        alignments = self.alignments(request.reading, surfaces)
        evidence = [Evidence(c, a.cost if a is not None else None, nll, _learning(c), lm)
                    for c, a, nll, lm in zip(ranked, alignments, nlls, lms)]
        return evidence + [Evidence(c) for c in pool if c.source == Source.VARIANT]

    def _verified(self, slot: ModelSlot, request: ConversionRequest, base: list[Candidate]) -> list[Candidate]:
        if not base or base[0].source == Source.LEARNING:
            return base
        verified = verify_draft(slot, self.aligner, request.reading, request.left_context,
                                base[0].surface, self.settings.verify_rounds)
        if verified == base[0].surface:
            return base
        return unique_surfaces([Candidate(verified, source=Source.MODEL)] + base)

    def alignment(self, reading: str, surface: str) -> Alignment | None:
        """The dictionary words that read `reading` and write `surface` (cached; None: none)."""
        return self.alignments(reading, [surface])[0]

    def alignments(self, reading: str, surfaces: Sequence[str]) -> list[Alignment | None]:
        """alignment() of each surface; those not cached are aligned in one search (they share
        their beginnings)."""
        if self.aligner is None:
            return [None] * len(surfaces)
        found: dict[str, Alignment | None] = {}
        with self._alignments_lock:
            for surface in surfaces:
                key = (reading, surface)
                if key in self._alignments:
                    self._alignments.move_to_end(key)
                    found[surface] = self._alignments[key]
        missing = list(dict.fromkeys(s for s in surfaces if s not in found))
        if missing:
            aligned = self.aligner.align_many(reading, missing)
            found.update(zip(missing, aligned))
            with self._alignments_lock:
                for surface, alignment in zip(missing, aligned):
                    self._alignments[(reading, surface)] = alignment
                while len(self._alignments) > ALIGNMENT_CACHE:
                    self._alignments.popitem(last=False)
        return [found[surface] for surface in surfaces]

    def path_cost(self, reading: str, surface: str) -> int | None:
        """Dictionary path cost of writing `reading` as `surface` (None: not writable so)."""
        found = self.alignment(reading, surface)
        return found.cost if found is not None else None

    def convert(self, request: ConversionRequest) -> list[Segment]:
        if not request.reading or request.fixed_lengths or not self.ready_slots():
            return self.base.convert(request)
        return self._converted_within(request, self.settings.space_budget_ms / 1000.0)

    def _converted_within(self, request: ConversionRequest, limit: float,
                          superseded: Callable[[], bool] | None = None) -> list[Segment] | None:
        """Space's conversion within `limit` seconds (its budget, or less): a preparation of it
        under way waited for up to its share (_prepared_wait_s), then the model work that fits
        what is left. None: `superseded` said so after that wait."""
        began = time.perf_counter()
        found = self.prepared.take(self.prepared_key(request), self._prepared_wait_s(limit))
        if found is not None or (superseded is not None and superseded()):
            return found
        if not math.isfinite(limit):
            return self._converted(request, began)
        # the plan gets what is left of `limit`: as if Space had started (budget - limit) before
        return self._converted(request, began - (self.settings.space_budget_ms / 1000.0 - limit))

    def _converted(self, request: ConversionRequest, started: float | None = None,
                   stop: Callable[[], bool] | None = None, plan: Option | None = None) -> list[Segment]:
        ranked = self._candidates(request, self.settings.num_candidates, started, stop, plan)
        if not ranked:
            return self.base.convert(request)
        return self.segments_for(request, ranked[0], ranked[1:], stop)

    # --- prepared Space ----------------------------------------------------------------------

    def can_prepare(self) -> bool:
        return self.settings.prepare_space and bool(self.ready_slots())

    def prepared_key(self, request: ConversionRequest) -> tuple:
        """Everything convert(request) depends on beyond the fixed settings and dictionary: the
        request, the models ready, whether the n-gram is, and the user's data (a choice learned
        or a word added since a preparation makes it stale)."""
        ngram = self.ngram
        return (request.reading, request.left_context, request.learn,
                tuple(slot.model_id for slot in self.ready_slots()),
                ngram is not None and ngram.ready(), self.base.data_version())

    def prepare(self, request: ConversionRequest, ctx: JobContext | None = None) -> bool:
        """Compute convert(request) with all of the model work (no key is waiting) and keep
        it for the Space that asks for it. Stops between stages once ctx is superseded (unless
        that Space is waiting for this very result) or outranked by more urgent work."""
        if not self.can_prepare() or not request.reading or request.fixed_lengths:
            return False
        return self._prepare(request, ctx)

    def _prepare(self, request: ConversionRequest, ctx: JobContext | None) -> bool:
        key = self.prepared_key(request)
        preparation = self.prepared.start(key)
        if preparation is None:
            return True   # prepared already, or under way on another worker
        stop = preparation.stop(ctx.cancelled if ctx is not None else (lambda: False))
        outranked = ctx.outranked if ctx is not None else (lambda: False)

        def should_stop() -> bool:
            return stop() or (outranked() and not preparation.claimed.is_set())

        try:
            if self._quick_space():
                # A quick Space that comes before the end shows this at once (15-20 ms of work).
                preparation.lean = tuple(_listed(self._converted(request, None, should_stop, LEAN_PLAN)))
            segments = _listed(self._converted(request, None, should_stop))
            if self.prepared_key(request) != key:
                return False   # the user's data changed meanwhile: this result may be stale
            self.prepared.finish(preparation, segments)
            return True
        except (Cancelled, NeuralError):
            return False
        finally:
            self.prepared.abandon(preparation)   # no-op once finished

    # --- quick Space ---------------------------------------------------------------------------

    def convert_quick(self, request: ConversionRequest) -> tuple[list[Segment], bool]:
        """Space's conversion without waiting for the model: the prepared one (True: final), or,
        while model work is left, the lean one: lattice, n-gram, learning and a greedy text typing
        decoded (False: refined_conversion does the rest). A preparation under way gives its
        lean conversion, which it computes first; before that, it is waited for as long as
        convert() would (the lean conversion would compete with it for the interpreter). Either
        way it stays claimed, for refined_conversion."""
        if (not self._quick_space() or not request.reading or request.fixed_lengths
                or not self.ready_slots() or self.model_never_wins()):
            return self.convert(request), True
        key = self.prepared_key(request)
        first = self.prepared.first_answer(key)
        if first is not None:
            return first
        budget = self.settings.space_budget_ms / 1000.0
        prepared = self.prepared.take(key, self._prepared_wait_s(budget), keep_claim=True)
        if prepared is not None:
            return prepared, True
        return self._converted(request, plan=LEAN_PLAN), False

    def _quick_space(self) -> bool:
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
        if not request.reading or request.fixed_lengths or not self.ready_slots() or math.isinf(budget):
            return None
        limit = min(budget, ctx.remaining()) if ctx is not None else budget
        return self._converted_within(request, limit, ctx.cancelled if ctx is not None else None)

    @staticmethod
    def _prepared_wait_s(limit: float) -> float:
        """How long a Space with `limit` seconds waits for its preparation still under way: a
        share of it (then it converts within what is left), or the cap when it has none."""
        return PREPARED_WAIT_SHARE * limit if math.isfinite(limit) else PREPARED_WAIT_CAP_S

    def segments_for(self, request: ConversionRequest, best: Candidate,
                     others: Sequence[Candidate] = (), stop: Callable[[], bool] | None = None) -> list[Segment]:
        """Segments whose first candidates spell `best`, cut where the dictionary would cut.

        Each segment's alternatives: the same span of the other whole-reading candidates (where
        they cut there too), then the lattice's candidates for exactly that span. stop: a
        preparation's check between alignments.
        """
        reading = request.reading
        alignment = self.alignment(reading, best.surface)
        if alignment is None:
            rest = self.base.candidates(request, self.settings.num_candidates)
            return [Segment(reading, tuple(unique_surfaces([best, *others] + rest)))]
        spans = alignment.segments(self.lexicon.segmenter)
        bounds = _span_bounds([r for r, _ in spans])
        alternatives: list[list[Candidate]] = [[] for _ in spans]
        for other in others[:OTHER_CANDIDATES_SPLIT]:
            if other.source == Source.VARIANT:
                continue
            _checkpoint(stop)
            cuts = _surface_offsets(self.alignment(reading, other.surface))
            for index, (lo, hi) in enumerate(bounds):
                if lo in cuts and hi in cuts:
                    alternatives[index].append(Candidate(other.surface[cuts[lo]:cuts[hi]], source=other.source))
        fixed = tuple(len(r) for r, _ in spans)
        _checkpoint(stop)
        base_segments = self.base.convert(
            ConversionRequest(reading, request.left_context, fixed, request.learn))
        listed = [s.reading for s in base_segments] == [r for r, _ in spans]
        if not listed:
            base_segments = [Segment(r, (Candidate(s, source=best.source),)) for r, s in spans]
        # Each list is built when it is first read, as the lattice converter's are: Space shows
        # the focused segment's list only, and building every one took most of a conversion.
        segments = []
        for (r, s), alts, seg in zip(spans, alternatives, base_segments):
            head = Candidate(s, best.annotation, best.source)
            build = partial(self._segment_list, r, head, alts, seg.candidates if listed else None)
            segments.append(Segment(r, LazyCandidates(head, build)))
        return segments

    def _segment_list(self, reading: str, best: Candidate, others: Sequence[Candidate],
                      listed: Sequence[Candidate] | None) -> list[Candidate]:
        dictionary = self.base.dictionary
        words = {e.surface for e in dictionary.lookup(reading)} if dictionary else set()
        return list(segment_list(reading, best, others, listed, words))

    # --- suggestions --------------------------------------------------------------------------

    def suggestions(self, request: ConversionRequest, n: int = 6) -> list[Candidate]:
        """Completions of what was typed: learned ones, then dictionary predictive search."""
        return suggestions(request.reading, self.base.learning, self.base.dictionary, limit=n)

    def refined_suggestions(self, request: ConversionRequest, n: int = 6,
                            ctx: JobContext | None = None) -> list[Candidate] | None:
        """The completions with the model's view of them, or None: no model, nothing it adds,
        superseded (ctx) or over ctx's budget. Learned completions first, then the n-gram's
        kana continuation of the live text when it is sure of it (lm/continuation.py), then the
        dictionary's completions ranked again by the model given the left context
        (suggest.blended): one model score per pooled completion, checked between them."""
        slots = self.ready_slots()
        model = slots[0].get() if slots else None
        if model is None or not request.reading:
            return None
        learned = learned_completions(request.reading, self.base.learning, n)
        continued = self.continuations(request)
        pool = model_pool(request.reading, learned, self.base.dictionary)
        if len(pool) < 2 and not continued:
            return None
        ranked_pool = [completion for _cost, completion in pool]
        if len(pool) >= 2:
            try:
                scorer = model.scorer()
                nats = []
                for _cost, completion in pool:
                    if ctx is not None and (ctx.cancelled() or ctx.remaining() <= 0):
                        return None
                    per_char = scorer.score(completion.reading, request.left_context, completion.surface)
                    nats.append(per_char * len(nfkc(completion.surface)))
                ranked_pool = blended(pool, nats)
            except NeuralError as exc:
                log.warning("model suggestions failed: %s", type(exc).__name__)
                if not continued:
                    return None
        ranked = unique_surfaces(learned, continued, ranked_pool,
                                 limit=len(learned) + len(continued) + DICTIONARY_LIMIT)
        return ranked[:n]

    def continuations(self, request: ConversionRequest) -> list[Completion]:
        """The n-gram's kana continuation of the live text of `request`, as a completion of
        the reading, when its probability reaches CONTINUATION_MIN_P (none while the n-gram
        loads, or without one)."""
        ngram = self._loaded_ngram()
        if ngram is None or len(request.reading) < CONTINUATION_MIN_READING:
            return []
        with self._continuer_lock:
            if self._continuer is None or self._continuer.ngram is not ngram:
                self._continuer = Continuer(ngram)
            continuer = self._continuer
        text = self.live_quick(request)
        return [Completion(text + c.text, source=Source.MODEL, reading=request.reading + c.text)
                for c in continuer.continuations(text, request.left_context, limit=1)
                if c.probability >= CONTINUATION_MIN_P]

    # --- learning ----------------------------------------------------------------------------

    def record(self, pairs: Sequence[tuple[str, str]], left_context: str = "") -> None:
        self.base.record(pairs, left_context)
        # A learned choice changes what chunks holding its reading should become (in every
        # session: the cache is shared); the other cached chunks stay valid.
        readings = [reading for reading, _ in pairs if reading]
        self.cache.discard_if(lambda key: any(r in key.reading for r in readings))

    def save(self) -> bool:
        """Write the base converter's pending learning now. True when everything is on disk."""
        return self.base.save()

    def warm_up(self) -> None:
        """One explicit conversion once the model is loaded (engine service, on a thread of its
        own): it creates the model's contexts and measures every Space stage, so the user's
        first Space is planned from timings instead of trying every stage cold."""
        if not self.wait_for_model():
            return
        if self.ngram is not None:
            self.ngram.settle()   # loaded or failed: either way the ranking is what Space will get
        try:
            self.candidates(ConversionRequest(WARM_UP_READING), self.settings.num_candidates)
        except Exception as exc:  # never the engine's problem: the first Space measures instead
            log.warning("Space warm-up failed: %s", type(exc).__name__)

    def close(self) -> None:
        for slot in self.slots:
            slot.close()
        # The base (a LatticeConverter) flushes its debounced learning on close.
        self.base.close()


def _listed(segments: list[Segment]) -> list[Segment]:
    """`segments` with the first one's candidate list built: the list Space shows, so that a
    prepared Space does not build it."""
    if segments:
        len(segments[0].candidates)
    return segments


def _checkpoint(stop: Callable[[], bool] | None) -> None:
    """Between stages of a preparation: end it (scheduler.Cancelled) when it should stop."""
    if stop is not None and stop():
        raise Cancelled()


def _span_bounds(readings: Sequence[str]) -> list[tuple[int, int]]:
    bounds, start = [], 0
    for reading in readings:
        bounds.append((start, start + len(reading)))
        start += len(reading)
    return bounds


def _surface_offsets(alignment: Alignment | None) -> dict[int, int]:
    """Reading offset -> surface offset at every word boundary of an alignment."""
    if alignment is None:
        return {}
    offsets, r, s = {0: 0}, 0, 0
    for word in alignment.words:
        r += len(word.reading)
        s += len(word.surface)
        offsets[r] = s
    return offsets


def _learning(candidate: Candidate) -> float:
    return 1.0 if candidate.source == Source.LEARNING else 0.0


def _presentable(text: str) -> bool:
    """Model text fit to show: not empty, no broken UTF-8 (U+FFFD), no control characters."""
    return bool(text) and all((ch.isprintable() or ch == "\u3000") and ch != "\ufffd" for ch in text)


def build_fused_converter(base: DictionaryConverter, options: ConverterOptions) -> EngineConverter:
    """The fused pipeline over `base`, with the configured model loading in the background.

    options: factory.ConverterOptions. Without `require_model`, a missing model leaves the
    dictionary converter and a model that fails to load leaves a FusedConverter that answers like
    `base`. With it (the user named the model), either raises a NeuralError instead.
    """
    required = options.require_model
    try:
        from karukan_engine.neural.background import load_in_background
        from karukan_engine.neural.errors import NeuralError
        from karukan_engine.neural.registry import resolve_model
    except ImportError as exc:
        if required:
            raise NeuralError(f"the neural backend is not installed ({exc.name})") from exc
        log.warning("neural backend not installed; dictionary only")
        return base
    try:
        resolved = resolve_model(options.model_id)  # fails fast (no thread) when not installed
    except NeuralError as exc:
        if required:
            raise
        log.warning("no model for the fused converter (%s); dictionary only", type(exc).__name__)
        return base
    model_id = resolved.entry.id if resolved.entry is not None else (options.model_id or "default")
    settings = options.conversion or ConversionSettings.from_config()
    settings = settings.for_model(model_id)
    if options.batch:
        settings = replace(settings, space_budget_ms=math.inf)
    handle = load_in_background(options.model_id) if options.model_id else _load_default()
    if required:
        handle.wait()   # raises the load error itself, before a slot would log a fall back
    slots = [ModelSlot(handle, model_id)]
    if settings.light_model:
        # A light model is optional: if it fails to load, its slot simply stays empty.
        slots.append(ModelSlot(load_in_background(settings.light_model), settings.light_model))
    ngram = bundled_ngram() if settings.weights.ngram else None   # loaded only when it counts
    converter = FusedConverter(base, slots, settings, lexicon=base.dictionary, ngram=ngram)
    if not options.load_in_background:
        converter.wait_for_model()
        if converter.ngram is not None:
            converter.ngram.settle()
    elif not math.isinf(settings.space_budget_ms):
        threading.Thread(target=converter.warm_up, name="karukan-space-warm-up", daemon=True).start()
    return converter


def bundled_ngram():
    """A LoadHandle of the bundled character n-gram, loading on a thread of its own."""
    from karukan_engine.lm.bundled import shared_ngram

    return shared_ngram()


def _load_default():
    from karukan_engine.neural.background import LoadHandle
    from karukan_engine.neural.registry import load_model_by_id_or_path

    return LoadHandle(lambda: load_model_by_id_or_path(None))


def segment_list(reading: str, best: Candidate, others: Sequence[Candidate],
                 listed: Sequence[Candidate] | None, words: set[str]) -> tuple[Candidate, ...]:
    """One segment's candidates: the best; the spans of the other whole-reading candidates that
    come from the model or the user, or that are one dictionary word for the span which the list
    does not show on its first page (`words`: the segment's own search may have priced it out,
    e.g. a prefix at its end); then the dictionary's list for the span (`listed`, filtered and
    ordered by shape and cost: lattice/candidate_filter.py); then the other paths' spans, which
    the list ranks lower or filtered out (None: the dictionary has no list for this span). The
    kana forms stay on the first page."""
    known = {c.surface for c in (listed or ())[:KATAKANA_BY]}   # on the list's first page
    ahead = [c for c in others if c.source != Source.DICTIONARY or (c.surface in words and c.surface not in known)]
    merged = unique_surfaces([best], ahead, listed or (), others)
    for form, place in ((reading, HIRAGANA_BY), (to_katakana(reading), KATAKANA_BY)):
        shown = next((c for c in merged if c.surface == form), None)
        merged = bring_forward(merged, shown, place)
    return tuple(merged)
