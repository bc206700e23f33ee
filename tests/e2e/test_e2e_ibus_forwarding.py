"""IBus engine in forwarding mode (--backend service): IBus → our engine → engine service.

The engine service is started by D-Bus activation; a test-only gate (KARUKAN_TEST_START_GATE,
inherited from dbus-daemon's environment) keeps the first start going until the cold-start test
has typed a whole sentence (issue 14 item 1: keys typed while the service starts are held and
converted, never passed through as romaji).
"""

from __future__ import annotations

import asyncio
import os
import signal

import pytest
from dbus_fast.errors import DBusError

from e2e_support import (engine_pids, eventually, live_conversion_off, need, run,
                          start_ibus_forwarding_to_a_gated_service)
from karukan_testing.app_clients import IBusApp
from karukan_testing.headless import HeadlessDesktop

SPACE, RETURN = 0x20, 0xFF0D


@pytest.fixture(scope="module")
def forwarding_desktop():
    need("ibus-daemon", "dbus-daemon")
    with HeadlessDesktop() as desktop:
        live_conversion_off(desktop)
        start_ibus_forwarding_to_a_gated_service(desktop)
        yield desktop


async def _handled(app: IBusApp, key: int) -> bool:
    try:
        return await app.tap(key)
    except DBusError:
        return False


WORDS = "kyouhaiitenkidesune"


def _sentence_keys() -> list[tuple[int, bool]]:
    return [(key, release) for key in [*map(ord, WORDS), SPACE, RETURN] for release in (False, True)]


async def _service_owned(desktop) -> bool:
    from dbus_fast import Message

    from ime_frontend.bus import MessageBus

    bus = await MessageBus(bus_address=desktop.session_address).connect()
    try:
        reply = await bus.call(Message(destination="org.freedesktop.DBus", path="/org/freedesktop/DBus",
                                       interface="org.freedesktop.DBus", member="NameHasOwner", signature="s",
                                       body=["org.karukan.Engine"]))
        return bool(reply.body[0])
    finally:
        bus.disconnect()


async def _engine_is(app: IBusApp, name: str) -> bool:
    return await app.engine_name() == name


def test_keys_typed_while_the_service_starts_are_held_and_converted(forwarding_desktop):
    desktop = forwarding_desktop

    async def cold():
        app = await IBusApp.connect(desktop.ibus_address)
        await app.set_engine("karukan")
        await eventually(lambda: _engine_is(app, "karukan"), timeout_s=60, interval_s=0.1)
        # A whole sentence, pipelined as an application sends it, while the service is starting.
        calls = [asyncio.ensure_future(app.key(key, release=release)) for key, release in _sentence_keys()]
        await eventually(lambda: _spawned(desktop), timeout_s=60, interval_s=0.1)
        await asyncio.sleep(0)
        assert not await _service_owned(desktop)    # the gate is shut: nothing can have answered
        # The presses are held, not passed through (a release is answered at once: the session
        # handles none).
        assert not any(c.done() for c in calls[0::2])
        (desktop.root / "engine-may-start").touch()
        answers = await asyncio.gather(*calls)
        presses = answers[0::2]
        app.disconnect()
        return presses, list(app.shown.commits)

    presses, cold_commits = run(cold())
    assert presses == [True] * len(presses)

    async def warm():
        app = await IBusApp.connect(desktop.ibus_address)
        await app.set_engine("karukan")
        await eventually(lambda: _engine_is(app, "karukan"), timeout_s=60, interval_s=0.1)
        for key, release in _sentence_keys():
            await app.key(key, release=release)
        app.disconnect()
        return list(app.shown.commits)

    warm_commits = run(warm())
    assert len(warm_commits) == 1 and not any(c.isascii() for c in warm_commits[0]), warm_commits
    assert cold_commits == warm_commits     # the converted Japanese, not romaji


async def _spawned(desktop) -> bool:
    return bool(engine_pids(desktop, "ime_frontend.service"))


def test_forwarding_engine_types_converts_and_survives_a_service_restart(forwarding_desktop):
    (forwarding_desktop.root / "engine-may-start").touch()

    async def body():
        app = await IBusApp.connect(forwarding_desktop.ibus_address)
        await app.set_engine("karukan")
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
        # The engine starts the service again and holds the key for it (a fresh context: the
        # composition, if any, died with the old service).
        assert await app.tap(ord("a"))
        assert app.shown.preedit == "あ"
        assert len(app.shown.commits) == 1
        app.disconnect()

    run(body())
