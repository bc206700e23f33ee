"""When to send a lookup table so that ibus-ui-gtk3 draws it under the focused segment.

The candidate window of a GTK or Qt client is drawn by the IBus panel, at the cursor rectangle
the application last reported (SetCursorLocation). Two facts about ibus-ui-gtk3 (IBus 1.5.27,
measured under Xvfb by tests/e2e/test_e2e_gtk_ibus_panel.py, reading the real window's place):

1. A table that arrives while the window is shown moves the window to the rectangle held then;
   a new rectangle alone moves nothing (ui/gtk3/candidatepanel.vala: set_cursor_location()
   only stores it).
2. A table that opens the hidden window shows it where it was last shown, whatever rectangle
   is held (the first Space opened it 44-88 px right of the segment, at the spot of the last
   suggestion list, or of another application's window). Sending the same table again right
   after places it: the window is shown by then, so fact 1 applies.

The application reports the rectangle of the preedit caret after it has drawn the new preedit,
which is after the engine's next signals have already reached the panel. A table sent together
with a preedit whose caret moved (Space into conversion puts the caret at the start of the
focused segment; ←/→ move it between segments) is therefore held until the application reports
its new rectangle (or a short bound passes, for clients that never report one). ibus-daemon
hands that report to the panel before it forwards it to the engine, so the table we send then
is placed at the new rectangle; one that opens the window goes twice (fact 2). Tables that
leave the caret where it was (Space cycling candidates), hides, and clients that draw their
own table (IBUS_CAP_LOOKUP_TABLE) are sent at once, in the reply to their key.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from ime_frontend.ibus.render import Signal

IBUS_CAP_LOOKUP_TABLE = 1 << 2
# How long a held table waits for the client's rectangle (KARUKAN_IBUS_CURSOR_WAIT_MS
# overrides). The report normally comes within a few milliseconds (one redraw); this bounds the
# wait where none comes (a rectangle equal to the last one is not sent again).
CURSOR_WAIT_S = 0.3


def cursor_wait_s() -> float:
    try:
        ms = int(os.environ.get("KARUKAN_IBUS_CURSOR_WAIT_MS", ""))
    except ValueError:
        return CURSOR_WAIT_S
    return ms / 1000 if 0 < ms <= 600_000 else CURSOR_WAIT_S


def shows_candidates(signal: Signal) -> bool:
    member, _sig, body = signal
    return member == "UpdateLookupTable" and bool(body[1])


@dataclass
class TablePlacement:
    """Splits each batch of engine signals into those to send now and a table to hold."""

    panel_draws_table: bool = False      # the client lacks IBUS_CAP_LOOKUP_TABLE
    client_reports_cursor: bool = False  # it has sent SetCursorLocation at least once
    held: Signal | None = None
    window_shown: bool = False           # the last table sent showed candidates

    def set_capabilities(self, caps: int) -> None:
        self.panel_draws_table = not caps & IBUS_CAP_LOOKUP_TABLE

    def batch(self, signals: list[Signal], caret_moved: bool) -> list[Signal]:
        """The signals to send now, in order; a table that must wait for the client's new
        cursor rectangle is kept in `held` instead (the newest replaces one still held)."""
        waiting = (self.held is not None or caret_moved) and self.panel_draws_table and self.client_reports_cursor
        now = []
        for signal in signals:
            if signal[0] != "UpdateLookupTable":
                now.append(signal)
            elif shows_candidates(signal) and waiting:
                self.held = signal
            else:
                self.held = None             # a hide, or a table the panel may place now
                now += self._outgoing(signal)
        return now

    def cursor_reported(self) -> list[Signal]:
        """The client reported its rectangle: the held table, to send now (or nothing)."""
        self.client_reports_cursor = True
        return self.release()

    def release(self) -> list[Signal]:
        held, self.held = self.held, None
        return self._outgoing(held) if held is not None else []

    def hidden(self) -> None:
        """The panel's window may have been hidden by something other than our tables (the
        context was out of focus: the panel serves every context with one window)."""
        self.window_shown = False

    def _outgoing(self, table: Signal) -> list[Signal]:
        """A table as it goes out: twice when it opens the panel's hidden window (fact 2)."""
        opens = shows_candidates(table) and not self.window_shown and self.panel_draws_table
        self.window_shown = shows_candidates(table)
        return [table, table] if opens else [table]
