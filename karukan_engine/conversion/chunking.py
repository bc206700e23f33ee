"""Split a long reading into chunks the converters handle well.

Long readings cost the model time quadratic-ish in length and make its output drift, so live
conversion works chunk by chunk: at most `max_chars` characters, cut at natural boundaries
(punctuation, then a particle-like kana), with runs that hold no Japanese (digits, Latin, symbols)
kept apart so they bypass the model, which otherwise tends to hallucinate around digits.

The split is greedy from the left and each cut depends only on the window of `max_chars`
characters before it, so once a chunk has been cut, typing more at the end never moves that cut:
finished chunks stay identical and keep hitting the conversion cache.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Callable, Sequence


class CharClass(enum.Enum):
    JAPANESE = "japanese"
    DIGIT = "digit"
    LETTER = "letter"
    SYMBOL = "symbol"


def char_class(ch: str) -> CharClass:
    code = ord(ch)
    if ch == "・":  # a separator between words, never part of a reading
        return CharClass.SYMBOL
    if 0x3040 <= code <= 0x309F or 0x30A0 <= code <= 0x30FF or 0x3400 <= code <= 0x9FFF:
        return CharClass.JAPANESE
    if ch.isdigit():
        return CharClass.DIGIT
    if ch.isalpha():
        return CharClass.LETTER
    return CharClass.SYMBOL


@dataclass(frozen=True)
class ChunkLimits:
    max_chars: int = 30     # longest chunk, in characters
    max_symbols: int = 1    # symbols a Japanese chunk may absorb (e.g. one 、)
    max_digits: int = 0     # digits a Japanese chunk may absorb

    def __post_init__(self) -> None:
        if self.max_chars < 1 or self.max_symbols < 0 or self.max_digits < 0:
            raise ValueError("chunk limits must be positive")


@dataclass(frozen=True)
class Chunk:
    text: str
    start: int          # offset of text in the whole reading, in characters
    japanese: bool      # False: no Japanese at all; such a chunk bypasses the model

    @property
    def end(self) -> int:
        return self.start + len(self.text)


# Kana after which a phrase (bunsetsu) often ends: case particles and sentence-final ones.
_PARTICLE_ENDINGS = frozenset("はがをにでとものへやねよかな")
_PUNCTUATION = frozenset("、。，．,.!?！？」』)）")

# Given a window of text, return cut positions (0 < cut <= len) ranked best first.
BoundaryHint = Callable[[str], Sequence[int]]


def default_boundaries(window: str) -> list[int]:
    """Cut positions in a window, best first: after punctuation, then after a particle-like kana.

    Only the last two thirds of the window are considered so chunks do not get tiny.
    """
    low = max(1, len(window) // 3)
    after_punct = [i + 1 for i in range(len(window) - 1, low - 2, -1) if window[i] in _PUNCTUATION]
    after_particle = [
        i + 1 for i in range(len(window) - 1, low - 2, -1) if window[i] in _PARTICLE_ENDINGS
    ]
    return [c for c in after_punct + after_particle if low <= c <= len(window)]


def split_chunks(
    reading: str,
    limits: ChunkLimits = ChunkLimits(),
    manual_breaks: Sequence[int] = (),
    boundary_hint: BoundaryHint = default_boundaries,
) -> list[Chunk]:
    """Chunks that cover `reading` exactly, in order.

    manual_breaks: offsets where the user asked for a break (always honoured).
    """
    breaks = {b for b in manual_breaks if 0 < b < len(reading)}
    chunks: list[Chunk] = []
    pos = 0
    while pos < len(reading):
        end = _chunk_end(reading, pos, limits, breaks, boundary_hint)
        text = reading[pos:end]
        japanese = any(char_class(c) is CharClass.JAPANESE for c in text)
        chunks.append(Chunk(text, pos, japanese))
        pos = end
    return chunks


def _chunk_end(
    reading: str, start: int, limits: ChunkLimits, breaks: set[int], hint: BoundaryHint
) -> int:
    first = char_class(reading[start])
    if first is not CharClass.JAPANESE:
        # A run of one non-Japanese class (letters, digits or symbols) is its own chunk.
        end = start + 1
        while (
            end < len(reading)
            and end not in breaks
            and end - start < limits.max_chars
            and char_class(reading[end]) is first
        ):
            end += 1
        return end
    symbols = digits = 0
    end = start + 1
    while end < len(reading) and end not in breaks:
        cls = char_class(reading[end])
        if cls is CharClass.LETTER:
            break
        if cls is CharClass.SYMBOL:
            if symbols >= limits.max_symbols:
                break
            symbols += 1
        elif cls is CharClass.DIGIT:
            if digits >= limits.max_digits:
                break
            digits += 1
        if end - start >= limits.max_chars:
            return start + _best_cut(reading[start:end], hint)
        end += 1
    return end


def _best_cut(window: str, hint: BoundaryHint) -> int:
    for cut in hint(window):
        if 0 < cut <= len(window):
            return cut
    return len(window)


def chunk_left_context(surrounding_left: str, converted_before: Sequence[str], max_chars: int) -> str:
    """The left context of a chunk: the application's text plus what earlier chunks became."""
    if max_chars <= 0:
        return ""
    text = surrounding_left + "".join(converted_before)
    return text[-max_chars:]
