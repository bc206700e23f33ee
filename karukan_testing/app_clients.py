"""Pure D-Bus clients of ibus-daemon and fcitx5, talking to them as an application's im module does.

Used by the end-to-end tests, the round-trip benchmark and nothing at runtime. Both frameworks
send input-context signals only to the context's owner, and send them before the reply of the
call that caused them, so after an awaited ProcessKeyEvent the recorded state is current.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from dbus_fast import Message, MessageType, Variant
from dbus_fast.errors import DBusError

from ime_frontend.bus import MessageBus
from ime_frontend.ibus import gvariant as gv
from ime_frontend.toolkit import IBUS_RELEASE_MASK as RELEASE_MASK

# IBus client capabilities.
IBUS_CAP_PREEDIT_TEXT = 1 << 0
IBUS_CAP_AUXILIARY_TEXT = 1 << 1
IBUS_CAP_LOOKUP_TABLE = 1 << 2
IBUS_CAP_FOCUS = 1 << 3
IBUS_CAP_PROPERTY = 1 << 4
IBUS_CAP_SURROUNDING_TEXT = 1 << 5
IBUS_CAPS = (IBUS_CAP_PREEDIT_TEXT | IBUS_CAP_AUXILIARY_TEXT | IBUS_CAP_LOOKUP_TABLE | IBUS_CAP_FOCUS
             | IBUS_CAP_PROPERTY | IBUS_CAP_SURROUNDING_TEXT)

# fcitx5 capability flags.
FCITX_CAP_PREEDIT = 1 << 1
FCITX_CAP_PASSWORD = 1 << 3
FCITX_CAP_FORMATTED_PREEDIT = 1 << 4
FCITX_CAP_SURROUNDING_TEXT = 1 << 6
FCITX_CAP_KEY_EVENT_ORDER_FIX = 1 << 37
FCITX_CAP_CLIENT_SIDE_INPUT_PANEL = 1 << 39
FCITX_CAPS = (FCITX_CAP_PREEDIT | FCITX_CAP_FORMATTED_PREEDIT | FCITX_CAP_SURROUNDING_TEXT
              | FCITX_CAP_KEY_EVENT_ORDER_FIX | FCITX_CAP_CLIENT_SIDE_INPUT_PANEL)


@dataclass
class Shown:
    """What the application shows and received."""

    commits: list[str] = field(default_factory=list)
    preedit: str = ""
    preedit_cursor: int = 0
    preedit_attrs: list = field(default_factory=list)   # IBus: Attribute; fcitx5: (text, flags) segments
    candidates: list[str] = field(default_factory=list)
    candidate_cursor: int = -1
    candidate_attrs: list = field(default_factory=list)   # IBus: each candidate's Attributes
    candidate_layout: int = -1   # IBus: the table's orientation; fcitx5: the list's layout hint
    aux: str = ""
    aux_down: str = ""           # fcitx5: the line beside (horizontal) or above (vertical) the list
    properties: list[gv.Property] = field(default_factory=list)
    forwarded: list[tuple[int, int, bool]] = field(default_factory=list)
    window_updates: int = 0   # candidate window redraws: IBus (Update|Hide)LookupTable, fcitx5 UpdateClientSideUI
    tables: list[list[str]] = field(default_factory=list)   # each candidate list shown, in order
    preedits: list[str] = field(default_factory=list)   # every preedit update's text, in order (repeats too)


async def _call(bus: MessageBus, dest: str, path: str, iface: str, member: str, sig: str = "",
                body: list | None = None) -> list:
    reply = await bus.call(Message(destination=dest, path=path, interface=iface, member=member,
                                   signature=sig, body=body or []))
    if reply.message_type == MessageType.ERROR:
        raise DBusError(reply.error_name, reply.body[0] if reply.body else "")
    return list(reply.body)


class _AppContext:
    """What both frontends' application contexts share: the bus, the context's object path, what
    the signals showed, and key taps; subclasses send keys and parse their frontend's signals."""

    def __init__(self, bus: MessageBus, path: str) -> None:
        self.bus = bus
        self.path = path
        self.shown = Shown()
        bus.add_message_handler(self._on_message)

    async def key(self, keyval: int, state: int = 0, release: bool = False) -> bool:
        raise NotImplementedError

    def _on_message(self, msg: Message) -> bool:
        raise NotImplementedError

    async def tap(self, keyval: int, state: int = 0) -> bool:
        """Press and release; the press's answer."""
        handled = await self.key(keyval, state)
        await self.key(keyval, state, release=True)
        return handled

    def disconnect(self) -> None:
        self.bus.disconnect()


