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


@dataclass(frozen=True)
class CandidateItem:
    label: str          # "1".."9"
    text: str
    annotation: str = ""


@dataclass(frozen=True)
class CandidatePage:
    items: tuple[CandidateItem, ...]
    cursor: int | None   # index on this page of the selected candidate, None when nothing selected
    page: int            # 0-based page index
    pages: int           # number of pages
    total: int           # number of candidates over all pages


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

    @property
    def preedit_text(self) -> str:
        return "".join(s.text for s in self.preedit)
