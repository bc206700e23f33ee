"""The fused converter's live conversion: the text a key shows, chunk by chunk.

A quick dictionary answer at once (`quick`), and the model's refinement (`refined`), which checks
the key's time budget with the stage-timing predictor first and stops when the key is
superseded. `text()` gives the best available text synchronously (the CLI path). A chunk's
model text competes with the lattice's spellings of it under the explicit conversion's weights.
"""

from __future__ import annotations

import logging
import time
from typing import Callable, Hashable, Sequence

from karukan_engine.conversion.cache import ConversionCache
from karukan_engine.conversion.fused.shared import FusionShared
from karukan_engine.conversion.live import ChunkedLive
from karukan_engine.conversion.model_slot import ModelSlot
from karukan_engine.conversion.ranking import Evidence, rank
from karukan_engine.core.types import Candidate, ConversionRequest, Source
from karukan_engine.neural.errors import NeuralError
from karukan_engine.scheduling.deadline import Option
from karukan_engine.scheduling.scheduler import JobContext

log = logging.getLogger(__name__)

# Spellings of a chunk from the lattice that the model weighs in live conversion.
LIVE_NBEST = 5


class LiveConversion:
    def __init__(self, shared: FusionShared) -> None:
        self.shared = shared
        self.base = shared.base
        self.settings = shared.settings
        # The chunks' cache is shared by every session: the same chunk typed anywhere is reused.
        self.cache: ConversionCache[str] = ConversionCache(shared.settings.cache_capacity)
        self.chunks = ChunkedLive(self.cache, shared.settings.chunk_limits, shared.settings.context_chars)

    def text(self, request: ConversionRequest) -> str:
        refined = self.refined(request)
        return refined if refined is not None else self.quick(request)

    def quick(self, request: ConversionRequest) -> str:
        """The answer a key gets at once: dictionary text, with chunks a model already refined."""
        model_ids = [slot.model_id for slot in self.shared.ready_slots()]
        return self.chunks.quick(request.reading, request.left_context, self.dictionary_chunk, model_ids)

    def refined(self, request: ConversionRequest, ctx: JobContext | None = None) -> str | None:
        """The model's text, or None: no model, nothing fits the budget, or superseded."""
        if not request.reading or self.shared.model_never_first():
            return None
        slot = self._slot_for(request, ctx)
        if slot is None:
            return None
        stop = ctx.cancelled if ctx is not None else (lambda: False)
        owner = ctx.input_context if ctx is not None else None

        def model_chunk(reading: str, context: str) -> str:
            return self._model_chunk(slot, reading, context, owner, stop)

        try:
            return self.chunks.refined(request.reading, request.left_context, self.dictionary_chunk,
                                       model_chunk, slot.model_id, should_stop=stop)
        except NeuralError as exc:  # the dictionary text stays; never the reading in the log
            log.warning("live model conversion failed: %s", type(exc).__name__)
            return None

    def forget(self, readings: Sequence[str]) -> None:
        """Drop the cached chunks holding one of `readings` (a choice learned for it changes
        what they should become); the other cached chunks stay valid."""
        self.cache.forget_readings(readings)

    @staticmethod
    def greedy_stage(slot: ModelSlot) -> str:
        return f"{slot.model_id}/greedy"

    def _slot_for(self, request: ConversionRequest, ctx: JobContext | None) -> ModelSlot | None:
        slots = self.shared.ready_slots()
        if not slots or ctx is None:
            return slots[0] if slots else None
        options = []
        for slot in slots:
            pending = self.chunks.pending_model_chunks(request.reading, request.left_context,
                                                       self.dictionary_chunk, slot.model_id)
            options.append(Option(slot.model_id, ((self.greedy_stage(slot), len(pending)),)))
        choice = self.shared.chooser.choose(options, ctx.remaining())
        if choice is None:
            return None
        return next(slot for slot in slots if slot.model_id == choice.name)

    def dictionary_chunk(self, reading: str, context: str) -> str:
        return self.base.live(ConversionRequest(reading, context))

    def _model_chunk(self, slot: ModelSlot, reading: str, context: str, owner: Hashable | None = None,
                     should_stop: Callable[[], bool] | None = None) -> str:
        """The chunk's live text; a superseded key leaves the shared decode batch at the next
        step (scheduler.Cancelled, which ends the job without a result)."""
        learned = self.learned_best(reading, context)
        if learned is not None:
            return learned
        started = time.perf_counter()
        generation = slot.greedy(reading, context, self.shared.max_new_for(reading), owner, should_stop)
        dictionary_text = self.dictionary_chunk(reading, context)
        model_text = generation.text if generation is not None and presentable(generation.text) else None
        text = self.arbitrate(slot, reading, context, dictionary_text, model_text)
        if not slot.last_call_atypical():
            # Per call: with the KV cache and the draft, a key costs about the same at any length.
            self.shared.timings.observe(self.greedy_stage(slot), time.perf_counter() - started)
        return text

    def arbitrate(self, slot: ModelSlot, reading: str, context: str, dictionary_text: str,
                  model_text: str | None) -> str:
        """The live text of a chunk: the fused score's choice among the dictionary's text, the
        lattice's other spellings of the chunk (homophones: 機会/機械) and the model's text, with
        the same weights as explicit conversion, so a weak model cannot put nonsense in the
        preedit. Without a model score, or with the base's order kept (its other spellings
        never pass its first), only the dictionary's text and the model's compete."""
        weights = self.settings.weights
        model = slot.get()
        pool = [dictionary_text]
        if weights.uses_model_score and model is not None and not weights.keep_base_order:
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
                             self.shared.path_cost(reading, text), nll, lm=lm)
                    for text, nll, lm in zip(pool, nlls, self.shared.ngram_scores(context, pool))]
        return rank(evidence, len(reading), weights)[0].surface

    def learned_best(self, reading: str, context: str) -> str | None:
        """What the user chose for exactly this reading before wins over the model. A path that
        merely holds a learned word is the lattice's guess like any other: were it to win too,
        every chunk with a word the user once chose would keep the dictionary's text."""
        request = ConversionRequest(reading, context)
        top = self.base.candidates(request, 1)
        return top[0].surface if self.shared.chosen_before(request, top) else None


def presentable(text: str) -> bool:
    """Model text fit to show: not empty, no broken UTF-8 (U+FFFD), no control characters."""
    return bool(text) and all((ch.isprintable() or ch == "\u3000") and ch != "\ufffd" for ch in text)
