"""The engine service on a real private dbus-daemon: contract, errors, ordering, ownership."""

from __future__ import annotations

import asyncio
import random
import threading
import xml.etree.ElementTree as ET
from contextlib import asynccontextmanager

import pytest
from dbus_fast import Message, MessageType
from dbus_fast.aio import MessageBus
from dbus_fast.errors import DBusError

from ime_frontend import operations as ops
from ime_frontend import wire
from ime_frontend.client import EngineClient
from ime_frontend.contexts import EngineCore
from karukan_testing.headless import HeadlessDesktop
from ime_frontend.service import MAX_SURROUNDING_CHARS, EngineService, serve
from karukan_engine.config import Config
from karukan_engine.live.live_service import LateUpdate
from karukan_engine.conversion.plain import PlainConverter
from karukan_engine.session import Session
from karukan_engine.session.view import View
from service_fakes import TIMEOUT_S, GatedModelConverter, SavingConverter, live_config  # noqa: F401 (shared)

SPACE, RETURN, BACKSPACE = 0x20, 0xFF0D, 0xFF08
@pytest.fixture(scope="module")
def bus_address():
    with HeadlessDesktop() as desktop:
        yield desktop.start_session_bus()


@asynccontextmanager
async def running_service(address: str, make_core=lambda: EngineCore(SavingConverter())):
    ready: asyncio.Future[EngineService] = asyncio.get_running_loop().create_future()
    stop = asyncio.Event()
    task = asyncio.ensure_future(serve(make_core, address, ready=ready.set_result, stop=stop))
    done, _ = await asyncio.wait({task, ready}, timeout=TIMEOUT_S, return_when=asyncio.FIRST_COMPLETED)
    if ready not in done:
        task.result() if task.done() else task.cancel()
        raise AssertionError("service did not start")
    try:
        yield ready.result()
    finally:
        stop.set()
        assert await asyncio.wait_for(task, TIMEOUT_S) == 0


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, TIMEOUT_S * 2))


async def type_keys(ctx, keys: list[int]) -> View:
    view = None
    for key in keys:
        view = await ctx.process_key(key, 0, False)
        await ctx.process_key(key, 0, True)
    return view


def local_views(keys: list[int]) -> View:
    session = Session(PlainConverter())
    view = None
    for key in keys:
        view = session.process_key(key, 0, False)
        session.process_key(key, 0, True)
    return View(view.handled, view.preedit, view.caret, view.candidates, view.aux, view.commit, view.mode, view.enabled,
                on_return=view.on_return)


def test_typing_through_the_service_gives_the_sessions_views(bus_address):
    async def body():
        async with running_service(bus_address):
            client = await EngineClient.connect(bus_address)
            ctx = await client.create_context("test")
            view = await type_keys(ctx, [ord(c) for c in "kanji"])
            assert view.handled and view.preedit_text == "かんじ"
            commit = await ctx.process_key(RETURN, 0, False)
            assert commit.commit == "かんじ" and commit.preedit_text == ""
            client.disconnect()

    run(body())


def test_views_equal_an_in_process_session(bus_address):
    keys = [ord(c) for c in "nihongo"] + [SPACE, BACKSPACE] + [ord(c) for c in "desu"]

    async def body():
        async with running_service(bus_address):
            client = await EngineClient.connect(bus_address)
            ctx = await client.create_context("test")
            remote = await type_keys(ctx, keys)
            client.disconnect()
            return remote

    assert run(body()) == local_views(keys)


