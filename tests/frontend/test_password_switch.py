"""A field that turns into a password field mid-composition (issue 17 item 10).

Decision (docs/reliability.md): what is shown is committed, never learned, as a focus change
commits it; the text the user typed is not lost, and nothing stays hidden in the session to
reappear later. (ibus-mozc reverts the composition instead; Karukan keeps the text, as its
focus-out does.)
"""

from __future__ import annotations

import asyncio

import pytest
from dbus_fast import Message, MessageType, Variant
from dbus_fast.aio import MessageBus

from ime_frontend.client import EngineClient
from ime_frontend.contexts import EngineCore
from karukan_testing.headless import HeadlessDesktop
from ime_frontend.ibus import gvariant as gv
from ime_frontend.ibus.engine import ENGINE_IFACE, FACTORY_PATH, Factory
from ime_frontend.toolkit import PURPOSE_PASSWORD, PURPOSE_PIN, field_privacy
from karukan_engine.config import Config, SessionSettings
from karukan_engine.session import Session, State
from session_fakes import ScriptedConverter
from test_service_resilience import TIMEOUT_S, run, running_service

WORDS = {"きょう": ["今日", "京"]}


def make() -> tuple[Session, ScriptedConverter]:
    converter = ScriptedConverter(WORDS)
    return Session(converter, Config(session=SessionSettings(live_conversion=False))), converter


def press(s: Session, keys: str):
    from karukan_engine.session.keys_cli import parse_keys

    return [s.process_key(keysym, mods) for _, keysym, mods in parse_keys(keys)]


@pytest.mark.parametrize("purpose", [PURPOSE_PASSWORD, PURPOSE_PIN])
@pytest.mark.parametrize("keys, shown", [("kyou", "きょう"), ("kyou<space>", "今日")])
def test_switching_to_password_commits_what_is_shown_unlearned(purpose, keys, shown):
    s, converter = make()
    press(s, keys)
    view = s.set_field_privacy(field_privacy(purpose, 0))
    assert view is not None and view.commit == shown and not view.preedit
    assert s.state is State.PRECOMPOSITION and converter.recorded == []
    assert not any(v.handled for v in press(s, "abc"))       # keys pass through now
    assert s.set_field_privacy(field_privacy(0, 0)) is None
    assert press(s, "a")[-1].preedit_text == "あ"             # nothing old reappears


def test_switching_with_nothing_typed_changes_nothing():
    s, _ = make()
    assert s.set_field_privacy(field_privacy(PURPOSE_PASSWORD, 0)) is None
    assert s.set_field_privacy(field_privacy(PURPOSE_PASSWORD, 0)) is None


@pytest.fixture(scope="module")
def bus_address():
    with HeadlessDesktop() as desktop:
        yield desktop.start_session_bus()


def test_through_the_service_the_commit_arrives_as_a_late_view(bus_address):
    async def body():
        async with running_service(bus_address, lambda: EngineCore(ScriptedConverter(WORDS))):
            client = await EngineClient.connect(bus_address)
            views = asyncio.Queue()
            ctx = await client.create_context("test", on_update=views.put_nowait)
            for ch in "kyou":
                await ctx.process_key(ord(ch), 0, False)
            await ctx.set_content_type(PURPOSE_PASSWORD, 0)
            late = await asyncio.wait_for(views.get(), TIMEOUT_S)
            assert late.commit and not late.preedit
            client.disconnect()

    run(body())


def test_the_ibus_engine_commits_the_text_when_the_field_becomes_a_password_field(bus_address):
    core = EngineCore(ScriptedConverter(WORDS), config=Config(session=SessionSettings(live_conversion=False)))

    async def body():
        loop = asyncio.get_running_loop()
        engine_bus = await MessageBus(bus_address=bus_address).connect()

        async def make_context(on_update):
            return core.new_context(loop, on_update)

        engine_bus.export(FACTORY_PATH, Factory(engine_bus, make_context, {"karukan"}))
        daemon = await MessageBus(bus_address=bus_address).connect()   # plays ibus-daemon
        commits: asyncio.Queue = asyncio.Queue()

        def on_signal(msg: Message) -> None:
            if msg.message_type == MessageType.SIGNAL and msg.member == "CommitText":
                commits.put_nowait(gv.decode_text(msg.body[0])[0])

        daemon.add_message_handler(on_signal)
        await daemon.call(Message(
            destination="org.freedesktop.DBus", path="/org/freedesktop/DBus",
            interface="org.freedesktop.DBus", member="AddMatch", signature="s",
            body=[f"type='signal',interface='{ENGINE_IFACE}',sender='{engine_bus.unique_name}'"]))

        async def call(path, interface, member, signature="", body=()):
            reply = await daemon.call(Message(destination=engine_bus.unique_name, path=path, interface=interface,
                                              member=member, signature=signature, body=list(body)))
            assert reply.message_type == MessageType.METHOD_RETURN, reply.body
            return reply.body

        (path,) = await call(FACTORY_PATH, "org.freedesktop.IBus.Factory", "CreateEngine", "s", ["karukan"])
        await call(path, ENGINE_IFACE, "FocusIn")
        for ch in "kyou":
            await call(path, ENGINE_IFACE, "ProcessKeyEvent", "uuu", [ord(ch), 0, 0])
        await call(path, "org.freedesktop.DBus.Properties", "Set", "ssv",
                   [ENGINE_IFACE, "ContentType", Variant("(uu)", [PURPOSE_PASSWORD, 0])])
        assert await asyncio.wait_for(commits.get(), TIMEOUT_S) == "きょう"
        daemon.disconnect()
        engine_bus.disconnect()

    try:
        run(body())
    finally:
        core.close()
