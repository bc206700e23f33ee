"""The plain converter: script and width variants of the reading, no dictionary, no model.

It keeps the engine usable before (or without) the dictionary and the neural model, and is
the fallback the factory returns when nothing better is installed.
"""

from __future__ import annotations

from typing import Sequence

from karukan_engine.core.types import Candidate, ConversionRequest, Segment
from karukan_engine.transliteration import script_variants


class PlainConverter:
    """Implements DictionaryConverter (contracts.py) with kana variants only: no dictionary, no
    learning, nothing to save."""

    learning = None
    dictionary = None
    lexicon = None

    def convert(self, request: ConversionRequest) -> list[Segment]:
        reading = request.reading
        if not reading:
            return []
        lengths = _segment_lengths(len(reading), request.fixed_lengths)
        segments = []
        start = 0
        for length in lengths:
            part = reading[start : start + length]
            segments.append(Segment(part, tuple(script_variants(part))))
            start += length
        return segments

    def data_version(self) -> tuple[int, ...]:
        return ()   # no user data

    def candidates(self, request: ConversionRequest, n: int) -> list[Candidate]:
        return script_variants(request.reading)[: max(n, 0)]

    def live(self, request: ConversionRequest) -> str:
        return request.reading

    def record(self, pairs: Sequence[tuple[str, str]], left_context: str = "") -> None:
        return None

    def save(self) -> bool:
        return True

    def close(self) -> None:
        return None


def _segment_lengths(total: int, fixed: Sequence[int]) -> list[int]:
    """The user's fixed segment lengths, then one segment for the rest of the reading."""
    lengths = []
    used = 0
    for length in fixed:
        if length <= 0 or used + length > total:
            break
        lengths.append(length)
        used += length
    if used < total:
        lengths.append(total - used)
    return lengths
