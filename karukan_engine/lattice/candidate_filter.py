"""Which of a segment's N-best spellings are worth showing in the candidate window.

The N-best of a short span is full of word salad: a one-kanji noun glued before a particle
(在目です, 有目です for あめです). Such paths cost far more than the segment's best one, and much
of the extra cost sits in the connections between their words (their structure). Mozc's
candidate filter drops a spelling whose cost exceeds the top candidate's by 6907 and whose
structure cost exceeds the top's by 1151; with cost = -500 ln p these are "a million times less
likely" and "ten times less likely in structure". We apply that rule (measured on the Anthy
corpus's gold bunsetsu: lists 18.3 -> 11.7 spellings on average, the gold spelling still listed
for 99.2 % of segments instead of 99.3 %; docs/benchmarks.md). Mozc's further rule on structure
alone was measured too and dropped: it lost more right answers (何て, 付いて) for little gain.

Single words, single characters and the user's own words are always kept.
"""

from __future__ import annotations

from dataclasses import dataclass

MIN_COST = 100          # a top candidate cheaper than this counts as this (as in Mozc)
COST_OFFSET = 6907      # 500 ln 10^6
STRUCTURE_OFFSET = 1151  # 500 ln 10


@dataclass(frozen=True)
class Spelling:
    surface: str
    cost: int        # the whole path's cost, as the search ranks it
    structure: int   # connection costs between the spelling's own words
    words: int
    personal: bool = False   # from the user's dictionary or learning: never filtered


class SegmentFilter:
    """Feed one segment's spellings cheapest first; `keep` says which to show."""

    def __init__(self) -> None:
        self._top: Spelling | None = None

    def keep(self, spelling: Spelling) -> bool:
        if self._top is None:
            self._top = spelling
            return True
        if spelling.personal or spelling.words == 1 or len(spelling.surface) == 1:
            return True
        too_costly = spelling.cost > max(MIN_COST, self._top.cost) + COST_OFFSET
        odd_structure = spelling.structure > max(MIN_COST, self._top.structure) + STRUCTURE_OFFSET
        return not (too_costly and odd_structure)
