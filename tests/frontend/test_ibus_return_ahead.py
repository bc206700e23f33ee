"""The IBus engine answers a plain Return from the last view's on_return: the commit goes out
before the session is asked, and the session finishes the Return (learning) afterwards, ahead of
the next key. A late view that arrives meanwhile belongs to the committed text and is dropped."""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor

from ime_frontend.contexts import ContextHost
from ime_frontend.ibus import gvariant as gv
from ime_frontend.ibus.engine import KarukanEngine
from karukan_engine.config import Config, SessionSettings
from karukan_engine.session import Session
from karukan_engine.session.keysyms import CONTROL_MASK, NAME_TO_KEYSYM
from karukan_engine.session.view import PreeditSpan, View
from session_fakes import NO_REWRITERS, ScriptedConverter

RETURN = NAME_TO_KEYSYM["Return"]
process_key_event = KarukanEngine.ProcessKeyEvent.__wrapped__   # the method as the bus calls it


class RecordingBus:
    def __init__(self) -> None:
        self.signals: list[tuple[str, list]] = []

    def send(self, message) -> None:
        self.signals.append((message.member, message.body))

    def commits(self) -> list[str]:
        return [gv.decode_text(body[0])[0] for member, body in self.signals if member == "CommitText"]

    def preedits(self) -> list[str]:
        return [gv.decode_text(body[0])[0] for member, body in self.signals if member == "UpdatePreeditText"]


class GatedContext:
    """The in-process context, whose worker holds Return's finishing (inside the context's
    turn, as a slow session would) until the test opens the gate."""

    def __init__(self, host: ContextHost) -> None:
        self.host = host
        self.gate = threading.Event()
        self.returned: list[str] = []

    async def process_key(self, keysym: int, modifiers: int, release: bool) -> View:
        return await self.host.process_key(keysym, modifiers, release)

    async def return_committed(self, text: str) -> View:
        def finish(session: Session) -> View:
            assert self.gate.wait(10)
            self.returned.append(text)
            return session.return_committed(text)

        return await self.host.call(finish)


def engine_with(converter) -> tuple[KarukanEngine, RecordingBus, GatedContext]:
    config = Config(session=SessionSettings(live_conversion=True), rewriters=NO_REWRITERS)
    host = ContextHost(Session(converter, config), ThreadPoolExecutor(1), asyncio.get_running_loop())
    bus = RecordingBus()
    context = GatedContext(host)
    engine = KarukanEngine(bus, "/org/freedesktop/IBus/Engine/1", context, lambda engine: None)
    engine._focused = True
    return engine, bus, context


async def type_text(engine: KarukanEngine, text: str) -> None:
    for ch in text:
        assert await process_key_event(engine, ord(ch), 0, 0)


def test_return_commits_before_the_session_is_asked_and_the_session_learns_after():
    converter = ScriptedConverter({"かい": ["会", "貝"]})

    async def body() -> None:
        engine, bus, context = engine_with(converter)
        await type_text(engine, "kai")
        assert bus.preedits()[-1] == "会"
        assert await process_key_event(engine, RETURN, 0, 0)
        # Answered with the session not yet told: the text is committed and the preedit gone.
        assert bus.commits() == ["会"] and bus.preedits()[-1] == "" and context.returned == []
        assert converter.recorded == []
        # A late view of the committed composition, arriving meanwhile, is not shown.
        engine.late_view(View(handled=True, preedit=(PreeditSpan("貝"),), caret=1))
        assert bus.preedits()[-1] == ""
        # The next key waits behind the Return's finishing, which learns what Return learns.
        next_key = asyncio.ensure_future(process_key_event(engine, ord("k"), 0, 0))
        await asyncio.sleep(0.05)
        assert not next_key.done()
        context.gate.set()
        assert await next_key
        assert context.returned == ["会"]
        assert converter.recorded == [([("かい", "会")], "")]
        assert bus.preedits()[-1] == "ｋ" and bus.commits() == ["会"]
        # Late views are shown again once the session has finished the Return.
        engine.late_view(View(handled=True, preedit=(PreeditSpan("か"),), caret=1))
        assert bus.preedits()[-1] == "か"

    asyncio.run(body())


def test_return_asks_the_session_when_the_view_promised_nothing_or_a_modifier_is_held():
    converter = ScriptedConverter({"かん": ["漢"]})

    async def body() -> None:
        engine, bus, context = engine_with(converter)
        context.gate.set()
        await type_text(engine, "kan")          # n pending: Return settles it to ん first
        assert await process_key_event(engine, RETURN, 0, 0)
        assert bus.commits() == ["漢"] and context.returned == []
        await type_text(engine, "kai")
        assert not await process_key_event(engine, RETURN, 0, CONTROL_MASK)   # C-Return: the session says
        assert context.returned == []

    asyncio.run(body())
