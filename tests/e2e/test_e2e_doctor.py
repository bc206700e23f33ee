"""`karukan install --user` in a running session, and `karukan doctor` about it (issue 14 items 2, 4).

Item 2: the session's ibus-daemon started before the install (no IBUS_COMPONENT_PATH, a registry
cache without our directory). `ibus restart` cannot help (it keeps that environment); doctor names
the missing step, and the command install prints makes that same session's IBus find the engine.
Item 4: while fcitx5 runs its IBus frontend (which owns org.freedesktop.IBus and writes IBus's
address file), doctor says so instead of "ibus-daemon: running" and an UnknownProperty error.
"""

from __future__ import annotations

import re
import shlex

from e2e_support import eventually, karukan, need, run
from ime_frontend.app_clients import IBusApp
from ime_frontend.headless import HeadlessDesktop


def _printed_command(install_stdout: str) -> str:
    match = re.search(r"restart ibus-daemon .*?: (IBUS_COMPONENT_PATH=\S+ ibus-daemon [^\n]+)", install_stdout)
    assert match, install_stdout
    return match.group(1)


async def _engine_is(app: IBusApp, name: str) -> bool:
    return await app.engine_name() == name


def test_a_user_install_is_usable_in_the_session_it_was_made_in():
    need("ibus-daemon", "dbus-daemon")
    with HeadlessDesktop() as desktop:
        desktop.start_session_bus()
        # The login's ibus-daemon: no IBUS_COMPONENT_PATH, and it writes its registry cache.
        desktop.start_ibus(cache="auto", component_path="")
        install = karukan(desktop, "install", "--user", "--no-fcitx5", "--no-model")
        command = _printed_command(install.stdout)
        doctor = karukan(desktop, "doctor", check=False).stdout
        assert "[--] ibus engine: ibus-daemon does not list 'karukan'" in doctor, doctor
        assert "started without the per-user component directory (IBUS_COMPONENT_PATH unset" in doctor
        assert command in doctor                     # the same exact command as install printed

        # The variable alone is not enough: the cache from before the install still wins.
        words = shlex.split(command)
        component_path = words[0].split("=", 1)[1]
        assert words[1:] == ["ibus-daemon", "-drx", "--cache=refresh"]
        desktop.start_ibus(cache="auto", component_path=component_path)
        doctor = karukan(desktop, "doctor", check=False).stdout
        assert "but its registry cache predates the install" in doctor and command in doctor, doctor

        # What the printed command does (here without -d/-x: the daemon stays ours, no display).
        desktop.start_ibus(cache="refresh", component_path=component_path)
        doctor = karukan(desktop, "doctor", check=False).stdout
        assert "[ok] ibus engine: 'karukan' is available in ibus-daemon" in doctor, doctor

        async def body():
            app = await IBusApp.connect(desktop.ibus_address)
            await app.set_engine("karukan")
            await eventually(lambda: _engine_is(app, "karukan"), timeout_s=60, interval_s=0.1)
            assert await app.tap(ord("a")) and app.shown.preedit == "あ"
            app.disconnect()

        run(body())

        # And from now on the refreshed cache lets a plain restart (old environment) find it too.
        desktop.start_ibus(cache="auto", component_path="")
        doctor = karukan(desktop, "doctor", check=False).stdout
        assert "[ok] ibus engine: 'karukan' is available in ibus-daemon" in doctor, doctor


def test_doctor_reports_fcitx5s_ibus_frontend_as_such():
    need("fcitx5", "dbus-daemon")
    with HeadlessDesktop() as desktop:
        # fcitx5 writes IBus's per-display address file, where an IBus client (and doctor) looks.
        del desktop.env["IBUS_ADDRESS_FILE"]
        desktop.start_session_bus()
        karukan(desktop, "install", "--user", "--no-fcitx5", "--no-model")
        desktop.start_fcitx5(["keyboard-us"], ["dbus", "dbusfrontend", "ibusfrontend", "keyboard"])

        async def frontend_is_up() -> bool:
            return any((desktop.home / ".config/ibus/bus").glob("*"))

        run(eventually(frontend_is_up, timeout_s=60, interval_s=0.1))
        doctor = karukan(desktop, "doctor", check=False).stdout
        assert "ibus-daemon: running" not in doctor, doctor
        assert "UnknownProperty" not in doctor and "ibus engine" not in doctor
        assert "[--] ibus-daemon: not running; fcitx5's IBus frontend answers IBus applications" in doctor
        assert "[ok] fcitx5: running" in doctor
