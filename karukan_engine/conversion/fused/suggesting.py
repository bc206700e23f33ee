"""The fused converter's suggestions: completions of what was typed, then the model's view.

`suggestions` answers at once (learned completions, then dictionary predictive search);
`refined` runs on a scheduler worker: the n-gram's continuation of the live text when it is
sure of it, and the dictionary's completions ranked again by the model.
"""

from __future__ import annotations

import logging
import threading

from karukan_engine.conversion.fused.live_text import LiveConversion
from karukan_engine.conversion.fused.shared import FusionShared
from karukan_engine.conversion.suggest import blended, learned_completions, model_pool, shown_order, suggestions
from karukan_engine.core.types import Candidate, Completion, ConversionRequest, Source
from karukan_engine.kana import nfkc
from karukan_engine.lm.continuation import Continuer
from karukan_engine.neural.errors import NeuralError
from karukan_engine.scheduling.scheduler import JobContext

log = logging.getLogger(__name__)

# Predictions offer the n-gram's continuation of the live text only when it is at least this
# likely (continuation and the end after it) and the reading has this many characters: chosen
# with benchmarks/continuation_eval.py on held-out chat (docs/benchmarks.md, "The model's
# continuation in predictions").
CONTINUATION_MIN_P = 0.3
CONTINUATION_MIN_READING = 2


class Suggestions:
    def __init__(self, shared: FusionShared, live: LiveConversion) -> None:
        self.shared = shared
        self.live = live   # the continuation continues the live text
        self.base = shared.base
        self._continuer: Continuer | None = None   # built from the n-gram once it is loaded
        self._continuer_lock = threading.Lock()

    def quick(self, request: ConversionRequest, n: int = 6) -> list[Candidate]:
        """Completions of what was typed: learned ones, then dictionary predictive search."""
        return suggestions(request.reading, self.base.learning, self.base.lexicon, limit=n)

    def refined(self, request: ConversionRequest, n: int = 6, ctx: JobContext | None = None) -> list[Candidate] | None:
        """The completions with the model's view of them, or None: no model, nothing it adds,
        superseded (ctx) or over ctx's budget. Learned completions first, then the first of the
        dictionary's completions ranked again by the model given the left context
        (suggest.blended, which keeps the dictionary's best unless a completion near its cost
        beats it), then the n-gram's kana continuation of the live text when it is sure of it
        (lm/continuation.py: after the best completion, never before it), then the rest."""
        learned = learned_completions(request.reading, self.base.learning, n)
        view = self.model_view(request, learned, ctx)
        if view is None:
            return None
        pool, nats = view
        continued = self.continuations(request)
        if nats is None and not continued:
            return None   # one completion, or the model failed: nothing the model adds
        ranked_pool = blended(pool, nats) if nats is not None else [c for _cost, c in pool]
        return shown_order(learned, ranked_pool, continued, n)

    def model_view(self, request: ConversionRequest, learned: list[Candidate],
                   ctx: JobContext | None = None) -> tuple[list[tuple[float, Completion]], list[float] | None] | None:
        """(the pool of dictionary completions, the model's NLL of each in nats, or None when
        the model failed or there is one completion), or None: no model, no reading,
        superseded or over budget. One score per completion, the job checked between them."""
        slots = self.shared.ready_slots()
        model = slots[0].get() if slots else None
        if model is None or not request.reading:
            return None
        pool = model_pool(request.reading, learned, self.base.lexicon)
        if len(pool) < 2:
            return pool, None
        try:
            scorer = model.scorer()
            nats = []
            for _cost, completion in pool:
                if ctx is not None and (ctx.cancelled() or ctx.remaining() <= 0):
                    return None
                per_char = scorer.score(completion.reading, request.left_context, completion.surface)
                nats.append(per_char * len(nfkc(completion.surface)))
        except NeuralError as exc:
            log.warning("model suggestions failed: %s", type(exc).__name__)
            return pool, None
        return pool, nats

    def continuations(self, request: ConversionRequest) -> list[Completion]:
        """The n-gram's kana continuation of the live text of `request`, as a completion of
        the reading, when its probability reaches CONTINUATION_MIN_P (none while the n-gram
        loads, or without one)."""
        ngram = self.shared.loaded_ngram()
        if ngram is None or len(request.reading) < CONTINUATION_MIN_READING:
            return []
        with self._continuer_lock:
            if self._continuer is None or self._continuer.ngram is not ngram:
                self._continuer = Continuer(ngram)
            continuer = self._continuer
        text = self.live.quick(request)
        return [Completion(text + c.text, source=Source.MODEL, reading=request.reading + c.text)
                for c in continuer.continuations(text, request.left_context, limit=1)
                if c.probability >= CONTINUATION_MIN_P]
