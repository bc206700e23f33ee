"""A model-only Converter: one segment per request, candidates from beam search, live
conversion from the persistent greedy decoder.

While the model is loading (or if it failed to load) every method answers with the reading
itself, so the session keeps working. It does not learn: `record` has nothing to update here
(learning lives in the fused converter).
"""

from __future__ import annotations

import logging
from typing import Sequence

from karukan_engine.core.types import Candidate, ConversionRequest, Segment, Source
from karukan_engine.neural.background import LoadHandle
from karukan_engine.neural.errors import NeuralError
from karukan_engine.neural.model import NeuralModel

log = logging.getLogger(__name__)

DEFAULT_BEAM = 5
MAX_NEW_TOKENS = 50


class NeuralConverter:
    def __init__(self, model: NeuralModel | LoadHandle, beam: int = DEFAULT_BEAM, max_new: int = MAX_NEW_TOKENS) -> None:
        self._source = model
        self.beam_width = beam
        self.max_new = max_new

    @property
    def model(self) -> NeuralModel | None:
        """The model once loaded; None while loading or after a failed load."""
        if isinstance(self._source, LoadHandle):
            return self._source.model if self._source.ready() else None
        return self._source

    def _beam(self, reading: str, context: str, n: int) -> list[str]:
        model = self.model
        if model is None or not reading:
            return []
        try:
            generations = model.beam(reading, context, beam=max(n, 1), max_new=self.max_new)
        except NeuralError as exc:  # never the reading itself in the log
            log.warning("model conversion failed: %s", type(exc).__name__)
            return []
        out: list[str] = []
        for g in generations:
            if g.text and g.text not in out:
                out.append(g.text)
        return out

    def candidates(self, request: ConversionRequest, n: int) -> list[Candidate]:
        if n <= 0:
            return []
        surfaces = self._beam(request.reading, request.left_context, max(n, self.beam_width))[:n]
        if not surfaces:
            surfaces = [request.reading]
        return [Candidate(s, source=Source.MODEL) for s in surfaces]

    def convert(self, request: ConversionRequest) -> list[Segment]:
        """One segment for the whole reading, or, when the user fixed leading segment lengths,
        one per fixed span plus one for the rest (each converted with what precedes it as context)."""
        reading = request.reading
        if not reading:
            return []
        spans: list[str] = []
        pos = 0
        for length in request.fixed_lengths:
            if length <= 0 or pos + length > len(reading):
                spans = []
                pos = 0
                break
            spans.append(reading[pos : pos + length])
            pos += length
        if pos < len(reading):
            spans.append(reading[pos:])
        segments: list[Segment] = []
        context = request.left_context
        for span in spans:
            sub = ConversionRequest(span, context, (), request.learn)
            cands = self.candidates(sub, self.beam_width)
            segments.append(Segment(span, tuple(cands)))
            context += cands[0].surface
        return segments

    def live(self, request: ConversionRequest) -> str:
        model = self.model
        if model is None or not request.reading:
            return request.reading
        try:
            text = model.greedy(request.reading, request.left_context, max_new=self.max_new).text
        except NeuralError as exc:
            log.warning("live conversion failed: %s", type(exc).__name__)
            return request.reading
        return text or request.reading

    def record(self, pairs: Sequence[tuple[str, str]], left_context: str = "") -> None:
        """Nothing to learn in a model-only converter."""
