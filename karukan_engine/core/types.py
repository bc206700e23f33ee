"""The interface every converter offers to the session (below both, so neither imports the other).

The session knows only these types. A converter turns a hiragana reading (plus the text left of
the caret) into segments (bunsetsu), each covering a span of the reading with ranked candidates.
"""

from __future__ import annotations

import enum
import logging
import threading
from dataclasses import dataclass, field
from typing import Callable, Iterator, Protocol, Sequence, overload, runtime_checkable

log = logging.getLogger(__name__)


class Source(str, enum.Enum):
    """Where a candidate came from. A str, so it compares equal to its value."""

    UNKNOWN = ""
    DICTIONARY = "dictionary"             # the system dictionary's lattice
    USER = "user"                         # the user dictionary
    LEARNING = "learning"                 # what the user chose before
    MODEL = "model"                       # the neural model
    VARIANT = "variant"                   # script, width, number and symbol rewrites
    TRANSLITERATION = "transliteration"   # F6–F10 results: never learned

    # Equal to its value, so hashed like it too (a Candidate built with the plain string is the same).
    __str__ = str.__str__
    __hash__ = str.__hash__


@dataclass(frozen=True)
class Candidate:
    """One way to write a span of the reading."""

    surface: str
    # Short label shown beside the candidate, e.g. "[全]カタカナ" or "[半]".
    annotation: str = ""
    source: Source = Source.UNKNOWN


@dataclass(frozen=True)
class Completion(Candidate):
    """A suggestion while typing: a surface for a longer reading than the one typed so far.
    Committing it learns (reading, surface), never the typed prefix with it."""

    reading: str = ""


class LazyCandidates(Sequence[Candidate]):
    """An immutable candidate list whose first (best) candidate is known at once and whose rest
    is computed on first need, once, under a lock.

    A converter returns every segment, but a frontend shows one segment's list at a time: the
    others need only their best. `[0]`, `bool()` and taking the first item of an iteration stay
    cheap; len(), any other index, a slice, equality or iterating past the first compute the
    rest. `compute` returns the whole list; the head comes first and once, whatever it returns.
    """

    __slots__ = ("_head", "_compute", "_items", "_lock")

    def __init__(self, head: Candidate, compute: Callable[[], Sequence[Candidate]]) -> None:
        self._head = head
        self._compute: Callable[[], Sequence[Candidate]] | None = compute
        self._items: tuple[Candidate, ...] | None = None
        self._lock = threading.Lock()

    @property
    def computed(self) -> bool:
        """Whether the rest has been computed (for tests and benchmarks)."""
        return self._items is not None

    def _all(self) -> tuple[Candidate, ...]:
        items = self._items
        if items is None:
            with self._lock:
                items = self._items
                if items is None:
                    assert self._compute is not None
                    try:
                        found = tuple(self._compute())
                    except Exception as exc:  # read late, from a view: never take the keyboard down
                        log.warning("computing alternative candidates failed: %s", type(exc).__name__)
                        found = (self._head,)
                    items = self._items = (self._head, *(c for c in found if c.surface != self._head.surface))
                    self._compute = None   # let go of what it closed over (a lattice, say)
        return items

    def __bool__(self) -> bool:
        return True

    def __len__(self) -> int:
        return len(self._all())

    @overload
    def __getitem__(self, index: int) -> Candidate: ...
    @overload
    def __getitem__(self, index: slice) -> tuple[Candidate, ...]: ...
    def __getitem__(self, index: int | slice) -> Candidate | tuple[Candidate, ...]:
        if isinstance(index, int) and index == 0:
            return self._head
        return self._all()[index]

    def __iter__(self) -> Iterator[Candidate]:
        yield self._head
        yield from self._all()[1:]

    def __eq__(self, other: object) -> bool:
        if isinstance(other, LazyCandidates):
            return self is other or self._all() == other._all()
        if isinstance(other, tuple):
            return self._all() == other
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._all())

    def __repr__(self) -> str:
        rest = f", +{len(self._items) - 1} more" if self._items is not None else ", …not computed"
        return f"LazyCandidates({self._head!r}{rest})"


@dataclass(frozen=True)
class Segment:
    """A span of the reading (hiragana) and its ranked candidates (never empty).

    candidates is a tuple or a LazyCandidates; read `best` (or `candidates[0]`) when only the
    first is needed, so a lazy list stays uncomputed.
    """

    reading: str
    candidates: Sequence[Candidate]

    def __post_init__(self) -> None:
        if not self.candidates:
            raise ValueError("a segment needs at least one candidate")

    @property
    def best(self) -> Candidate:
        return self.candidates[0]


def first_listed(segments: list[Segment]) -> list[Segment]:
    """`segments` with the first one's candidate list built: the list Space shows, so that a
    Space answered from them (prepared, or warmed) does not build it."""
    if segments:
        len(segments[0].candidates)
    return segments


def settled_first_listed(segments: list[Segment]) -> None:
    """first_listed where a later segment closes the first one: while the reading is still one
    segment, the next key changes that segment, so a list built now would not be used."""
    if len(segments) > 1:
        first_listed(segments)


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
