"""`karukan install --user` in a running session, and `karukan doctor` about it (issue 14 items 2, 4).

Item 2: the session's ibus-daemon started before the install (no IBUS_COMPONENT_PATH, a registry
cache without our directory). install refreshes the cache, so `ibus restart` (same environment)
finds the engine; doctor names the missing step, and when IBus has rebuilt its cache without our
directory, the command install and doctor print makes that same session's IBus find it.
Item 4: while fcitx5 runs its IBus frontend (which owns org.freedesktop.IBus and writes IBus's
address file), doctor says so instead of "ibus-daemon: running" and an UnknownProperty error.
"""

from __future__ import annotations

import re
import shlex
import subprocess

from e2e_support import eventually, karukan, need, run
from karukan_testing.app_clients import IBusApp
from karukan_testing.headless import HeadlessDesktop


def _printed_command(install_stdout: str) -> str:
    match = re.search(r"restart ibus-daemon .*?: (IBUS_COMPONENT_PATH=\S+ ibus-daemon [^\n]+)", install_stdout)
    assert match, install_stdout
    return match.group(1)


async def _engine_is(app: IBusApp, name: str) -> bool:
    return await app.engine_name() == name


def _types(desktop: HeadlessDesktop) -> None:
    async def body():
        app = await IBusApp.connect(desktop.ibus_address)
        await app.set_engine("karukan")
        await eventually(lambda: _engine_is(app, "karukan"), timeout_s=60, interval_s=0.1)
        assert await app.tap(ord("a")) and app.shown.preedit == "あ"
        app.disconnect()

    run(body())


def test_a_user_install_is_usable_in_the_session_it_was_made_in():
    need("ibus-daemon", "ibus", "dbus-daemon")
    with HeadlessDesktop() as desktop:
        desktop.start_session_bus()
        # The login's ibus-daemon: no IBUS_COMPONENT_PATH, and it writes its registry cache.
        desktop.start_ibus(cache="auto", component_path="")
        install = karukan(desktop, "install", "--user", "--no-fcitx5", "--no-model")
        command = _printed_command(install.stdout)
        assert "registry cache refreshed" in install.stdout
        doctor = karukan(desktop, "doctor", check=False).stdout
        assert "[--] ibus engine: ibus-daemon does not list 'karukan'" in doctor, doctor
        assert "started without the per-user component directory (IBUS_COMPONENT_PATH unset)" in doctor
        assert "`ibus restart`, or if that does not help: " + command in doctor   # install's command

        # `ibus restart`: the same daemon, environment and cache mode; install refreshed the cache.
        desktop.start_ibus(cache="auto", component_path="")
        doctor = karukan(desktop, "doctor", check=False).stdout
        assert "[ok] ibus engine: 'karukan' is available in ibus-daemon" in doctor, doctor
        _types(desktop)

        # IBus rebuilt its cache since without our directory: even the variable is not enough
        # (the daemon trusts the cache), and doctor gives the command that rebuilds it.
        words = shlex.split(command)
        component_path = words[0].split("=", 1)[1]
        assert words[1:] == ["ibus-daemon", "-drx", "--cache=refresh"]
        subprocess.run(["ibus", "write-cache"], env={**desktop.env, "IBUS_COMPONENT_PATH": "/usr/share/ibus/component"},
                       check=True, capture_output=True, timeout=60)
        desktop.start_ibus(cache="auto", component_path=component_path)
        doctor = karukan(desktop, "doctor", check=False).stdout
        assert "but its registry cache predates the install" in doctor and command in doctor, doctor

        # What the command does (here without -d/-x: the daemon stays ours, no display).
        desktop.start_ibus(cache="refresh", component_path=component_path)
        doctor = karukan(desktop, "doctor", check=False).stdout
        assert "[ok] ibus engine: 'karukan' is available in ibus-daemon" in doctor, doctor
        _types(desktop)


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
