"""Shared set-up for the end-to-end tests: a private headless desktop per test module.

Every module gets its own HOME, its own session dbus-daemon and its own framework daemon; the
engine is installed into that HOME with `karukan install --user`, exactly as a user would.
Only processes started here are ever stopped (each in its own process group).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from e2e_support import karukan, live_conversion_off, need, need_fcitx5_addon
from karukan_testing.headless import HeadlessDesktop


def pytest_collection_modifyitems(items):
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.e2e)


@pytest.fixture(scope="module")
def desktop():
    with HeadlessDesktop() as d:
        live_conversion_off(d)
        d.start_session_bus()
        yield d


@pytest.fixture(scope="module")
def ibus_desktop(desktop):
    need("ibus-daemon", "dbus-daemon")
    karukan(desktop, "install", "--user", "--no-fcitx5", "--no-model")
    component_dir = Path(desktop.env["XDG_DATA_HOME"]) / "ibus/component"
    desktop.start_ibus([component_dir])
    return desktop


@pytest.fixture(scope="module")
def fcitx5_desktop(desktop):
    need_fcitx5_addon()
    # Builds the addon with CMake and installs it (and the D-Bus activation file) into this HOME.
    karukan(desktop, "install", "--user", "--no-ibus", "--no-model")
    desktop.start_fcitx5(["keyboard-us", "karukan"], ["dbus", "dbusfrontend", "keyboard", "karukan"],
                         extra_env={"KARUKAN_FCITX5_TIMEOUT_MS": "300", "KARUKAN_FCITX5_STARTUP_MS": "120000"})
    return desktop