class IBusApp(_AppContext):
    """One application input context on ibus-daemon."""

    IFACE = "org.freedesktop.IBus.InputContext"

    @classmethod
    async def connect(cls, address: str, name: str = "karukan-test") -> "IBusApp":
        bus = await MessageBus(bus_address=address).connect()
        (path,) = await _call(bus, "org.freedesktop.IBus", "/org/freedesktop/IBus", "org.freedesktop.IBus",
                              "CreateInputContext", "s", [name])
        app = cls(bus, path)
        await app.ic("SetCapabilities", "u", [IBUS_CAPS])
        await app.ic("FocusIn")
        return app

    async def ic(self, member: str, sig: str = "", body: list | None = None) -> list:
        return await _call(self.bus, "org.freedesktop.IBus", self.path, self.IFACE, member, sig, body)

    async def set_engine(self, name: str) -> None:
        await self.ic("SetEngine", "s", [name])

    async def engine_name(self) -> str | None:
        try:
            (desc,) = await self.ic("GetEngine")
        except DBusError:
            return None
        return desc.value[2]

    async def set_content_type(self, purpose: int, hints: int = 0) -> None:
        await _call(self.bus, "org.freedesktop.IBus", self.path, "org.freedesktop.DBus.Properties", "Set", "ssv",
                    [self.IFACE, "ContentType", Variant("(uu)", [purpose, hints])])

    async def set_surrounding_text(self, text: str, cursor: int, anchor: int | None = None) -> None:
        await self.ic("SetSurroundingText", "vuu", [gv.text(text), cursor, cursor if anchor is None else anchor])

    async def key(self, keyval: int, state: int = 0, release: bool = False) -> bool:
        (handled,) = await self.ic("ProcessKeyEvent", "uuu", [keyval, 0, state | (RELEASE_MASK if release else 0)])
        return handled

    def _on_message(self, msg: Message) -> bool:
        if msg.message_type != MessageType.SIGNAL or msg.path != self.path:
            return False
        s, body = self.shown, msg.body
        if msg.member == "CommitText":
            s.commits.append(gv.decode_text(body[0].value)[0])
        elif msg.member in ("UpdatePreeditText", "UpdatePreeditTextWithMode"):
            text, attrs = gv.decode_text(body[0].value)
            visible = body[2]
            s.preedit, s.preedit_cursor, s.preedit_attrs = (text, body[1], attrs) if visible else ("", 0, [])
            s.preedits.append(s.preedit)
        elif msg.member == "HidePreeditText":
            s.preedit, s.preedit_cursor, s.preedit_attrs = "", 0, []
            s.preedits.append("")
        elif msg.member == "UpdateLookupTable":
            s.window_updates += 1
            table = gv.decode_lookup_table(body[0].value)
            visible = body[1]
            s.candidates = list(table.candidates) if visible else []
            s.candidate_cursor = table.cursor if visible and table.cursor_visible else -1
            s.candidate_attrs = list(table.candidate_attrs) if visible else []
            s.candidate_layout = table.orientation
            if s.candidates:
                s.tables.append(s.candidates)
        elif msg.member == "HideLookupTable":
            s.window_updates += 1
            s.candidates, s.candidate_cursor, s.candidate_attrs = [], -1, []
        elif msg.member == "UpdateAuxiliaryText":
            s.aux = gv.decode_text(body[0].value)[0] if body[1] else ""
        elif msg.member == "RegisterProperties":
            s.properties = gv.decode_prop_list(body[0].value)
        elif msg.member == "ForwardKeyEvent":
            s.forwarded.append((body[0], body[2], bool(body[2] & RELEASE_MASK)))
        return True


class FcitxApp(_AppContext):
    """One application input context on fcitx5's D-Bus frontend."""

    IFACE = "org.fcitx.Fcitx.InputContext1"

    @classmethod
    async def connect(cls, address: str, program: str = "karukan-test", caps: int = FCITX_CAPS) -> "FcitxApp":
        bus = await MessageBus(bus_address=address).connect()
        # A display no focus group claims: each context keeps its own focus, like separate
        # applications on separate seats, so many can type at once.
        path, _uuid = await _call(bus, "org.fcitx.Fcitx5", "/org/freedesktop/portal/inputmethod",
                                  "org.fcitx.Fcitx.InputMethod1", "CreateInputContext", "a(ss)",
                                  [[["program", program], ["display", f"headless:{bus.unique_name}"]]])
        app = cls(bus, path)
        await app.ic("SetCapability", "t", [caps])
        await app.ic("FocusIn")
        return app

    async def ic(self, member: str, sig: str = "", body: list | None = None) -> list:
        return await _call(self.bus, "org.fcitx.Fcitx5", self.path, self.IFACE, member, sig, body)

    async def set_im(self, name: str) -> None:
        await _call(self.bus, "org.fcitx.Fcitx5", "/controller", "org.fcitx.Fcitx.Controller1",
                    "SetCurrentIM", "s", [name])

    async def current_im(self) -> str:
        (name,) = await _call(self.bus, "org.fcitx.Fcitx5", "/controller", "org.fcitx.Fcitx.Controller1",
                              "CurrentInputMethod")
        return name

    async def key(self, keyval: int, state: int = 0, release: bool = False) -> bool:
        (handled,) = await self.ic("ProcessKeyEvent", "uuubu", [keyval, 0, state, release, 0])
        return handled

    def _on_message(self, msg: Message) -> bool:
        if msg.message_type != MessageType.SIGNAL or msg.path != self.path:
            return False
        s, body = self.shown, msg.body
        if msg.member == "CommitString":
            s.commits.append(body[0])
        elif msg.member == "UpdateFormattedPreedit":
            segments = [(t, f) for t, f in body[0]]
            s.preedit = "".join(t for t, _f in segments)
            s.preedit_attrs = segments
            s.preedit_cursor = len(s.preedit.encode()[: max(0, body[1])].decode(errors="ignore"))
            s.preedits.append(s.preedit)
        elif msg.member == "UpdateClientSideUI":
            s.window_updates += 1
            preedit, cursor, aux_up, aux_down, cands, cand_index = body[:6]
            s.candidates = [text for _label, text in cands]
            s.candidate_cursor = cand_index if cands else -1
            if s.candidates:
                s.tables.append(s.candidates)
            s.aux = "".join(t for t, _f in aux_up)
            s.aux_down = "".join(t for t, _f in aux_down)
            s.candidate_layout = body[6] if len(body) > 6 else -1
        elif msg.member == "ForwardKey":
            s.forwarded.append((body[0], body[1], body[2]))
        return True
