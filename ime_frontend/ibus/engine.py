"""The Karukan IBus engine: the IBus engine D-Bus protocol spoken directly with dbus-fast.

ibus-daemon starts this process from our component XML (`--ibus`), or it registers itself
(RegisterComponent) when started by hand. The daemon asks the Factory for engines; each engine
object forwards IBus calls to an input context (in-process ContextHost or the engine service's
RemoteContext) and turns the resulting Views into IBus signals, sent before the call's reply so
the client sees them when ProcessKeyEvent returns.

No annotations import from __future__ here: dbus-fast reads the D-Bus signatures from them.
"""

import asyncio
import logging
from typing import Any, Awaitable, Callable

from dbus_fast import Message
from dbus_fast.aio import MessageBus
from dbus_fast.constants import PropertyAccess
from dbus_fast.service import ServiceInterface, dbus_property, method

from ime_frontend.ibus import gvariant as gv
from ime_frontend.ibus.properties import PROP_PREFIX, mode_properties
from ime_frontend.ibus.placement import TablePlacement, cursor_wait_s
from ime_frontend.ibus.render import IBusRenderer, Signal
# The operations an engine forwards to its context (in process, or through the engine service).
from ime_frontend.operations import InputContext
from ime_frontend.toolkit import IBUS_RELEASE_MASK as RELEASE_MASK, PASSWORD_PURPOSES, session_key_state
from karukan_engine.session.keysyms import NAME_TO_KEYSYM, binding_modifiers
from karukan_engine.session.view import View

log = logging.getLogger(__name__)

ENGINE_IFACE = "org.freedesktop.IBus.Engine"
ENGINE_PATH_PREFIX = "/org/freedesktop/IBus/Engine/"
FACTORY_PATH = "/org/freedesktop/IBus/Factory"

KEY_UP, KEY_DOWN, KEY_RETURN = 0xFF52, 0xFF54, NAME_TO_KEYSYM["Return"]


ContextFactory = Callable[[Callable[[View], None]], Awaitable[InputContext]]