def test_malformed_calls_get_errors_and_the_service_stays_up(bus_address):
    async def body():
        async with running_service(bus_address):
            client = await EngineClient.connect(bus_address)
            ctx = await client.create_context("test")
            failures = [
                ("ProcessKey", "s", ["x"], "org.freedesktop.DBus.Error.InvalidArgs"),
                ("ProcessKey", "uuuub", [999999, 97, 0, 0, False], wire.ERROR_UNKNOWN_CONTEXT),
                ("NoSuchMethod", "", [], "org.freedesktop.DBus.Error.UnknownMethod"),
                ("SetSurroundingText", "usuu", [ctx.id, "あ" * (MAX_SURROUNDING_CHARS + 1), 0, 0], wire.ERROR_LIMITS),
                ("SetSurroundingText", "usuu", [ctx.id, "abc", 7, 0], wire.ERROR_INVALID_ARGS),
                ("SetInputMode", "us", [ctx.id, "no-such-mode"], wire.ERROR_INVALID_ARGS),
                ("SetInputMode", "us", [ctx.id, "x" * 100000], wire.ERROR_INVALID_ARGS),
                ("CreateContext", "s", ["n" * 10000], wire.ERROR_INVALID_ARGS),
                ("DestroyContext", "u", [0], wire.ERROR_UNKNOWN_CONTEXT),
                ("ReturnCommitted", "us", [ctx.id, "あ" * (MAX_SURROUNDING_CHARS + 1)], wire.ERROR_LIMITS),
                ("ReturnCommitted", "us", [999999, "あ"], wire.ERROR_UNKNOWN_CONTEXT),
                ("ReturnCommitted", "u", [ctx.id], "org.freedesktop.DBus.Error.InvalidArgs"),
            ]
            for member, sig, args, error in failures:
                with pytest.raises(DBusError) as info:
                    await client.call(member, sig, args)
                assert info.value.type == error, member
            # A message the service cannot even route by interface.
            reply = await client.bus.call(Message(destination=wire.BUS_NAME, path=wire.OBJECT_PATH,
                                                  interface="org.example.Nope", member="X"))
            assert reply.message_type == MessageType.ERROR
            view = await type_keys(ctx, [ord("a")])
            assert view.preedit_text == "あ"
            await ctx.close()
            with pytest.raises(DBusError):
                await ctx.get_view()
            client.disconnect()

    run(body())


def test_a_call_after_the_engine_began_shutting_down_gets_a_quiet_error(bus_address, caplog):
    """Keys still queued when the engine shuts down (its workers stopped) are each answered with
    one D-Bus error and log nothing: thousands may be waiting then."""
    async def body():
        async with running_service(bus_address) as service:
            client = await EngineClient.connect(bus_address)
            ctx = await client.create_context("test")
            assert (await ctx.process_key(ord("a"), 0, False)).preedit_text == "あ"
            service._core.executor.shutdown(wait=True)
            caplog.clear()
            with caplog.at_level("DEBUG"):
                for _ in range(3):
                    with pytest.raises(DBusError) as info:
                        await ctx.process_key(ord("i"), 0, False)
                    assert info.value.type == "org.freedesktop.DBus.Error.Failed"
                    assert info.value.text == "the engine is shutting down"
            assert not [r for r in caplog.records if r.levelname in ("WARNING", "ERROR")], caplog.text
            client.disconnect()

    run(body())


def test_the_service_tells_frontends_its_candidate_layout(bus_address):
    """The fcitx5 addon draws its list as GetInfo says ([ui] candidate_layout; vertical by default)."""
    horizontal = Config.from_toml('[ui]\ncandidate_layout = "horizontal"\n')

    async def body():
        for core, layout in ((lambda: EngineCore(PlainConverter()), "vertical"),
                             (lambda: EngineCore(PlainConverter(), config=horizontal), "horizontal")):
            async with running_service(bus_address, core):
                client = await EngineClient.connect(bus_address)
                assert (await client.info())["candidate_layout"] == layout
                client.disconnect()

    run(body())


def test_contexts_belong_to_their_connection_and_die_with_it(bus_address):
    async def body():
        async with running_service(bus_address) as service:
            owner = await EngineClient.connect(bus_address)
            other = await EngineClient.connect(bus_address)
            ctx = await owner.create_context("owner")
            with pytest.raises(DBusError) as info:
                await other.call("GetView", "u", [ctx.id])
            assert info.value.type == wire.ERROR_UNKNOWN_CONTEXT
            assert (await other.info())["contexts"] == "1"
            owner.disconnect()
            for _ in range(200):   # NameOwnerChanged arrives asynchronously
                if service.context_count == 0:
                    break
                await asyncio.sleep(0.01)
            assert service.context_count == 0
            other.disconnect()

    run(body())


def test_sixteen_concurrent_clients_lose_and_reorder_no_key(bus_address):
    rng = random.Random(7)
    words = ["".join(rng.choice("aiueokstnhmyrwg") for _ in range(rng.randint(5, 14))) for _ in range(16)]

    async def one(word: str) -> View:
        client = await EngineClient.connect(bus_address)
        ctx = await client.create_context("concurrent")
        # Fire every key without waiting, as a busy frontend would; answers must still be in order.
        calls = []
        for ch in word:
            calls.append(ctx.process_key(ord(ch), 0, False))
            calls.append(ctx.process_key(ord(ch), 0, True))
        views = await asyncio.gather(*calls)
        client.disconnect()
        return [v for v in views[::2]][-1]

    async def body():
        async with running_service(bus_address):
            return await asyncio.gather(*(one(w) for w in words))

    results = run(body())
    for word, view in zip(words, results):
        assert view == local_views([ord(c) for c in word]), word


