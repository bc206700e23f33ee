"""The conversion in progress (Mozc's converter state): segments, the candidate chosen for each,
focus, paging, resizing, F6–F10 and committing the first segment. The session asks; only this
object edits its segments."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Callable

from karukan_engine.core.candidates import unique_surfaces
from karukan_engine.core.types import Candidate, Segment, Source
from karukan_engine.rewriters import RewriterStage
from karukan_engine.transliteration import Form, script_variants

# F9/F10 work on the typed keys and cycle through their cases.
CYCLING_FORMS = (Form.FULLWIDTH_ALPHANUMERIC, Form.HALFWIDTH_ALPHANUMERIC)

LearnPairs = tuple[tuple[str, str], ...]


class SegmentChoice:
    """A segment's candidates and the one chosen.

    Made from a converter's Segment, the list is built on first use: only the focused segment's
    list is shown, the others need their first candidate alone (a converter may compute the rest
    lazily, see LazyCandidates). The rewriters add to it when it is built.
    """

    def __init__(self, reading: str, candidates: list[Candidate] | None = None, index: int = 0,
                 segment: Segment | None = None, rewriters: RewriterStage | None = None) -> None:
        if candidates is None and segment is None:
            raise ValueError("a segment choice needs candidates or a segment")
        self.reading = reading
        self.index = index
        self._candidates = candidates
        self._segment = segment
        self._rewriters = rewriters

    @property
    def candidates(self) -> list[Candidate]:
        if self._candidates is None:
            assert self._segment is not None
            self._candidates = _candidate_list(self._segment, self._rewriters)
            self._segment = None
        return self._candidates

    @property
    def chosen(self) -> Candidate:
        if self._candidates is None and self.index == 0 and self._segment is not None \
                and self._segment.best.surface and not (self._rewriters and self._rewriters.leads(self.reading)):
            return self._segment.best   # what the built list would start with
        return self.candidates[self.index]

    def choose_surface(self, surface: str, annotation: str = "", source: Source = Source.UNKNOWN) -> None:
        """Select `surface`, adding it to the end of the list if the converter did not offer it.

        The candidate takes the given source, so a transliteration stays marked as one.
        """
        for i, cand in enumerate(self.candidates):
            if cand.surface == surface:
                self.index = i
                if source and cand.source != source:
                    self.candidates[i] = Candidate(surface, cand.annotation or annotation, source)
                return
        self.candidates.append(Candidate(surface, annotation, source))
        self.index = len(self.candidates) - 1

    def learn_pairs(self) -> LearnPairs:
        """(reading, surface) to learn for this segment: none for a transliteration; for a date,
        its kind (see RewriterStage.learn_pair)."""
        chosen = self.chosen
        return () if chosen.source == Source.TRANSLITERATION else (RewriterStage.learn_pair(self.reading, chosen),)


@dataclass
class Conversion:
    reading: str
    segments: list[SegmentChoice]
    page_size: int = 9
    focus: int = 0
    # Lengths the user fixed by resizing (leading segments), passed back to the converter.
    fixed_lengths: tuple[int, ...] = field(default_factory=tuple)
    # What adds emoji, dates, numbers … to each segment's list (None: the converter's list alone).
    rewriters: RewriterStage | None = None

    @classmethod
    def from_segments(cls, reading: str, segments: list[Segment], page_size: int,
                      rewriters: RewriterStage | None = None) -> "Conversion":
        return cls(reading, [_choice(s, rewriters) for s in segments], page_size, rewriters=rewriters)

    @property
    def focused(self) -> SegmentChoice:
        return self.segments[self.focus]

    def text(self) -> str:
        return "".join(s.chosen.surface for s in self.segments)

    def segment_start(self, index: int) -> int:
        """Offset of a segment in the reading."""
        return sum(len(s.reading) for s in self.segments[:index])

    def preedit_start(self, index: int) -> int:
        """Offset of a segment in the preedit text."""
        return sum(len(s.chosen.surface) for s in self.segments[:index])

    def learn_pairs(self) -> LearnPairs:
        return tuple(pair for s in self.segments for pair in s.learn_pairs())

    def shown(self) -> tuple:
        """What the conversion puts on screen right after Space: each segment's reading and
        first candidate, and the focused segment's candidate list."""
        return (tuple((c.reading, c.chosen.surface) for c in self.segments),
                tuple(c.surface for c in self.focused.candidates))

    def commit_first_segment(self) -> int:
        """Drop the first segment (the session commits it) and keep converting the rest;
        returns how many reading characters it used."""
        first = self.segments.pop(0)
        self.reading = self.reading[len(first.reading):]
        self.fixed_lengths = self.fixed_lengths[1:]
        self.focus = 0
        return len(first.reading)

    # -- candidates ------------------------------------------------------------------------------

    def move_candidate(self, delta: int) -> None:
        seg = self.focused
        seg.index = (seg.index + delta) % len(seg.candidates)

    def move_page(self, delta: int) -> None:
        """Same place on the next/previous page, wrapping at the ends, clamped on a short page."""
        seg = self.focused
        pages = self.pages()
        page = (seg.index // self.page_size + delta) % pages
        seg.index = min(page * self.page_size + seg.index % self.page_size, len(seg.candidates) - 1)

    def select_on_page(self, index_on_page: int) -> bool:
        seg = self.focused
        target = (seg.index // self.page_size) * self.page_size + index_on_page
        if not 0 <= index_on_page < self.page_size or target >= len(seg.candidates):
            return False
        seg.index = target
        return True

    def pages(self) -> int:
        return max(1, -(-len(self.focused.candidates) // self.page_size))

    # -- segments --------------------------------------------------------------------------------

    def move_focus(self, delta: int) -> None:
        self.focus = max(0, min(len(self.segments) - 1, self.focus + delta))

    def resized_lengths(self, delta: int) -> tuple[int, ...] | None:
        """fixed_lengths that shrink/expand the focused segment by delta, or None if impossible."""
        new_len = len(self.focused.reading) + delta
        rest = len(self.reading) - self.segment_start(self.focus)
        if new_len < 1 or new_len > rest:
            return None
        return tuple(len(s.reading) for s in self.segments[: self.focus]) + (new_len,)

    def resize(self, delta: int, convert: Callable[[tuple[int, ...]], list[Segment]]) -> None:
        """Shrink/expand the focused segment by delta; convert(fixed_lengths) segments the
        reading again with the user's lengths fixed."""
        fixed = self.resized_lengths(delta)
        if fixed is not None:
            self.replace_segments(convert(fixed), fixed)

    def transliterate(self, form: Form, typed_keys: Callable[[int, str], str]) -> None:
        """F6–F10 on the focused segment; pressing the same key again cycles the alphanumeric
        forms' cases (tokyo → TOKYO → Tokyo). typed_keys(start, reading): the keys typed for
        the segment's reading at that offset of the whole reading."""
        seg = self.focused
        if form in CYCLING_FORMS:
            variants = _cases(form.of(typed_keys(self.segment_start(self.focus), seg.reading)))
        else:
            variants = [form.of(seg.reading)]
        current = seg.chosen.surface
        surface = variants[(variants.index(current) + 1) % len(variants)] if current in variants else variants[0]
        seg.choose_surface(surface, form.label, Source.TRANSLITERATION)

    def replace_segments(self, segments: list[Segment], fixed_lengths: tuple[int, ...]) -> None:
        """New segmentation after a resize; segments before the focus keep the user's choices."""
        old = {i: s for i, s in enumerate(self.segments[: self.focus])}
        self.segments = [_choice(s, self.rewriters) for s in segments]
        for i, previous in old.items():
            if i < len(self.segments) and self.segments[i].reading == previous.reading:
                chosen = previous.chosen
                self.segments[i].choose_surface(chosen.surface, chosen.annotation, chosen.source)
        self.fixed_lengths = fixed_lengths
        self.focus = min(self.focus, len(self.segments) - 1)


def refined(current: Conversion, reading: str, segments: list[Segment]) -> Conversion | None:
    """What a quick Space's model conversion makes of `current`: None when it is not for this
    conversion (another reading, or resized since) or changes nothing on screen."""
    if current.reading != reading or current.fixed_lengths:
        return None
    better = Conversion.from_segments(reading, segments, current.page_size, current.rewriters)
    return None if better.shown() == current.shown() else better


def _cases(text: str) -> list[str]:
    """F9/F10 cycle: as typed in lower case, upper case, capitalised (Mozc's order)."""
    out: list[str] = []
    for variant in (text.lower(), text.upper(), text[:1].upper() + text[1:].lower()):
        if variant not in out:
            out.append(variant)
    return out


def _choice(segment: Segment, rewriters: RewriterStage | None) -> SegmentChoice:
    return SegmentChoice(segment.reading, segment=segment, rewriters=rewriters)


def _candidate_list(segment: Segment, rewriters: RewriterStage | None) -> list[Candidate]:
    """The converter's candidates, then the script forms Mozc always offers at the end, then
    what the rewriters add. A candidate still without an annotation that is one of those forms
    gets the form's (かんじ → [全]ひらがな, カンジ → [全]カタカナ), as Mozc labels them
    wherever they stand; a rewriter's own label (１００ → [全]数字) comes first."""
    forms = script_variants(segment.reading)
    listed = unique_surfaces(segment.candidates, forms)
    if rewriters is not None:
        listed = rewriters.rewrite(segment.reading, listed)
    labels = {form.surface: form.annotation for form in forms}
    return [replace(c, annotation=labels[c.surface]) if not c.annotation and c.surface in labels else c
            for c in listed]
