"""Explicit conversion's best candidate cut back into dictionary words, one segment each.

The best candidate is aligned to dictionary words (align.py) so segments, per-segment
candidates, resizing and learning keep working. Each segment's list is built when it is first
read (LazyCandidates): Space shows one segment's list, not all of them.
"""

from __future__ import annotations

from functools import partial
from typing import Sequence

from karukan_engine.conversion.align import Alignment
from karukan_engine.conversion.fused.run_options import SPACE, RunOptions
from karukan_engine.conversion.fused.shared import FusionShared
from karukan_engine.core.candidates import unique_surfaces
from karukan_engine.core.types import Candidate, ConversionRequest, LazyCandidates, Segment, Source
from karukan_engine.kana import to_katakana
from karukan_engine.lattice.candidate_filter import HIRAGANA_BY, KATAKANA_BY, bring_forward

# Whole-reading candidates cut into each segment's alternatives (each costs one alignment).
OTHER_CANDIDATES_SPLIT = 5


class SegmentSplitter:
    def __init__(self, shared: FusionShared) -> None:
        self.shared = shared
        self.base = shared.base

    def segments_for(self, request: ConversionRequest, best: Candidate,
                     others: Sequence[Candidate] = (), run: RunOptions = SPACE) -> list[Segment]:
        """Segments whose first candidates spell `best`, cut where the dictionary would cut
        (its own segments when `best` is its conversion; else `best` aligned to its words).

        Each segment's alternatives: the same span of the other whole-reading candidates (where
        they cut there too), then the lattice's candidates for exactly that span. run: checked
        between alignments (a preparation's stop).
        """
        reading = request.reading
        run.checkpoint()
        # The dictionary's own conversion (the model proposed but did not win: the usual case)
        # keeps the dictionary's segments, as live conversion and --no-model cut it; its
        # analysis is cached since typing, where a search with the cuts fixed costs 6-13 ms
        # for 20-30 kana.
        whole = self.base.convert(ConversionRequest(reading, request.left_context, (), request.learn))
        if "".join(s.best.surface for s in whole) == best.surface:
            spans = [(s.reading, s.best.surface) for s in whole]
            base_segments: list[Segment] | None = whole
        else:
            alignment = self.shared.alignment(reading, best.surface)
            if alignment is None:
                rest = self.base.candidates(request, self.shared.settings.num_candidates)
                return [Segment(reading, tuple(unique_surfaces([best, *others] + rest)))]
            spans = alignment.segments(self.shared.lexicon.segmenter)
            base_segments = None
        bounds = span_bounds([r for r, _ in spans])
        alternatives: list[list[Candidate]] = [[] for _ in spans]
        for other in others[:OTHER_CANDIDATES_SPLIT]:
            if other.source == Source.VARIANT:
                continue
            run.checkpoint()
            cuts = surface_offsets(self.shared.alignment(reading, other.surface))
            for index, (lo, hi) in enumerate(bounds):
                if lo in cuts and hi in cuts:
                    alternatives[index].append(Candidate(other.surface[cuts[lo]:cuts[hi]], source=other.source))
        if base_segments is None:   # the model's text: the dictionary's lists for its spans
            fixed = tuple(len(r) for r, _ in spans)
            run.checkpoint()
            base_segments = self.base.convert(ConversionRequest(reading, request.left_context, fixed, request.learn))
        listed = [s.reading for s in base_segments] == [r for r, _ in spans]
        if not listed:
            base_segments = [Segment(r, (Candidate(s, source=best.source),)) for r, s in spans]
        # Each list is built when it is first read, as the lattice converter's are: Space shows
        # the focused segment's list only, and building every one took most of a conversion.
        segments = []
        for (r, s), alts, seg in zip(spans, alternatives, base_segments):
            head = Candidate(s, best.annotation, best.source)
            build = partial(self._segment_list, r, head, alts, seg.candidates if listed else None)
            segments.append(Segment(r, LazyCandidates(head, build)))
        return segments

    def _segment_list(self, reading: str, best: Candidate, others: Sequence[Candidate],
                      listed: Sequence[Candidate] | None) -> list[Candidate]:
        lexicon = self.base.lexicon
        words = {e.surface for e in lexicon.lookup(reading)} if lexicon is not None else set()
        return list(segment_list(reading, best, others, listed, words))


def span_bounds(readings: Sequence[str]) -> list[tuple[int, int]]:
    bounds, start = [], 0
    for reading in readings:
        bounds.append((start, start + len(reading)))
        start += len(reading)
    return bounds


def surface_offsets(alignment: Alignment | None) -> dict[int, int]:
    """Reading offset -> surface offset at every word boundary of an alignment."""
    if alignment is None:
        return {}
    offsets, r, s = {0: 0}, 0, 0
    for word in alignment.words:
        r += len(word.reading)
        s += len(word.surface)
        offsets[r] = s
    return offsets


def segment_list(reading: str, best: Candidate, others: Sequence[Candidate],
                 listed: Sequence[Candidate] | None, words: set[str]) -> tuple[Candidate, ...]:
    """One segment's candidates: the best; the spans of the other whole-reading candidates that
    come from the model or the user, or that are one dictionary word for the span which the list
    does not show on its first page (`words`: the segment's own search may have priced it out,
    e.g. a prefix at its end); then the dictionary's list for the span (`listed`, filtered and
    ordered by shape and cost: lattice/candidate_filter.py); then the other paths' spans, which
    the list ranks lower or filtered out (None: the dictionary has no list for this span). The
    kana forms stay on the first page."""
    known = {c.surface for c in (listed or ())[:KATAKANA_BY]}   # on the list's first page
    ahead = [c for c in others if c.source != Source.DICTIONARY or (c.surface in words and c.surface not in known)]
    merged = unique_surfaces([best], ahead, listed or (), others)
    for form, place in ((reading, HIRAGANA_BY), (to_katakana(reading), KATAKANA_BY)):
        shown = next((c for c in merged if c.surface == form), None)
        merged = bring_forward(merged, shown, place)
    return tuple(merged)