@asynccontextmanager
async def composing_ka(address: str):
    """A live-conversion service with one client context showing か, whose late views queue up
    in `received`; the model stays gated (no refinement of its own) until the end."""
    core = EngineCore(GatedModelConverter(), config=live_config())
    async with running_service(address, lambda: core) as service:
        received: asyncio.Queue[View] = asyncio.Queue()
        client = await EngineClient.connect(address)
        ctx = await client.create_context("late")
        ctx.on_update = received.put_nowait
        assert (await type_keys(ctx, [ord("k"), ord("a")])).preedit_text == "か"
        try:
            yield core, service, client, ctx, received
        finally:
            core.live.converter.gate.set()
            client.disconnect()


def test_a_live_update_from_a_worker_thread_reaches_the_owner_as_a_signal(bus_address):
    """The path a model result takes (scheduler thread -> ContextHost.deliver -> the session on
    its worker -> ViewUpdated), fed by hand; a stale update is dropped on the same path."""
    async def body():
        async with composing_ka(bus_address) as (core, service, client, ctx, received):
            host = service._contexts[ctx.id].host
            epoch = core.live.scheduler.epoch(host.context_id)
            for update in (LateUpdate.live(host.context_id, epoch - 1, "か", "古"),   # an older key's
                           LateUpdate.live(host.context_id + 1, epoch, "か", "他"),   # another context's
                           LateUpdate.live(host.context_id, epoch, "か", "蚊")):
                worker = threading.Thread(target=host.deliver, args=(update,))   # e.g. a model worker
                worker.start()
                worker.join()
            got = await asyncio.wait_for(received.get(), TIMEOUT_S)
            assert got.preedit_text == "蚊"
            assert (await ctx.get_view()).preedit_text == "蚊"
            assert received.empty(), "stale updates must never be shown"

    run(body())


def test_a_view_signal_from_another_peer_is_not_believed(bus_address):
    """Any peer on the bus can send ViewUpdated to the client: only the service that answered
    CreateContext is heard (an intruder's signal could otherwise commit text)."""
    async def body():
        async with composing_ka(bus_address) as (core, service, client, ctx, received):
            intruder = await MessageBus(bus_address=bus_address).connect()
            intruder.send(Message(
                message_type=MessageType.SIGNAL, destination=client.bus.unique_name, path=wire.OBJECT_PATH,
                interface=wire.INTERFACE, member=ops.VIEW_UPDATED.member, signature=ops.VIEW_UPDATED.in_sig,
                body=[ctx.id, 99, wire.encode_view(View(True, commit="INJECTED"))],
            ))
            await intruder.call(Message(destination=client.bus.unique_name, path="/",   # a round trip
                                        interface="org.freedesktop.DBus.Peer", member="Ping"))
            host = service._contexts[ctx.id].host
            host.deliver(LateUpdate.live(host.context_id, core.live.scheduler.epoch(host.context_id), "か", "蚊"))
            got = await asyncio.wait_for(received.get(), TIMEOUT_S)
            assert got.preedit_text == "蚊" and not got.commit
            assert received.empty()
            intruder.disconnect()

    run(body())


def test_introspection_lists_the_interface(bus_address):
    async def body():
        async with running_service(bus_address):
            bus = await MessageBus(bus_address=bus_address).connect()
            reply = await bus.call(Message(destination=wire.BUS_NAME, path=wire.OBJECT_PATH,
                                           interface="org.freedesktop.DBus.Introspectable", member="Introspect"))
            bus.disconnect()
            return reply.body[0]

    root = ET.fromstring(run(body()))
    iface = root.find(f"interface[@name='{wire.INTERFACE}']")
    names = {m.get("name") for m in iface.findall("method")}
    assert {"CreateContext", "ProcessKey", "FocusOut", "SelectCandidate", "SetContentType"} <= names
    process_key = iface.find("method[@name='ProcessKey']")
    assert [a.get("type") for a in process_key.findall("arg")] == ["u", "u", "u", "u", "b", wire.VIEW_SIG]


def test_shutdown_saves_learning_data(bus_address):
    before = SavingConverter.saved

    async def body():
        async with running_service(bus_address):
            pass

    run(body())
    assert SavingConverter.saved == before + 1


