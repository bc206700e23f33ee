"""A stand-in IBus panel that records what ibus-daemon tells the panel.

ibus-daemon talks to whichever connection owns org.freedesktop.IBus.Panel: it sends the
panel the cursor rectangle each application reports (SetCursorLocation, root coordinates) and
the lookup table of clients that do not draw one themselves (GTK and Qt clients). ibus-ui-gtk3
moves its candidate window only when the table, preedit or aux text changes, to the rectangle
it holds at that moment (ui/gtk3/candidatepanel.vala, IBus 1.5: set_cursor_location() only
stores it), so the rectangle held when a table arrives is where a user sees the window.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from dbus_fast import Message, MessageType

from ime_frontend.bus import MessageBus
from ime_frontend.ibus import gvariant as gv

PANEL_NAME = "org.freedesktop.IBus.Panel"
PANEL_IFACE = "org.freedesktop.IBus.Panel"


@dataclass
class Placement:
    """One lookup table the panel was given, and the cursor rectangle it held then."""

    candidates: list[str]
    rect: tuple[int, int, int, int] | None
    at: float


@dataclass
class PanelProbe:
    bus: MessageBus
    rect: tuple[int, int, int, int] | None = None
    rects: list[tuple[int, int, int, int]] = field(default_factory=list)
    placements: list[Placement] = field(default_factory=list)
    calls: list[str] = field(default_factory=list)

    @classmethod
    async def attach(cls, address: str) -> "PanelProbe":
        bus = await MessageBus(bus_address=address).connect()
        probe = cls(bus)
        bus.add_message_handler(probe._on_message)
        await bus.request_name(PANEL_NAME)
        return probe

    def _on_message(self, msg: Message):
        if msg.message_type != MessageType.METHOD_CALL or msg.interface != PANEL_IFACE:
            return None
        self.calls.append(msg.member)
        if msg.member == "SetCursorLocation":
            self.rect = tuple(msg.body[:4])
            self.rects.append(self.rect)
        elif msg.member == "UpdateLookupTable":
            table = gv.decode_lookup_table(msg.body[0].value)
            shown = list(table.candidates) if msg.body[1] else []
            self.placements.append(Placement(shown, self.rect, time.monotonic()))
        return Message.new_method_return(msg)

    @property
    def shown_table(self) -> Placement | None:
        """The last table update, if it shows candidates."""
        if self.placements and self.placements[-1].candidates:
            return self.placements[-1]
        return None

    def disconnect(self) -> None:
        self.bus.disconnect()
