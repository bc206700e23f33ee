"""FusedConverter: the parts of the fused pipeline behind the one LiveConverter that the
session, the engine service, the CLI, the evaluation and the benchmarks call.

Each call is one part's: live conversion (live_text.py), Space with its preparation and quick
Space (space_conversion.py over space_ranking.py and space_segments.py), suggestions
(suggesting.py); they share one FusionShared (shared.py). Without a model (missing, still
loading, failed) every call is the base converter's.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Sequence

from karukan_engine.conversion.align import Alignment
from karukan_engine.conversion.contracts import DictionaryConverter
from karukan_engine.conversion.fused.live_text import LiveConversion
from karukan_engine.conversion.fused.shared import FusionShared
from karukan_engine.conversion.fused.space_conversion import SpaceConversion
from karukan_engine.conversion.fused.space_ranking import SpaceRanking
from karukan_engine.conversion.fused.space_segments import SegmentSplitter
from karukan_engine.conversion.fused.suggesting import Suggestions
from karukan_engine.conversion.model_slot import ModelSlot
from karukan_engine.conversion.ranking import Evidence
from karukan_engine.conversion.settings import ConversionSettings
from karukan_engine.core.types import Candidate, Completion, ConversionRequest, Segment
from karukan_engine.scheduling.scheduler import JobContext

if TYPE_CHECKING:
    from karukan_engine.neural.background import LoadHandle
    from karukan_engine.neural.model import NeuralModel

log = logging.getLogger(__name__)

# What warm_up converts: an everyday sentence of typical length, not anything the user typed.
WARM_UP_READING = "あしたのかいぎのしりょうをおくります"


class FusedConverter:
    """Implements LiveConverter (contracts.py) over a DictionaryConverter."""

    def __init__(self, base: DictionaryConverter, slots: Sequence[ModelSlot] = (),
                 settings: ConversionSettings = ConversionSettings(), lexicon=None, ngram=None) -> None:
        """slots: models best first (e.g. main, then light); lexicon: the system dictionary;
        ngram: a LoadHandle of the character n-gram (lm/char_ngram.py), or None."""
        self.shared = FusionShared(base, slots, settings, lexicon, ngram)
        self.live_text = LiveConversion(self.shared)
        self.ranking = SpaceRanking(self.shared, self.live_text)
        self.space = SpaceConversion(self.shared, self.ranking, SegmentSplitter(self.shared))
        self.suggesting = Suggestions(self.shared, self.live_text)
        # Read by callers (stabilizer, benchmarks, tests): the parts' own objects, not copies.
        self.base = base
        self.slots = self.shared.slots
        self.settings = settings
        self.lexicon = lexicon
        self.aligner = self.shared.aligner
        self.timings = self.shared.timings
        self.cache = self.live_text.cache
        self.prepared = self.space.prepared

    @property
    def ngram(self) -> LoadHandle | None:
        """The n-gram's LoadHandle; None without one, and once it failed to load."""
        loaded = self.shared.ngram
        return None if loaded is None or loaded.failed() else loaded.handle

    def model_ready(self) -> bool:
        return self.shared.model_ready()

    def refines_live(self) -> bool:
        return self.shared.model_ready() and not self.shared.model_never_first()

    def wait_for_model(self, timeout: float | None = None) -> bool:
        return self.shared.wait_for_model(timeout)

    # --- live conversion ---------------------------------------------------------------------

    def live(self, request: ConversionRequest) -> str:
        return self.live_text.text(request)

    def live_quick(self, request: ConversionRequest) -> str:
        return self.live_text.quick(request)

    def live_refined(self, request: ConversionRequest, ctx: JobContext | None = None) -> str | None:
        return self.live_text.refined(request, ctx)

    # --- Space ---------------------------------------------------------------------------------

    def candidates(self, request: ConversionRequest, n: int) -> list[Candidate]:
        return self.ranking.candidates(request, n)

    def convert(self, request: ConversionRequest) -> list[Segment]:
        return self.space.convert(request)

    def can_prepare(self) -> bool:
        return self.space.can_prepare()

    def prepare(self, request: ConversionRequest, ctx: JobContext | None = None) -> bool:
        return self.space.prepare(request, ctx)

    def convert_quick(self, request: ConversionRequest) -> tuple[list[Segment], bool]:
        return self.space.convert_quick(request)

    def refined_conversion(self, request: ConversionRequest, ctx: JobContext | None = None) -> list[Segment] | None:
        return self.space.refined_conversion(request, ctx)

    def warm_space(self, request: ConversionRequest) -> None:
        self.space.warm(request)

    # --- suggestions ---------------------------------------------------------------------------

    def suggestions(self, request: ConversionRequest, n: int = 6) -> list[Candidate]:
        return self.suggesting.quick(request, n)

    def refined_suggestions(self, request: ConversionRequest, n: int = 6,
                            ctx: JobContext | None = None) -> list[Candidate] | None:
        return self.suggesting.refined(request, n, ctx)

    def continuations(self, request: ConversionRequest) -> list[Completion]:
        return self.suggesting.continuations(request)

    # --- what the weight fit and the training pools gather ------------------------------------

    def evidence(self, slot: ModelSlot, request: ConversionRequest, base: list[Candidate]) -> list[Evidence]:
        return self.ranking.evidence(slot, request, base)

    def model_candidates(self, slot: ModelSlot, model: NeuralModel, request: ConversionRequest) -> list[Candidate]:
        """SpaceRanking.model_candidates for training/pools.py, which passes slot's loaded model
        beside it (the ranking takes the model from the slot)."""
        return self.ranking.model_candidates(slot, request)

    def alignments(self, reading: str, surfaces: Sequence[str]) -> list[Alignment | None]:
        return self.shared.alignments(reading, surfaces)

    # --- learning and lifetime -----------------------------------------------------------------

    def record(self, pairs: Sequence[tuple[str, str]], left_context: str = "") -> None:
        self.base.record(pairs, left_context)
        # A learned choice changes what chunks holding its reading should become (in every
        # session: the cache is shared).
        self.live_text.forget([reading for reading, _ in pairs if reading])

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
