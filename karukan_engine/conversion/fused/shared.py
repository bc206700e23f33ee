"""What the fused converter's parts share: the model slots, one aligner (with its cache), one
n-gram handle, the stage timings with their budget chooser, and the "chosen before" rule."""

from __future__ import annotations

import math
import threading
from typing import Sequence

from karukan_engine.conversion.align import Aligner, Alignment
from karukan_engine.conversion.contracts import DictionaryConverter
from karukan_engine.conversion.model_slot import ModelSlot
from karukan_engine.conversion.settings import ConversionSettings
from karukan_engine.core.lru import Lru
from karukan_engine.core.types import Candidate, ConversionRequest, Source
from karukan_engine.lm.bundled import LoadedNgram
from karukan_engine.lm.char_ngram import CharNgram
from karukan_engine.scheduling.deadline import BudgetChooser, StageTimings

ALIGNMENT_CACHE = 4096
_UNALIGNED = object()   # not in the alignment cache (None there: no alignment exists)


class FusionShared:
    """The one instance of each thing the live, Space and suggestion parts all consult."""

    def __init__(self, base: DictionaryConverter, slots: Sequence[ModelSlot], settings: ConversionSettings,
                 lexicon=None, ngram=None) -> None:
        """lexicon: the system dictionary (None: no alignment); ngram: a LoadHandle of the
        character n-gram (lm/char_ngram.py), or None."""
        self.base = base
        self.slots = list(slots)
        self.settings = settings
        self.lexicon = lexicon
        self.aligner = Aligner(lexicon) if lexicon is not None else None
        self.ngram = LoadedNgram(ngram, without="ranking without it") if ngram is not None else None
        self.timings = StageTimings()
        self.chooser = BudgetChooser(self.timings)
        self._alignments: Lru[tuple[str, str], Alignment | None] = Lru(ALIGNMENT_CACHE)
        self._alignments_lock = threading.Lock()

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

    def model_never_wins(self) -> bool:
        """With no lattice, model or alignment weight the model's text can only tie the
        dictionary's (which then wins): the fitted weights say the model adds nothing live."""
        weights = self.settings.weights
        return weights.lattice == weights.unaligned == 0 and not weights.uses_model_score

    def model_never_first(self) -> bool:
        """The model's text never comes before the dictionary's first (no say, or an infinite
        margin: it only joins the candidate list), so live text is the dictionary's."""
        return self.model_never_wins() or self.settings.weights.margin == math.inf

    def max_new_for(self, reading: str) -> int:
        """Token budget of one conversion: a surface is rarely longer than its reading."""
        return min(self.settings.max_new_tokens, len(reading) + 8)

    # --- the n-gram ----------------------------------------------------------------------------

    def loaded_ngram(self) -> CharNgram | None:
        """The character n-gram, or None while it loads, when it failed to (said once), or
        without one (build_fused_converter gives one only when the weights use it)."""
        return self.ngram() if self.ngram is not None else None

    def ngram_ready(self) -> bool:
        return self.ngram is not None and self.ngram.handle.ready()

    def ngram_scores(self, context: str, surfaces: Sequence[str]) -> list[float | None]:
        """The n-gram's log P of each surface after the context (None each without one)."""
        ngram = self.loaded_ngram()
        if ngram is None:
            return [None] * len(surfaces)
        return [float(v) for v in ngram.score_many([(s, context) for s in surfaces])]

    # --- alignment -----------------------------------------------------------------------------

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
                cached = self._alignments.get((reading, surface), _UNALIGNED)
                if cached is not _UNALIGNED:
                    found[surface] = cached
        missing = list(dict.fromkeys(s for s in surfaces if s not in found))
        if missing:
            aligned = self.aligner.align_many(reading, missing)
            found.update(zip(missing, aligned))
            with self._alignments_lock:
                for surface, alignment in zip(missing, aligned):
                    self._alignments.put((reading, surface), alignment)
        return [found[surface] for surface in surfaces]

    def path_cost(self, reading: str, surface: str) -> int | None:
        """Dictionary path cost of writing `reading` as `surface` (None: not writable so)."""
        found = self.alignment(reading, surface)
        return found.cost if found is not None else None

    # --- learning ------------------------------------------------------------------------------

    def chosen_before(self, request: ConversionRequest, base: Sequence[Candidate]) -> bool:
        """The base converter's first candidate is what the user chose for exactly this reading
        (after this context, if one was made there)."""
        learning = self.base.learning
        return bool(base and base[0].source == Source.LEARNING and learning is not None
                    and base[0].surface in learning.lookup(request.reading, request.left_context))
