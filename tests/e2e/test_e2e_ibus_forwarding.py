"""IBus engine in forwarding mode (--backend service): IBus → our engine → engine service."""

from __future__ import annotations

import os
import signal

import pytest
from dbus_fast.errors import DBusError

from e2e_support import engine_pids, eventually, karukan, live_conversion_off, need, run
from ime_frontend.app_clients import IBusApp
from ime_frontend.headless import HeadlessDesktop
from ime_frontend.ibus.component import component_xml
from ime_frontend.install import python_command

SPACE, RETURN = 0x20, 0xFF0D


@pytest.fixture(scope="module")
def forwarding_desktop():
    need("ibus-daemon", "dbus-daemon")
    with HeadlessDesktop() as desktop:
        live_conversion_off(desktop)
        desktop.start_session_bus()
        karukan(desktop, "install", "--user", "--no-fcitx5", "--no-ibus", "--no-model")  # D-Bus activation
        components = desktop.root / "components"
        components.mkdir()
        exec_line = " ".join(python_command("ime_frontend.ibus", "--ibus", "--no-model", "--backend", "service"))
        (components / "karukan.xml").write_text(component_xml(exec_line))
        desktop.start_ibus([components])
        yield desktop


async def _handled(app: IBusApp, key: int) -> bool:
    try:
        return await app.tap(key)
    except DBusError:
        return False


def test_forwarding_engine_types_converts_and_survives_a_service_restart(forwarding_desktop):
    async def body():
        app = await IBusApp.connect(forwarding_desktop.ibus_address)
        await app.set_engine("karukan")
        # The first key D-Bus-activates the service; keys pass through until it answers.
        await eventually(lambda: _handled(app, ord("k")), timeout_s=45, interval_s=0.2)
        for ch in "anji":
            assert await app.tap(ord(ch))
        assert app.shown.preedit.endswith("かんじ")
        assert await app.tap(SPACE)
        assert "漢字" in app.shown.candidates
        assert await app.tap(RETURN)
        assert len(app.shown.commits) == 1
        for pid in engine_pids(forwarding_desktop, "ime_frontend.service"):
            os.kill(pid, signal.SIGKILL)
        assert not await _handled(app, ord("a"))          # passes through to the application
        await eventually(lambda: _handled(app, ord("a")), timeout_s=45, interval_s=0.2)
        assert app.shown.preedit.endswith("あ")
        app.disconnect()

    run(body())
