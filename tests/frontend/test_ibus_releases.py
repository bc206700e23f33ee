"""The IBus engine answers a key's release itself: the session handles none and changes nothing
for one (tests/session/test_session_machine.py checks that), so a round trip through the
context would only delay the application's next key."""

from __future__ import annotations

import asyncio

from ime_frontend.ibus.engine import RELEASE_MASK, KarukanEngine
from karukan_engine.session.view import View


class RecordingContext:
    def __init__(self) -> None:
        self.keys: list[tuple[int, int, bool]] = []

    async def process_key(self, keysym: int, modifiers: int, release: bool) -> View:
        self.keys.append((keysym, modifiers, release))
        return View(handled=True)


class NoBus:
    def send(self, message) -> None:
        pass


def test_a_release_is_answered_without_the_session_and_a_press_goes_to_it():
    context = RecordingContext()
    engine = KarukanEngine(NoBus(), "/org/freedesktop/IBus/Engine/1", context, lambda engine: None)

    # the method itself, as the bus calls it (dbus-fast's decorator wraps it)
    process_key_event = KarukanEngine.ProcessKeyEvent.__wrapped__

    async def keys() -> tuple[bool, bool]:
        pressed = await process_key_event(engine, ord("a"), 0, 0)
        released = await process_key_event(engine, ord("a"), 0, RELEASE_MASK)
        return pressed, released

    assert asyncio.run(keys()) == (True, False)
    assert context.keys == [(ord("a"), 0, False)]
