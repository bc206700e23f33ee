"""Live conversion of a whole reading, chunk by chunk, with cached chunks.

Two tiers share one chunking and one cache:
- quick: the dictionary's conversion of each chunk, except chunks the model already refined
  (cached), so the preedit never flips back from the model's text to the dictionary's.
- refined: the model's conversion of every Japanese chunk; chunks without Japanese keep the
  dictionary's text (the model tends to invent text around digits and Latin letters).
Each chunk's left context is the application's text plus what the chunks before it became.
"""

from __future__ import annotations

from functools import partial
from typing import Callable, Sequence

from karukan_engine.conversion.cache import CacheKey, ConversionCache
from karukan_engine.conversion.chunking import (
    ChunkLimits,
    chunk_left_context,
    split_chunks,
)
from karukan_engine.lattice.live_spelling import text_fits

# (chunk reading, left context) -> converted text
ChunkConverter = Callable[[str, str], str]

DICTIONARY_TIER = "dictionary"


class ChunkedLive:
    def __init__(self, cache: ConversionCache[str], limits: ChunkLimits, context_chars: int) -> None:
        self.cache = cache
        self.limits = limits
        self.context_chars = context_chars

    def quick(self, reading: str, left_context: str, dictionary: ChunkConverter,
              model_ids: Sequence[str] = ()) -> str:
        """The dictionary's text, with chunks already refined by one of `model_ids` (best first)
        taken from the cache."""
        done: list[str] = []
        for chunk in split_chunks(reading, self.limits):
            context = chunk_left_context(left_context, done, self.context_chars)
            text = None
            for model_id in model_ids if chunk.japanese else ():
                text = self.cache.get(CacheKey(chunk.text, context, model_id))
                if text is not None:
                    break
            if text is None:
                text = self._cached(chunk.text, context, DICTIONARY_TIER, dictionary)
            done.append(text)
        return "".join(done)

    def refined(self, reading: str, left_context: str, dictionary: ChunkConverter,
                model: ChunkConverter, model_id: str,
                should_stop: Callable[[], bool] = lambda: False) -> str | None:
        """The model's text for Japanese chunks; None when stopped before the end."""
        done: list[str] = []
        for chunk in split_chunks(reading, self.limits):
            if should_stop():
                return None
            context = chunk_left_context(left_context, done, self.context_chars)
            if chunk.japanese:
                text = self._cached(chunk.text, context, model_id, partial(self._fitting, model, dictionary))
            else:
                text = self._cached(chunk.text, context, DICTIONARY_TIER, dictionary)
            done.append(text)
        return "".join(done)

    def pending_model_chunks(self, reading: str, left_context: str, dictionary: ChunkConverter,
                             model_id: str) -> list[str]:
        """Japanese chunks the model has not converted yet in this context (what a refine costs)."""
        pending = []
        done: list[str] = []
        for chunk in split_chunks(reading, self.limits):
            context = chunk_left_context(left_context, done, self.context_chars)
            text = self.cache.get(CacheKey(chunk.text, context, model_id)) if chunk.japanese else None
            if text is None:
                if chunk.japanese:
                    pending.append(chunk.text)
                text = self._cached(chunk.text, context, DICTIONARY_TIER, dictionary)
            done.append(text)
        return pending

    def _fitting(self, model: ChunkConverter, dictionary: ChunkConverter, reading: str, context: str) -> str:
        """The model's text of a chunk, or the dictionary's where the model's shows digits the
        reading lacks or a stand-in for a lone kana (lattice/live_spelling.py)."""
        text = model(reading, context)
        if text and not text_fits(reading, text):
            return self._cached(reading, context, DICTIONARY_TIER, dictionary)
        return text

    def _cached(self, reading: str, context: str, tier: str, convert: ChunkConverter) -> str:
        key = CacheKey(reading, context, tier)
        text = self.cache.get(key)
        if text is None:
            text = convert(reading, context) or reading
            self.cache.put(key, text)
        return text
