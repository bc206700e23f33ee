"""What a frontend shows: the view model a session returns after every event.

Frontends (the CLI, the D-Bus service, IBus, fcitx5) render this and nothing else.
Positions and lengths are in Unicode characters (code points), never bytes.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass


class PreeditStyle(enum.Enum):
    UNDERLINE = "underline"          # text being composed or an unfocused segment
    HIGHLIGHT = "highlight"          # the focused segment in conversion


@dataclass(frozen=True)
class PreeditSpan:
    text: str
    style: PreeditStyle = PreeditStyle.UNDERLINE


# The footer of a suggestion list nobody has entered yet: how to enter it (Mozc's words).
SUGGESTION_HINT = "Tabキーで選択"


@dataclass(frozen=True)
class CandidateItem:
    label: str          # "1".."9"
    text: str
    annotation: str = ""   # what the candidate is (「[全]カタカナ」「絵文字」), shown beside it


@dataclass(frozen=True)
class CandidatePage:
    items: tuple[CandidateItem, ...]
    cursor: int | None   # index on this page of the selected candidate, None when nothing selected
    page: int            # 0-based page index
    pages: int           # number of pages
    total: int           # number of candidates over all pages

    @property
    def position(self) -> int | None:
        """The selected candidate's place over all pages, from 1 (the 2 of Mozc's 2/37); None when
        nothing is selected. Every page before the last is full, so the last one starts at
        total - its length and any other at page × its length."""
        if self.cursor is None:
            return None
        last = self.page >= self.pages - 1
        first = self.total - len(self.items) if last else self.page * len(self.items)
        return max(0, first) + self.cursor + 1


@dataclass(frozen=True)
class View:
    handled: bool
    preedit: tuple[PreeditSpan, ...] = ()
    caret: int = 0                          # in characters within the preedit text
    candidates: CandidatePage | None = None
    aux: str = ""
    commit: str = ""                        # text to insert into the application now
    mode: str = "hiragana"                  # input mode name (see session.modes)
    enabled: bool = True                    # False when the IME is off (Direct)
    # Completions while composing (not conversion candidates): cursor None until the user
    # enters the list (Tab / Down), then the selected one, which the preedit shows.
    suggestions: CandidatePage | None = None
    # What a plain Return would commit now ("" when it would do anything else, or cannot be
    # told without working it out): a frontend may commit it at once, without a round trip,
    # and tell the session afterwards (Session.return_committed).
    on_return: str = ""

    @property
    def preedit_text(self) -> str:
        return "".join(s.text for s in self.preedit)

    @property
    def candidate_footer(self) -> str:
        """The line the candidate window shows under its list: where the selected candidate is
        ([2/37]), or, for a suggestion list not entered yet, SUGGESTION_HINT. The fcitx5 addon
        (panel.cpp) writes the same from the wire form."""
        page = self.candidates if self.candidates is not None else self.suggestions
        if page is None or not page.items:
            return ""
        if page.cursor is None:
            return SUGGESTION_HINT if self.candidates is None else ""
        return f"[{page.position}/{page.total}]"
