"""The rewriter stage: the enabled rewriters applied to a reading's ranked candidate list, and
what committing one of their candidates teaches (a date's kind, not its text)."""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Callable, Sequence

from karukan_engine.config import RewriterSettings
from karukan_engine.core.types import Candidate, Converter
from karukan_engine.rewriters import (choice_memory, dates, emoji, emoticons, numbers, placement, single_kanji, symbols,
                                     tables)
from karukan_engine.rewriters.choice_memory import ChoiceMemory
from karukan_engine.rewriters.request import RewriteRequest
from karukan_engine.transliteration import Form

log = logging.getLogger(__name__)

# In a learn pair's surface: "the kind of rewriter candidate chosen", never a word to learn.
KIND_MARK = "\ue000kind:"
# Readings longer than this are sentences, not a word a rewriter knows.
MAX_READING_CHARS = 40
# The candidate window's first page (IBus and fcitx5 show 9): the reading's hiragana and
# katakana stay on it when they were there before the additions, as Mozc users expect.
FIRST_PAGE = 9

# Applied in this order: a later one placed at the same offset comes before an earlier one
# (やじるし: the arrows before the arrow emoji), and single kanji end the list.
_REWRITERS = (("dates", dates.additions), ("numbers", numbers.additions), ("emoticons", emoticons.additions),
              ("emoji", emoji.additions), ("symbols", symbols.additions), ("single_kanji", single_kanji.additions))


class RewriterStage:
    def __init__(self, settings: RewriterSettings = RewriterSettings(), clock: Callable[[], datetime] = datetime.now,
                 memory: ChoiceMemory | None = None, data: tables.Tables | None = None) -> None:
        self.settings = settings
        self.clock = clock
        self.memory = memory if memory is not None else choice_memory.shared()
        self._data = data
        self._enabled = tuple(fn for name, fn in _REWRITERS if getattr(settings, name))
        if data is None and self._enabled:
            tables.preload()   # read before the first Space needs them, not during it

    @property
    def data(self) -> tables.Tables:
        return self._data if self._data is not None else tables.shared()

    def rewrite(self, reading: str, listed: Sequence[Candidate]) -> list[Candidate]:
        """listed with the rewriters' candidates placed; never raises (a failing rewriter adds nothing)."""
        if not self._enabled or not reading or len(reading) > MAX_READING_CHARS:
            return list(listed)
        request = RewriteRequest(reading, tuple(listed), self.data, self.clock, self.remembered(reading))
        found = []
        for rewriter in self._enabled:
            try:
                found.extend(rewriter(request))
            except Exception as exc:  # data or clock trouble must not cost the list
                log.warning("rewriter failed: %s", type(exc).__name__)
        if not found:
            return list(listed)
        kana = (Form.HIRAGANA.of(reading), Form.KATAKANA.of(reading))
        return placement.keep_on_first_page(listed, placement.add(listed, found), kana, FIRST_PAGE)

    def remembered(self, reading: str) -> str | None:
        """The kind chosen before for this reading, if the rewriter that offers it is on."""
        return self.memory.kind_for(reading) if self.settings.dates and reading in dates.READINGS else None

    def leads(self, reading: str) -> bool:
        """True when a rewriter's candidate may come first for this reading (a `:name` query, a
        kind chosen before): the list must be built to know the first candidate."""
        return (self.settings.emoji and emoji.name_query(reading) is not None) or self.remembered(reading) is not None

    @staticmethod
    def learn_pair(reading: str, chosen: Candidate) -> tuple[str, str]:
        if isinstance(chosen, dates.DateCandidate) and chosen.kind:
            return reading, KIND_MARK + chosen.kind
        return reading, chosen.surface

    def record(self, converter: Converter, pairs: Sequence[tuple[str, str]], left_context: str = "") -> None:
        """Learn committed pairs: a rewriter kind goes to the memory, the rest to the converter."""
        words = []
        for reading, surface in pairs:
            if surface.startswith(KIND_MARK):
                self.memory.remember(reading, surface[len(KIND_MARK):])
            else:
                words.append((reading, surface))
        if words:
            converter.record(words, left_context)

