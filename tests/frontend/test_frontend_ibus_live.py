"""The in-process IBus engine with asynchronous live conversion, on a real private dbus-daemon.

The engine's Factory is exported on one connection and driven from another, as ibus-daemon
would drive it; the "model" is the gated fake of tests/support/service_fakes.py, so the order of events
is forced rather than timed.
"""

from __future__ import annotations

import asyncio

import pytest
from dbus_fast import Message, MessageType
from dbus_fast.aio import MessageBus

from ime_frontend.contexts import EngineCore
from karukan_testing.headless import HeadlessDesktop
from ime_frontend.ibus import gvariant as gv
from ime_frontend.ibus.engine import ENGINE_IFACE, FACTORY_PATH, RELEASE_MASK, Factory
from service_fakes import TIMEOUT_S, GatedModelConverter, live_config
from test_frontend_service import run


@pytest.fixture(scope="module")
def bus_address():
    with HeadlessDesktop() as desktop:
        yield desktop.start_session_bus()


def test_the_ibus_engine_updates_the_preedit_with_the_latest_keys_model_text(bus_address):
    converter = GatedModelConverter()
    core = EngineCore(converter, config=live_config())

    async def body():
        loop = asyncio.get_running_loop()
        engine_bus = await MessageBus(bus_address=bus_address).connect()

        async def make_context(on_update):
            return core.new_context(loop, on_update)

        engine_bus.export(FACTORY_PATH, Factory(engine_bus, make_context, {"karukan"}))
        daemon = await MessageBus(bus_address=bus_address).connect()   # plays ibus-daemon
        preedits: list[str] = []
        changed = asyncio.Event()

        def on_signal(msg: Message) -> None:
            if msg.message_type == MessageType.SIGNAL and msg.member == "UpdatePreeditText":
                preedits.append(gv.decode_text(msg.body[0])[0])
                changed.set()

        daemon.add_message_handler(on_signal)
        await daemon.call(Message(
            destination="org.freedesktop.DBus", path="/org/freedesktop/DBus",
            interface="org.freedesktop.DBus", member="AddMatch", signature="s",
            body=[f"type='signal',interface='{ENGINE_IFACE}',sender='{engine_bus.unique_name}'"]))

        async def call(path: str, interface: str, member: str, signature: str = "", body=()) -> list:
            reply = await daemon.call(Message(destination=engine_bus.unique_name, path=path,
                                              interface=interface, member=member,
                                              signature=signature, body=list(body)))
            assert reply.message_type == MessageType.METHOD_RETURN, reply.body
            return reply.body

        (path,) = await call(FACTORY_PATH, "org.freedesktop.IBus.Factory", "CreateEngine", "s", ["karukan"])

        async def key_handled(keysym: int, release: bool = False) -> bool:
            state = RELEASE_MASK if release else 0
            (handled,) = await call(path, ENGINE_IFACE, "ProcessKeyEvent", "uuu", [keysym, 0, state])
            return handled

        async def key(keysym: int, release: bool = False) -> None:
            await key_handled(keysym, release)

        await call(path, ENGINE_IFACE, "FocusIn")
        await key(ord("k"))
        await key(ord("a"))
        assert preedits[-1] == "か"                     # answered at once with the dictionary text
        assert await asyncio.to_thread(converter.model_started, "か")
        await key(ord("i"))
        assert preedits[-1] == "かい"
        changed.clear()
        converter.gate.set()
        await asyncio.wait_for(changed.wait(), TIMEOUT_S)
        assert preedits[-1] == "[かい]"
        assert await asyncio.to_thread(core.live.scheduler.idle, TIMEOUT_S)
        # Shift alone changes nothing, but it goes through the context, after any late view
        # still on its way (a release no longer does: the engine answers it itself).
        await key(0xFFE1)
        assert not await key_handled(0xFFE1, release=True)
        assert "[か]" not in preedits, "the superseded key's model text must never be shown"
        assert preedits[-1] == "[かい]"
        daemon.disconnect()
        engine_bus.disconnect()

    try:
        run(body())
    finally:
        core.close()
    assert converter.closed == 1
