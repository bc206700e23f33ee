"""A cold start through fcitx5 (issue 14 item 1): the first keys of a session arrive while the
engine service is still starting, and the application must get the converted Japanese, not romaji.

The service is started by D-Bus activation, as on a desktop; a test-only gate
(KARUKAN_TEST_START_GATE, inherited from dbus-daemon's environment) keeps it starting until the
test has typed everything, so the keys provably arrive before the service owns its name.
"""

from __future__ import annotations

import os
import signal
import subprocess

import pytest
from dbus_fast import Message

from e2e_support import engine_pids, eventually, karukan, live_conversion_off, need_fcitx5_addon, run
from karukan_testing.app_clients import FCITX_CAPS, FcitxApp
from ime_frontend.bus import MessageBus
from karukan_testing.headless import HeadlessDesktop

SPACE, RETURN = 0x20, 0xFF0D
WORDS = "kyouhaiitenkidesune"


@pytest.fixture(scope="module")
def cold_desktop():
    need_fcitx5_addon()
    with HeadlessDesktop() as desktop:
        live_conversion_off(desktop)
        desktop.env["KARUKAN_TEST_START_GATE"] = str(desktop.root / "engine-may-start")
        desktop.start_session_bus()    # activated services inherit its environment, gate included
        karukan(desktop, "install", "--user", "--no-ibus", "--no-model")
        # A startup budget far beyond the gate's life: this test is about holding, not falling back.
        desktop.start_fcitx5(["keyboard-us", "karukan"], ["dbus", "dbusfrontend", "keyboard", "karukan"],
                             extra_env={"KARUKAN_FCITX5_STARTUP_MS": "300000"})
        yield desktop


async def _name_has_owner(address: str, name: str) -> bool:
    bus = await MessageBus(bus_address=address).connect()
    try:
        reply = await bus.call(Message(destination="org.freedesktop.DBus", path="/org/freedesktop/DBus",
                                       interface="org.freedesktop.DBus", member="NameHasOwner", signature="s",
                                       body=[name]))
        return bool(reply.body[0])
    finally:
        bus.disconnect()


async def _typed_session(app: FcitxApp) -> list[bool]:
    answers = [await app.tap(ord(ch)) for ch in WORDS]
    answers.append(await app.tap(SPACE))
    answers.append(await app.tap(RETURN))
    return answers


def _presses(app: FcitxApp) -> list[int]:
    return [sym for sym, _state, release in app.shown.forwarded if not release]


def test_keys_typed_while_the_engine_starts_are_held_and_converted(cold_desktop):
    desktop = cold_desktop
    gate = desktop.root / "engine-may-start"

    async def cold():
        app = await FcitxApp.connect(desktop.session_address, caps=FCITX_CAPS)
        await app.set_im("karukan")
        assert await app.current_im() == "karukan"
        answers = await _typed_session(app)
        # Every key was typed while the service was still starting (it cannot own its name
        # before the gate opens), and none of them went to the application.
        assert not await _name_has_owner(desktop.session_address, "org.karukan.Engine")
        assert engine_pids(desktop, "ime_frontend.service"), "the addon did not start the service"
        assert answers == [True] * len(answers)
        assert app.shown.commits == [] and _presses(app) == []
        gate.touch()
        await eventually(lambda: _committed(app), timeout_s=120, interval_s=0.1)
        await app.ic("FocusIn")    # a round trip: every signal of the replay is in
        return app

    app = run(cold())
    cold_commits, cold_presses = list(app.shown.commits), _presses(app)
    app.disconnect()

    async def warm():
        # The same keys with the service up: what the user should have got the first time.
        app = await FcitxApp.connect(desktop.session_address, caps=FCITX_CAPS)
        await app.set_im("karukan")
        await _typed_session(app)
        await app.ic("FocusIn")
        app.disconnect()
        return list(app.shown.commits)

    warm_commits = run(warm())
    assert len(warm_commits) == 1 and not any(c.isascii() for c in warm_commits[0]), warm_commits
    assert cold_commits == warm_commits      # the converted Japanese, not romaji
    assert cold_presses == []                # and nothing reached the application raw


async def _committed(app: FcitxApp) -> bool:
    return bool(app.shown.commits)


def test_keys_go_to_the_application_when_the_service_cannot_start(cold_desktop):
    """The fallback: no activatable service at all. Held keys reach the application unchanged,
    in the order typed."""
    desktop = cold_desktop
    (desktop.root / "engine-may-start").touch()
    activation = desktop.home / ".local/share/dbus-1/services/org.karukan.Engine.service"
    saved = activation.read_text()
    activation.unlink()
    subprocess.run(["dbus-send", "--session", "--print-reply", "--dest=org.freedesktop.DBus",
                    "/org/freedesktop/DBus", "org.freedesktop.DBus.ReloadConfig"], env=desktop.env,
                   capture_output=True, check=True, timeout=30)
    try:
        for pid in engine_pids(desktop, "ime_frontend.service"):
            os.kill(pid, signal.SIGKILL)

        async def body():
            await eventually(lambda: _gone(desktop), timeout_s=30, interval_s=0.1)
            app = await FcitxApp.connect(desktop.session_address, caps=FCITX_CAPS)
            await app.set_im("karukan")
            unhandled = [ch for ch in "kana" if not await app.tap(ord(ch))]   # typed by the app itself
            await eventually(lambda: _reached(app, unhandled, 4), timeout_s=60, interval_s=0.1)
            received = "".join(chr(sym) for sym in _presses(app)) + "".join(unhandled)
            commits, preedit = list(app.shown.commits), app.shown.preedit
            app.disconnect()
            return received, commits, preedit

        # Held keys are forwarded once the start fails; keys typed after that pass straight
        # through, so the held ones come first: the application has them in the order typed.
        received, commits, preedit = run(body())
        assert received == "kana" and commits == [] and preedit == ""
    finally:
        activation.write_text(saved)


async def _gone(desktop: HeadlessDesktop) -> bool:
    return not await _name_has_owner(desktop.session_address, "org.karukan.Engine")


async def _reached(app: FcitxApp, unhandled: list[str], count: int) -> bool:
    await app.ic("FocusIn")    # a round trip: forwarded keys sent before it are in
    return len(_presses(app)) + len(unhandled) >= count
