"""Late views through the real fcitx5 addon: only the service's own, and never an older one.

The addon calls the engine service synchronously; a ViewUpdated signal the service sends while
such a call waits is queued and dispatched after the reply, so without a check it would put an
older text over the reply's. And any peer on the bus can send the signal, so without a check it
could commit text into the focused application. Here a scripted engine service written in this
file owns org.karukan.Engine (the real one is never started) and answers the real addon, so each
ordering is produced exactly, not by chance.
"""

from __future__ import annotations

import asyncio

import pytest
from dbus_fast import Message, MessageType

from e2e_support import eventually, karukan, live_conversion_off, need_fcitx5_addon
from ime_frontend import operations as ops
from ime_frontend import wire
from ime_frontend.bus import MessageBus
from karukan_engine.session.view import PreeditSpan, View
from karukan_testing.app_clients import FCITX_CAPS, FcitxApp
from karukan_testing.headless import HeadlessDesktop

CONTEXT_ID = 7
VIEW_METHODS = {op.member for op in ops.CONTEXT_OPERATIONS if op.reply is ops.Reply.VIEW}
METHODS = {m.member: m for m in ops.INTERFACE_METHODS}


RETURN = 0xFF0D


def _view(preedit: str, commit: str = "", on_return: str = "") -> list:
    spans = (PreeditSpan(preedit),) if preedit else ()
    return wire.encode_view(View(handled=True, preedit=spans, caret=len(preedit), commit=commit, on_return=on_return))


class ScriptedService:
    """org.karukan.Engine answering with views this test decides: each key press's reply shows
    the key's letter, and `before_reply` / `after_reply` may send ViewUpdated signals around it."""

    def __init__(self, bus: MessageBus) -> None:
        self.bus = bus
        self.replies = 0          # view replies sent, as the real service counts them
        self.addon = ""           # the addon's unique name (the sender of CreateContext)
        self.current = _view("")  # what the last key press showed
        self.releases = 0         # releases the addon asked about (it should answer them itself)
        self.before_reply: list[tuple[int, list]] = []   # (replies field, view) sent, then a pause
        self.after_reply: list[tuple[int, list]] = []
        self.on_return = ""       # what each key press's view says a Return commits
        self.calls: list[tuple[str, list]] = []   # every call on a context, in arrival order
        bus.add_message_handler(self._on_call)

    def signal(self, replies: int, view: list, bus: MessageBus | None = None) -> None:
        (bus or self.bus).send(Message(
            message_type=MessageType.SIGNAL, destination=self.addon, path=wire.OBJECT_PATH,
            interface=wire.INTERFACE, member=ops.VIEW_UPDATED.member, signature=ops.VIEW_UPDATED.in_sig,
            body=[CONTEXT_ID, replies, view],
        ))

    def _on_call(self, msg: Message) -> bool:
        if msg.message_type != MessageType.METHOD_CALL or msg.path != wire.OBJECT_PATH or msg.member not in METHODS:
            return False
        asyncio.ensure_future(self._answer(msg))
        return True

    async def _answer(self, msg: Message) -> None:
        method = METHODS[msg.member]
        self.calls.append((msg.member, list(msg.body)))
        if msg.member == ops.CREATE_CONTEXT.member:
            self.addon = msg.sender
            body = [CONTEXT_ID]
        elif msg.member == ops.GET_INFO.member:
            body = [{}]
        elif msg.member in VIEW_METHODS:
            press = _is_press(msg)
            self.releases += msg.member == ops.PROCESS_KEY.member and msg.body[4]
            if press:
                self.current = _view(chr(msg.body[1]), on_return=self.on_return)
            body = [self.current]   # a release or any other call shows what is there
            if press:
                for replies, view in self.before_reply:
                    self.signal(replies, view)
                if self.before_reply:
                    await asyncio.sleep(0.1)   # the addon is waiting for this reply meanwhile
            self.replies += 1
        else:
            body = []
        self.bus.send(Message.new_method_return(msg, method.out_sig, body))
        if _is_press(msg):
            for replies, view in self.after_reply:
                self.current = view   # a late view after the reply is the service's state now
                self.signal(self.replies if replies < 0 else replies, view)


def _is_press(msg: Message) -> bool:
    return msg.member == ops.PROCESS_KEY.member and not msg.body[4]   # (context, sym, code, state, release)


@pytest.fixture(scope="module")
def scripted_desktop():
    need_fcitx5_addon()
    with HeadlessDesktop() as desktop:
        live_conversion_off(desktop)
        desktop.start_session_bus()
        karukan(desktop, "install", "--user", "--no-ibus", "--no-model")
        yield desktop


