"""The IBus engine started by hand: it registers its component itself (RegisterComponent)."""

from __future__ import annotations

import sys

import pytest

from e2e_support import eventually, need, run
from karukan_testing.app_clients import IBusApp
from karukan_testing.headless import HeadlessDesktop, read_line


@pytest.fixture(scope="module")
def register_desktop():
    need("ibus-daemon", "dbus-daemon")
    with HeadlessDesktop() as desktop:
        desktop.start_session_bus()
        desktop.start_ibus([])                  # no component of ours on disk
        engine = desktop.spawn("ibus-engine", [sys.executable, "-m", "ime_frontend.ibus", "--no-model"],
                               stdout_pipe=True)
        assert read_line(engine.stdout, "IBus engine").strip() == "READY"
        yield desktop


async def _typed(app: IBusApp) -> bool:
    return await app.engine_name() == "karukan" and await app.tap(ord("a"))


def test_registered_engine_types(register_desktop):
    async def body():
        app = await IBusApp.connect(register_desktop.ibus_address)
        await app.set_engine("karukan")
        await eventually(lambda: _typed(app))
        assert app.shown.preedit == "あ"
        app.disconnect()

    run(body())
