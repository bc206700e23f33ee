"""The suggestion list while composing: completions of the typed reading and which one is chosen.

Nothing is selected until the user enters the list (Tab / Down); the list is one page, as long
as the [suggest] count allows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from karukan_engine.core.types import Candidate, Completion
from karukan_engine.session.view import CandidateItem, CandidatePage


@dataclass(frozen=True)
class SuggestionList:
    reading: str                      # the typed reading they complete
    items: tuple[Candidate, ...]
    cursor: int | None = None         # the selected item; None: shown, not entered
    complete: bool = True             # the converter's answer for `reading` (not a narrowed old list)

    @classmethod
    def of(cls, reading: str, found: Sequence[Candidate], limit: int) -> "SuggestionList | None":
        # The typed kana itself adds nothing: Return already commits it.
        items = tuple(c for c in found if c.surface and c.surface != reading)[:limit]
        return cls(reading, items) if items else None

    def narrowed(self, reading: str) -> "SuggestionList | None":
        """The items that still complete a longer or edited reading (shown until the new list
        arrives, so the window does not blink on every key); None when none does."""
        keep = tuple(c for c in self.items
                     if isinstance(c, Completion) and c.reading.startswith(reading) and c.surface != reading)
        return SuggestionList(reading, keep, complete=False) if keep else None

    @property
    def selected(self) -> Candidate | None:
        return None if self.cursor is None else self.items[self.cursor]

    def entered(self) -> "SuggestionList":
        return SuggestionList(self.reading, self.items, 0, self.complete)

    def moved(self, delta: int) -> "SuggestionList":
        start = 0 if self.cursor is None else self.cursor
        return SuggestionList(self.reading, self.items, (start + delta) % len(self.items), self.complete)

    def choice_at(self, index: int) -> tuple[str, tuple[tuple[str, str], ...]] | None:
        """(surface, what to learn) of the item at `index`, or None when there is none."""
        if not 0 <= index < len(self.items):
            return None
        chosen = self.items[index]
        return chosen.surface, (self.learn_pair(chosen),)

    def learn_pair(self, chosen: Candidate) -> tuple[str, str]:
        """(reading, surface) to learn: the whole reading the completion stands for."""
        reading = chosen.reading if isinstance(chosen, Completion) and chosen.reading else self.reading
        return reading, chosen.surface

    def page(self) -> CandidatePage:
        items = tuple(CandidateItem(str(i + 1), c.surface, c.annotation) for i, c in enumerate(self.items))
        return CandidatePage(items, self.cursor, 0, 1, len(items))