async def _session(desktop: HeadlessDesktop, script) -> None:
    service_bus = await MessageBus(bus_address=desktop.session_address).connect()
    service = ScriptedService(service_bus)
    await service_bus.request_name(wire.BUS_NAME)
    # fcitx5 starts after the name is owned: the addon never activates the real service.
    fcitx5 = await asyncio.get_running_loop().run_in_executor(None, lambda: desktop.start_fcitx5(
        ["keyboard-us", "karukan"], ["dbus", "dbusfrontend", "keyboard", "karukan"],
        extra_env={"KARUKAN_FCITX5_TIMEOUT_MS": "2000"}))
    app = await FcitxApp.connect(desktop.session_address, caps=FCITX_CAPS)
    try:
        await app.set_im("karukan")
        await app.tap(ord("a"))
        await _shown(lambda: app.shown.preedit == "a")
        assert service.addon
        await script(app, service)
    finally:
        app.disconnect()
        service_bus.disconnect()
        desktop.stop(fcitx5)


async def _shown(predicate) -> None:
    """fcitx5 draws a context's preedit in a deferred event after the key's reply."""
    async def check():
        return predicate()
    await eventually(check, timeout_s=10, interval_s=0.02)


async def _settled(app: FcitxApp) -> None:
    """Every signal that reached fcitx5 before is dispatched, and what it drew has been sent."""
    await app.current_im()
    await asyncio.sleep(0.3)


def test_a_view_sent_before_the_reply_does_not_replace_it_and_a_later_one_does(scripted_desktop):
    async def script(app: FcitxApp, service: ScriptedService) -> None:
        # Sent while the addon waits for the key's reply: older than the reply.
        service.before_reply = [(service.replies, _view("STALE"))]
        await app.tap(ord("b"))
        await _shown(lambda: app.shown.preedit == "b" or "STALE" in app.shown.preedits)
        await _settled(app)
        assert app.shown.preedit == "b" and "STALE" not in app.shown.preedits
        # Sent after the reply (what the model's refinement is): shown.
        service.before_reply = []
        service.after_reply = [(-1, _view("LATE"))]
        await app.tap(ord("c"))
        await _shown(lambda: app.shown.preedit == "LATE")

    asyncio.run(_session(scripted_desktop, script))


def test_a_view_from_another_peer_on_the_bus_is_ignored(scripted_desktop):
    async def script(app: FcitxApp, service: ScriptedService) -> None:
        intruder = await MessageBus(bus_address=scripted_desktop.session_address).connect()
        try:
            service.signal(service.replies + 5, _view("OWNED", commit="INJECTED"), bus=intruder)
            # fcitx5 reads its bus in order: once it answers the intruder's Ping, it has seen the signal.
            await intruder.call(Message(destination=service.addon, path="/", interface="org.freedesktop.DBus.Peer",
                                        member="Ping"))
            # The same signal from the service itself is applied: the check is the sender.
            service.current = _view("OWNED")
            service.signal(service.replies, _view("OWNED", commit="FROM-SERVICE"))
            await _shown(lambda: app.shown.commits and app.shown.preedit == "OWNED")
            assert app.shown.commits == ["FROM-SERVICE"]
        finally:
            intruder.disconnect()

    asyncio.run(_session(scripted_desktop, script))


def test_the_addon_answers_releases_itself(scripted_desktop):
    """The engine handles no release, so the addon never asks the service about one: each
    would be a round trip that keeps fcitx5 from the application's next key."""
    async def script(app: FcitxApp, service: ScriptedService) -> None:
        for ch in "bcd":
            await app.tap(ord(ch))   # press and release
        await _shown(lambda: app.shown.preedit == "d")
        await _settled(app)
        assert service.releases == 0

    asyncio.run(_session(scripted_desktop, script))


def test_a_plain_return_commits_what_the_view_said_without_waiting_for_the_service(scripted_desktop):
    """A view's on_return is committed by the addon itself; the service is told after
    (ReturnCommitted) and its late views of the committed composition are not shown."""
    async def script(app: FcitxApp, service: ScriptedService) -> None:
        service.on_return = "確定"
        await app.tap(ord("b"))
        await _shown(lambda: app.shown.preedit == "b")
        service.calls.clear()
        await app.tap(RETURN)
        await _shown(lambda: app.shown.commits == ["確定"] and app.shown.preedit == "")
        # The service's view of the composition, sent before it read ReturnCommitted: stale.
        service.signal(service.replies, _view("STALE"))
        await _settled(app)
        assert app.shown.preedit == "" and app.shown.commits == ["確定"]
        assert service.calls == [("ReturnCommitted", [CONTEXT_ID, "確定"])]
        # The next key's reply is the service's again, and so are late views after it.
        service.on_return = ""
        service.after_reply = [(-1, _view("LATE"))]
        await app.tap(ord("c"))
        await _shown(lambda: app.shown.preedit == "LATE")
        # A view that promises nothing: Return goes to the service as a key.
        service.after_reply = []
        service.calls.clear()
        await app.tap(RETURN)
        await _settled(app)
        assert [member for member, _body in service.calls] == [ops.PROCESS_KEY.member]
        assert service.calls[0][1][1] == RETURN and app.shown.commits == ["確定"]

    asyncio.run(_session(scripted_desktop, script))
