"""Karukan selected again right after its engine process ended (issue 30 item 5).

The engine used to drop its IBus connection first and then save and tear down for ~0.17 s.
ibus-daemon, seeing the factory gone while the process still ran, took `ibus engine karukan`
as "already starting" and waited its 15 s timeout for a factory that never came ("Set global
engine failed: Timeout was reached"), leaving no engine. Now the process saves while still
connected and its connection closes as it ends, so the daemon sees both at once.
"""

from __future__ import annotations

import os
import signal
import subprocess

from dbus_fast import Message

from e2e_support import engine_pids, eventually, run
from ime_frontend.bus import MessageBus
from ime_frontend.ibus.component import COMPONENT_NAME
from karukan_testing.app_clients import IBusApp


async def _component_owned(bus: MessageBus) -> bool:
    reply = await bus.call(Message(destination="org.freedesktop.DBus", path="/org/freedesktop/DBus",
                                   interface="org.freedesktop.DBus", member="NameHasOwner", signature="s",
                                   body=[COMPONENT_NAME]))
    return bool(reply.body[0])


def _ibus(desktop, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["ibus", *args], env=desktop.env, capture_output=True, text=True, timeout=60)


async def _engine_up(desktop) -> bool:
    return _ibus(desktop, "engine").stdout.strip() == "karukan" and bool(engine_pids(desktop, "ime_frontend.ibus"))


def test_the_engine_selected_as_soon_as_ibus_sees_it_gone_starts_again(ibus_desktop):
    async def body():
        bus = await MessageBus(bus_address=ibus_desktop.ibus_address).connect()
        for _ in range(3):   # a few rounds: the old window was ~0.17 s, a selection takes ~20 ms
            _ibus(ibus_desktop, "engine", "karukan")
            await eventually(lambda: _engine_up(ibus_desktop), timeout_s=60, interval_s=0.1)
            await eventually(lambda: _component_owned(bus), timeout_s=60, interval_s=0.05)
            (pid,) = engine_pids(ibus_desktop, "ime_frontend.ibus")
            os.kill(pid, signal.SIGTERM)

            async def released() -> bool:
                return not await _component_owned(bus)

            await eventually(released, timeout_s=30, interval_s=0.001)
            # What a user or script does the moment the engine is gone: select it again.
            again = _ibus(ibus_desktop, "engine", "karukan")
            assert "Timeout was reached" not in again.stderr, again.stderr
            assert _ibus(ibus_desktop, "engine").stdout.strip() == "karukan", again.stderr
            assert engine_pids(ibus_desktop, "ime_frontend.ibus") not in ([], [pid])
            app = await IBusApp.connect(ibus_desktop.ibus_address)
            await app.set_engine("karukan")
            assert await app.tap(ord("a")) and app.shown.preedit == "あ"
            await app.tap(0xFF1B)   # Escape
            app.disconnect()
        bus.disconnect()

    run(body())