class KarukanEngine(ServiceInterface):
    """One org.freedesktop.IBus.Engine object (one per input context the daemon opens)."""

    def __init__(self, bus: MessageBus, path: str, context: InputContext,
                 on_destroy: Callable[["KarukanEngine"], None], vertical: bool = True) -> None:
        super().__init__(ENGINE_IFACE)   # never assign self.name: it is the interface name
        self._bus = bus
        self.path = path
        self._context = context
        self._on_destroy = on_destroy
        self._renderer = IBusRenderer(vertical=vertical)
        # Lookup tables the panel draws wait for the client's new cursor rectangle (placement.py).
        self._placement = TablePlacement()
        self._held_timer: asyncio.TimerHandle | None = None
        self._cursor_wait_s = cursor_wait_s()
        self._purpose = 0
        self._hints = 0
        self._mode: str | None = None
        self._focused = False
        # What a plain Return commits, from the last view shown (View.on_return), and how many
        # such Returns the session has still to finish (late views meanwhile are stale).
        self._on_return = ""
        self._returning = 0

    # --- sending ------------------------------------------------------------------------------

    def _send(self, signals: list[Signal]) -> None:
        for member, signature, body in signals:
            self._bus.send(Message.new_signal(self.path, ENGINE_IFACE, member, signature, body))

    def show(self, view: View, commit: bool = True) -> None:
        """Render a view: commit text, preedit, candidates, aux and the input-mode menu."""
        self._send_placed(self._renderer.render(view, commit))
        self._on_return = view.on_return
        if view.mode != self._mode:
            self._update_mode(view.mode)

    def _send_placed(self, signals: list[Signal]) -> None:
        """Send now what may go now; a held lookup table goes when the client reports where its
        caret is drawn, or after the bound (placement.cursor_wait_s)."""
        self._send(self._placement.batch(signals, self._renderer.caret_moved))
        self._cancel_held_timer()
        if self._placement.held is not None:
            self._held_timer = asyncio.get_running_loop().call_later(self._cursor_wait_s, self._release_table)

    def _cancel_held_timer(self) -> None:
        if self._held_timer is not None:
            self._held_timer.cancel()
            self._held_timer = None

    def _release_table(self) -> None:
        self._held_timer = None
        self._send(self._placement.release())

    def _update_mode(self, mode: str) -> None:
        # Re-registering the whole menu updates both the button label and the checked radio item.
        self._send([("RegisterProperties", "v", [gv.prop_list(mode_properties(mode))])])
        self._mode = mode

    def late_view(self, view: View) -> None:
        """A view that arrived after its key was answered (model result), or the commit of what
        was typed when the field turned into a password field (the engine service sends it)."""
        if not self._focused or self._returning:
            return
        if not self.password_field:
            self.show(view)
        elif view.commit:
            self._send_placed(self._renderer.render(View(handled=False, commit=view.commit)))

    @property
    def password_field(self) -> bool:
        return self._purpose in PASSWORD_PURPOSES

    # --- org.freedesktop.IBus.Engine ---------------------------------------------------------

    @method()
    async def ProcessKeyEvent(self, keyval: "u", keycode: "u", state: "u") -> "b":
        if self.password_field or state & RELEASE_MASK:
            # The session handles no release and changes nothing for one (Session.process_key).
            return False
        if keyval == KEY_RETURN and self._on_return and not binding_modifiers(session_key_state(state)[0]):
            self._commit_return(self._on_return)
            return True
        view = await self._context.process_key(keyval, state, False)
        self.show(view)
        return bool(view.handled)

    def _commit_return(self, text: str) -> None:
        """Return: commit what the last view says it commits, with no wait on the session, which
        finishes the Return (learning) after the reply, before any later call."""
        self.show(View(handled=True, commit=text, mode=self._mode or View.mode))
        self._returning += 1
        task = asyncio.ensure_future(self._context.return_committed(text))
        task.add_done_callback(self._returned)

    def _returned(self, task: "asyncio.Future[Any]") -> None:
        self._returning -= 1
        _log_failure(task, "Return")

    @method()
    async def FocusIn(self):
        await self._focus_in()

    @method()
    async def FocusInId(self, object_path: "s", client: "s"):
        await self._focus_in()

    @method()
    async def FocusOut(self):
        await self._focus_out()

    @method()
    async def FocusOutId(self, object_path: "s"):
        await self._focus_out()

    async def _focus_in(self) -> None:
        self._focused = True
        self._placement.hidden()   # the panel's one window served other contexts meanwhile
        self.show(await self._context.focus_in())

    async def _focus_out(self) -> None:
        self._focused = False
        self._on_return = ""
        # ibus-daemon already committed the visible preedit (PREEDIT_COMMIT mode): drop the
        # session's own focus-out commit and just clear what the client shows.
        await self._context.focus_out()
        self._send_placed(self._renderer.clear())

    @method()
    async def Reset(self):
        self.show(await self._context.reset(), commit=False)

    @method()
    async def Enable(self):
        self.show(await self._context.set_enabled(True))

    @method()
    async def Disable(self):
        view = await self._context.set_enabled(False)
        self.show(view)
        self._send_placed(self._renderer.clear())

    @method()
    async def PageUp(self):
        self.show(await self._context.page_up())

    @method()
    async def PageDown(self):
        self.show(await self._context.page_down())

    @method()
    async def CursorUp(self):
        await self._candidate_key(KEY_UP)

    @method()
    async def CursorDown(self):
        await self._candidate_key(KEY_DOWN)

    async def _candidate_key(self, keysym: int) -> None:
        """Panel arrow buttons act like the arrow keys, while candidates are shown."""
        if self._renderer.showing_candidates:
            self.show(await self._context.process_key(keysym, 0, False))
            await self._context.process_key(keysym, 0, True)

    @method()
    async def CandidateClicked(self, index: "u", button: "u", state: "u"):
        self.show(await self._context.select_candidate(index))

    @method()
    async def SetSurroundingText(self, text: "v", cursor_pos: "u", anchor_pos: "u"):
        value, _attrs = gv.decode_text(text.value)
        cursor = min(cursor_pos, len(value))
        await self._context.set_surrounding_text(value, cursor, min(anchor_pos, len(value)))

    @method()
    def SetCapabilities(self, caps: "u"):
        self._placement.set_capabilities(caps)

    @method()
    def SetCursorLocation(self, x: "i", y: "i", w: "i", h: "i"):
        # ibus-daemon gave the panel this rectangle before us: a held table is placed at it.
        held = self._placement.cursor_reported()
        if held:
            self._cancel_held_timer()
            self._send(held)

    @method()
    def ProcessHandWritingEvent(self, coordinates: "ad"):
        pass

    @method()
    def CancelHandWriting(self, n_strokes: "u"):
        pass

    @method()
    async def PropertyActivate(self, name: "s", state: "u"):
        if name.startswith(PROP_PREFIX) and state == gv.PropState.CHECKED:
            self.show(await self._context.set_input_mode(name[len(PROP_PREFIX):]))

    @method()
    def PropertyShow(self, name: "s"):
        pass

    @method()
    def PropertyHide(self, name: "s"):
        pass

    @method()
    def PanelExtensionReceived(self, event: "v"):
        pass

    @method()
    def PanelExtensionRegisterKeys(self, data: "v"):
        pass

    @dbus_property(access=PropertyAccess.WRITE)
    def ContentType(self) -> "(uu)":
        return [self._purpose, self._hints]

    @ContentType.setter
    def ContentType(self, value: "(uu)"):
        self._purpose, self._hints = value
        task = asyncio.ensure_future(self._content_type_changed(self._purpose, self._hints))
        task.add_done_callback(lambda done: _log_failure(done, "content type update"))
        if self.password_field:
            self._send_placed(self._renderer.clear())

    async def _content_type_changed(self, purpose: int, hints: int) -> None:
        # A field that became a password field mid-composition: the session commits what was
        # shown (never learned) and answers with it in process; through the engine service the
        # commit arrives as a late view instead.
        view = await self._context.set_content_type(purpose, hints)
        if isinstance(view, View) and view.commit:
            self._send_placed(self._renderer.render(View(handled=False, commit=view.commit)))

    @dbus_property(access=PropertyAccess.READ)
    def FocusId(self) -> "b":
        return True

    async def destroy(self) -> None:
        self._cancel_held_timer()
        await self._context.close()
        self._on_destroy(self)


