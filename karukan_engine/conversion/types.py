"""The interface every converter offers to the session.

The session knows only these types. A converter turns a hiragana reading (plus the text left of
the caret) into segments (bunsetsu), each covering a span of the reading with ranked candidates.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol, Sequence, runtime_checkable


@dataclass(frozen=True)
class Candidate:
    """One way to write a span of the reading."""

    surface: str
    # Short label shown beside the candidate, e.g. "[全]カタカナ" or "[半]".
    annotation: str = ""
    # Where it came from: "dictionary", "model", "learning", "user", "variant", "live".
    source: str = ""


@dataclass(frozen=True)
class Segment:
    """A span of the reading (hiragana) and its ranked candidates (never empty)."""

    reading: str
    candidates: tuple[Candidate, ...]

    def __post_init__(self) -> None:
        if not self.candidates:
            raise ValueError("a segment needs at least one candidate")

    @property
    def best(self) -> Candidate:
        return self.candidates[0]


@dataclass(frozen=True)
class ConversionRequest:
    """What to convert.

    reading: the whole hiragana reading of the composition (may contain digits, Latin, symbols).
    left_context: text left of the caret in the application (current line, bounded).
    fixed_lengths: lengths (in reading characters) of the leading segments whose boundaries the
        user fixed by resizing; the converter must keep them exactly and segment the rest freely.
    learn: False in password-like fields; the converter must not learn from this request.
    """

    reading: str
    left_context: str = ""
    fixed_lengths: tuple[int, ...] = field(default_factory=tuple)
    learn: bool = True


@runtime_checkable
class Converter(Protocol):
    """Reading → segments and whole-reading candidates, plus learning."""

    def convert(self, request: ConversionRequest) -> list[Segment]:
        """Segments covering the reading exactly, in order, honouring request.fixed_lengths."""
        ...

    def candidates(self, request: ConversionRequest, n: int) -> list[Candidate]:
        """Up to n whole-reading conversions, best first, no duplicate surfaces."""
        ...

    def live(self, request: ConversionRequest) -> str:
        """The best conversion of the whole reading, for live conversion while typing."""
        ...

    def record(self, pairs: Sequence[tuple[str, str]], left_context: str = "") -> None:
        """The user committed these (reading, surface) segments; learn from them."""
        ...


def check_segments(reading: str, segments: Sequence[Segment], fixed_lengths: Sequence[int] = ()) -> None:
    """Raise ValueError unless segments cover reading exactly and honour fixed_lengths."""
    if "".join(s.reading for s in segments) != reading:
        raise ValueError("segments do not cover the reading exactly")
    if any(not s.reading for s in segments):
        raise ValueError("empty segment")
    lengths = [len(s.reading) for s in segments]
    if list(lengths[: len(fixed_lengths)]) != list(fixed_lengths) and sum(fixed_lengths) <= len(reading):
        raise ValueError("fixed segment lengths not honoured")
