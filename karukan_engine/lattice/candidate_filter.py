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

What survives is then ordered by its shape (`order_spellings`): real words and known phrases
(one content word and the particles or endings that attach to it) first, then guesses (a single
kanji a hundred times less likely than the top, glued to a particle: 教は, 強は after 今日は), then
compositions of two or more content words (回技の, 過意義の), each group cheapest first. The
segment's hiragana and katakana forms stay where their cost puts them but never later than the
first page (`bring_forward`). Compared with Mozc's pages for the 200 most frequent bunsetsu of
the Anthy corpus in docs/benchmarks.md ("Candidate pages").
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Sequence, TypeVar


MIN_COST = 100          # a top candidate cheaper than this counts as this (as in Mozc)
COST_OFFSET = 6907      # 500 ln 10^6
STRUCTURE_OFFSET = 1151  # 500 ln 10
# A one-kanji composition costing more than the top by this ("a hundred times less likely") is a guess.
GUESS_OFFSET = 2303   # 500 ln 100
# The hiragana and katakana forms are at these places at the latest (1-based; a page shows 9).
HIRAGANA_BY = 8
KATAKANA_BY = 9


@dataclass(frozen=True)
class Spelling:
    surface: str
    cost: int        # the whole path's cost, as the search ranks it
    structure: int   # connection costs between the spelling's own words
    words: int
    personal: bool = False   # from the user's dictionary or learning: never filtered or demoted
    content_words: int = 1   # the first word and every later one written with kanji
    lone_kanji: bool = False  # its content word is one kanji and other words follow it (教+は)


class Shape(enum.IntEnum):
    """How a spelling is built, in the order the list shows them."""

    WORD = 0       # one word, or one content word with what attaches to it; or the user's own
    GUESS = 1      # a one-kanji word + particle far less likely than the top
    COMPOSED = 2   # two or more content words glued together (word salad)


def shape_of(spelling: Spelling, top_cost: int) -> Shape:
    if spelling.personal:
        return Shape.WORD
    if spelling.content_words > 1:
        return Shape.COMPOSED
    if spelling.lone_kanji and spelling.cost > top_cost + GUESS_OFFSET:
        return Shape.GUESS
    return Shape.WORD


def reference_cost(spellings: Sequence[Spelling]) -> int:
    """What "less likely than the top" is measured from: the cheapest spelling that is not the
    user's own (a learned word is made cheap on purpose and would make every other spelling look
    unlikely)."""
    return next((s.cost for s in spellings if not s.personal), spellings[0].cost if spellings else 0)


def order_spellings(spellings: Sequence[Spelling]) -> list[Spelling]:
    """The top spelling first, then the rest by shape, cheapest first within a shape (the input
    is cheapest first, and the sort is stable)."""
    if not spellings:
        return []
    top, rest = spellings[0], spellings[1:]
    reference = reference_cost(spellings)
    return [top] + sorted(rest, key=lambda s: shape_of(s, reference))


T = TypeVar("T")


def bring_forward(items: Sequence[T], item: T, place: int) -> list[T]:
    """items with `item` moved up to `place` (1-based) if it stands later; unchanged otherwise
    (also when it is missing). Nothing ever moves down except by one step to make room."""
    items = list(items)
    if item not in items or items.index(item) < place:
        return items
    items.remove(item)
    items.insert(place - 1, item)
    return items


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