class EngineObjectService(ServiceInterface):
    """org.freedesktop.IBus.Service on each engine path: the daemon calls Destroy when done."""

    def __init__(self, engine: KarukanEngine) -> None:
        super().__init__("org.freedesktop.IBus.Service")
        self._engine = engine

    @method()
    async def Destroy(self):
        await self._engine.destroy()


class Factory(ServiceInterface):
    """org.freedesktop.IBus.Factory: CreateEngine hands the daemon a new engine object path."""

    def __init__(self, bus: MessageBus, make_context: ContextFactory, engine_names: set[str],
                 vertical: bool = True) -> None:
        super().__init__("org.freedesktop.IBus.Factory")
        self._bus = bus
        self._vertical = vertical   # [ui] candidate_layout
        self._make_context = make_context
        self._engine_names = engine_names
        self._next = 1
        self.engines: dict[str, KarukanEngine] = {}

    @method()
    async def CreateEngine(self, engine_name: "s") -> "o":
        if engine_name not in self._engine_names:
            from dbus_fast.errors import DBusError

            raise DBusError("org.freedesktop.DBus.Error.InvalidArgs", "unknown engine")
        path = f"{ENGINE_PATH_PREFIX}{self._next}"
        self._next += 1
        holder: list[KarukanEngine] = []
        context = await self._make_context(lambda view: holder[0].late_view(view) if holder else None)
        engine = KarukanEngine(self._bus, path, context, self._forget, self._vertical)
        holder.append(engine)
        self._bus.export(path, engine)
        self._bus.export(path, EngineObjectService(engine))
        self.engines[path] = engine
        log.debug("engine %s created", path)
        return path

    def _forget(self, engine: KarukanEngine) -> None:
        self.engines.pop(engine.path, None)
        self._bus.unexport(engine.path)


def _log_failure(task: "asyncio.Future[Any]", what: str) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.error("%s failed: %s", what, type(task.exception()).__name__)
