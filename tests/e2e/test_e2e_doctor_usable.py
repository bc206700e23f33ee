"""`karukan doctor` checks that Karukan can be typed with, not only that it is installed
(issue 30 item 9): under IBus the engine must be the selected one and its process answer, under
fcitx5 Karukan must be in the group and its addon load; in both a key typed through the real
daemon must come back converted. Each failed check prints a one-line fix and the exit status
is 1. It used to print [ok] everywhere and exit 0 with Karukan's engine dead ("No engine is
set", the user types romaji) and with Karukan removed from the fcitx5 group.
"""

from __future__ import annotations

import os
import signal
import subprocess

from e2e_support import engine_pids, eventually, karukan, run
from karukan_testing.app_clients import FcitxApp


def _ibus(desktop, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["ibus", *args], env=desktop.env, capture_output=True, text=True, timeout=60)


async def _selected(desktop) -> bool:
    if _ibus(desktop, "engine").stdout.strip() != "karukan":
        _ibus(desktop, "engine", "karukan")
        return False
    return bool(engine_pids(desktop, "ime_frontend.ibus"))


def _doctor(desktop) -> tuple[int, str]:
    result = karukan(desktop, "doctor", check=False)
    return result.returncode, result.stdout + result.stderr


def test_doctor_under_ibus_fails_without_a_live_selected_engine(ibus_desktop):
    run(eventually(lambda: _selected(ibus_desktop), timeout_s=60, interval_s=0.2))
    status, out = _doctor(ibus_desktop)
    assert status == 0, out
    assert "[ok] ibus global engine: 'karukan' is selected" in out
    assert "[ok] ibus engine process: answers" in out
    assert "[ok] typing through IBus: a → あ" in out
    assert "engine service" not in out        # IBus runs Karukan's engine in its own process

    # The engine process gone: ibus-daemon has no engine, the user types romaji.
    (pid,) = engine_pids(ibus_desktop, "ime_frontend.ibus")
    os.kill(pid, signal.SIGKILL)

    async def no_engine() -> bool:
        return not engine_pids(ibus_desktop, "ime_frontend.ibus") and _ibus(ibus_desktop, "engine").stdout.strip() == ""

    run(eventually(no_engine, timeout_s=30, interval_s=0.1))
    status, out = _doctor(ibus_desktop)
    assert status == 1, out
    assert "[--] ibus global engine: no engine is set" in out
    assert "     fix: run: ibus engine karukan" in out

    # Another engine selected.
    _ibus(ibus_desktop, "engine", "xkb:us::eng")
    assert _ibus(ibus_desktop, "engine").stdout.strip() == "xkb:us::eng"
    status, out = _doctor(ibus_desktop)
    assert status == 1, out
    assert "[--] ibus global engine: 'xkb:us::eng' is selected, not Karukan" in out
    assert "fix: run: ibus engine karukan" in out

    # What the fix says brings it back.
    run(eventually(lambda: _selected(ibus_desktop), timeout_s=60, interval_s=0.2))
    status, out = _doctor(ibus_desktop)
    assert status == 0, out


async def _set_group(desktop, names: list[str]) -> None:
    """What fcitx5-configtool does when the user edits the group."""
    from dbus_fast import Message

    app = await FcitxApp.connect(desktop.session_address)
    await app.bus.call(Message(destination="org.fcitx.Fcitx5", path="/controller",
                               interface="org.fcitx.Fcitx.Controller1", member="SetInputMethodGroupInfo",
                               signature="ssa(ss)", body=["Default", "us", [[name, ""] for name in names]]))
    app.disconnect()


def test_doctor_under_fcitx5_fails_without_karukan_in_the_group(fcitx5_desktop):
    status, out = _doctor(fcitx5_desktop)
    assert status == 0, out
    assert "[ok] fcitx5 group: Karukan is in 'Default'" in out
    assert "[ok] fcitx5 addon: loaded; a → あ" in out

    run(_set_group(fcitx5_desktop, ["keyboard-us"]))
    status, out = _doctor(fcitx5_desktop)
    assert status == 1, out
    assert "[--] fcitx5 group: Karukan is not in the input-method group 'Default'" in out
    assert "     fix: add Karukan in fcitx5-configtool" in out

    run(_set_group(fcitx5_desktop, ["keyboard-us", "karukan"]))
    status, out = _doctor(fcitx5_desktop)
    assert status == 0, out