def test_a_second_service_refuses_to_start(bus_address):
    async def body():
        async with running_service(bus_address):
            with pytest.raises(RuntimeError, match="already owned"):
                await serve(lambda: EngineCore(PlainConverter()), bus_address, stop=asyncio.Event())

    run(body())


def test_a_client_cannot_open_unbounded_contexts(bus_address):
    from ime_frontend.service import MAX_CONTEXTS_PER_CLIENT

    async def body():
        async with running_service(bus_address) as service:
            greedy = await EngineClient.connect(bus_address)
            for _ in range(MAX_CONTEXTS_PER_CLIENT // 64):   # the bus allows ~128 pending calls
                await asyncio.gather(*(greedy.call("CreateContext", "s", ["x"]) for _ in range(64)))
            with pytest.raises(DBusError) as info:
                await greedy.call("CreateContext", "s", ["x"])
            assert info.value.type == wire.ERROR_LIMITS
            polite = await EngineClient.connect(bus_address)      # others are not locked out
            ctx = await polite.create_context("polite")
            assert (await type_keys(ctx, [ord("a")])).preedit_text == "あ"
            assert service.context_count == MAX_CONTEXTS_PER_CLIENT + 1
            greedy.disconnect()
            polite.disconnect()

    run(body())


def test_keys_get_the_dictionary_view_and_only_the_latest_keys_model_text_follows(bus_address):
    converter = GatedModelConverter()
    core = EngineCore(converter, config=live_config())

    async def body():
        async with running_service(bus_address, lambda: core):
            updates: asyncio.Queue[View] = asyncio.Queue()
            client = await EngineClient.connect(bus_address)
            ctx = await client.create_context("live", updates.put_nowait)
            # The model is busy with "か" when "い" comes: the key is answered with the dictionary text.
            assert (await type_keys(ctx, [ord("k"), ord("a")])).preedit_text == "か"
            assert await asyncio.to_thread(converter.model_started, "か")
            assert (await type_keys(ctx, [ord("i")])).preedit_text == "かい"
            assert updates.empty()
            converter.gate.set()
            late = await asyncio.wait_for(updates.get(), TIMEOUT_S)
            assert late.preedit_text == "[かい]"
            assert await asyncio.to_thread(core.live.scheduler.idle, TIMEOUT_S)
            # GetView queues behind any late view still on its way: afterwards none may be pending.
            assert (await ctx.get_view()).preedit_text == "[かい]"
            assert updates.empty(), "the superseded key's model text must never be shown"
            client.disconnect()

    run(body())
    assert converter.closed == 1
    assert core.live.scheduler.closed


def test_a_destroyed_context_gets_no_model_text(bus_address):
    converter = GatedModelConverter()
    core = EngineCore(converter, config=live_config())

    async def body():
        async with running_service(bus_address, lambda: core) as service:
            # A raw connection sees every ViewUpdated sent to it, whatever a client would filter.
            bus = await MessageBus(bus_address=bus_address).connect()
            signals: list[Message] = []
            bus.add_message_handler(lambda m: signals.append(m) if m.member == "ViewUpdated" else None)

            async def call(member: str, signature: str, body: list) -> list:
                reply = await bus.call(Message(destination=wire.BUS_NAME, path=wire.OBJECT_PATH,
                                               interface=wire.INTERFACE, member=member,
                                               signature=signature, body=body))
                assert reply.message_type == MessageType.METHOD_RETURN, reply.body
                return reply.body

            (ctx_id,) = await call("CreateContext", "s", ["gone"])
            for key in (ord("k"), ord("a")):
                await call("ProcessKey", "uuuub", [ctx_id, key, 0, 0, False])
            assert await asyncio.to_thread(converter.model_started, "か")
            await call("DestroyContext", "u", [ctx_id])
            assert service.context_count == 0
            converter.gate.set()
            assert await asyncio.to_thread(core.live.scheduler.idle, TIMEOUT_S)
            await call("GetInfo", "", [])   # a late signal would have arrived before this reply
            assert signals == []
            bus.disconnect()

    run(body())


def test_the_engine_reads_the_users_config_and_survives_a_broken_one(tmp_path, monkeypatch):
    from ime_frontend.contexts import _user_config
    from karukan_engine.config import SessionSettings

    config = tmp_path / "config.toml"
    monkeypatch.setenv("KARUKAN_CONFIG", str(config))
    config.write_text("[session]\nlive_conversion = false\n", encoding="utf-8")
    assert _user_config().session.live_conversion is False
    config.write_text("[session]\nlive_conversion = 3 = 4\n", encoding="utf-8")
    assert _user_config().session == SessionSettings()
