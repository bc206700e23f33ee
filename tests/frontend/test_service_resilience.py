"""The engine service under hostile input (issue 17): views D-Bus cannot carry, and a client
that takes every context."""

from __future__ import annotations

import asyncio
from contextlib import asynccontextmanager

import pytest
from dbus_fast.errors import DBusError
from hypothesis import given
from hypothesis import strategies as st

from ime_frontend import service as service_module
from ime_frontend import wire
from ime_frontend.client import EngineClient
from ime_frontend.contexts import EngineCore, eviction_victim
from karukan_testing.headless import HeadlessDesktop
from ime_frontend.service import EngineService, serve
from karukan_engine.conversion.plain import PlainConverter

TIMEOUT_S = 30


class NulConverter(PlainConverter):
    """Live text and candidates that hold characters a D-Bus string cannot carry."""

    def live(self, request):
        return request.reading + "\x00\ud800"


@pytest.fixture(scope="module")
def bus_address():
    with HeadlessDesktop() as desktop:
        yield desktop.start_session_bus()


@asynccontextmanager
async def running_service(address: str, make_core=lambda: EngineCore(PlainConverter())):
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
        await asyncio.wait_for(task, TIMEOUT_S)


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, TIMEOUT_S * 2))


def test_a_view_holding_a_nul_is_still_answered(bus_address):
    # Issue 17 item 7: the reply could not be marshalled and the key got no answer at all.
    async def body():
        async with running_service(bus_address, lambda: EngineCore(NulConverter())):
            client = await EngineClient.connect(bus_address)
            ctx = await client.create_context("test")
            view = await asyncio.wait_for(ctx.process_key(ord("a"), 0, False), TIMEOUT_S)
            assert view.handled and view.preedit_text == "あ\ufffd\ufffd"
            client.disconnect()

    run(body())


def test_a_reply_that_cannot_be_sent_becomes_an_error_reply(bus_address, monkeypatch):
    real = wire.encode_view

    def broken(view, *args, **kwargs):
        fields = real(view, *args, **kwargs)
        fields[1] = b"not a string"     # a body the marshaller refuses
        return fields

    monkeypatch.setattr(service_module.wire, "encode_view", broken)

    async def body():
        async with running_service(bus_address):
            client = await EngineClient.connect(bus_address)
            ctx = await client.create_context("test")
            with pytest.raises(DBusError) as info:
                await asyncio.wait_for(ctx.process_key(ord("a"), 0, False), TIMEOUT_S)
            assert info.value.type == "org.freedesktop.DBus.Error.Failed"
            monkeypatch.setattr(service_module.wire, "encode_view", real)
            assert (await ctx.process_key(ord("i"), 0, False)).preedit_text == "あい"   # still up
            client.disconnect()

    run(body())


@pytest.mark.parametrize("text, expected", [("a\x00b", "a\ufffdb"), ("\ud800x", "\ufffdx"), ("漢字", "漢字")])
def test_sendable_strings(text, expected):
    assert wire.sendable(text) == expected


def test_a_full_service_evicts_the_heaviest_clients_oldest_idle_context(bus_address, monkeypatch):
    # Issue 17 item 10: with every context taken, a new application got none.
    monkeypatch.setattr(service_module, "MAX_CONTEXTS", 8)
    monkeypatch.setattr(service_module, "MAX_CONTEXTS_PER_CLIENT", 6)

    async def body():
        async with running_service(bus_address) as service:
            heavy = await EngineClient.connect(bus_address)
            light = await EngineClient.connect(bus_address)
            heavy_ctx = [await heavy.create_context("heavy") for _ in range(5)]
            light_ctx = [await light.create_context("light") for _ in range(3)]
            for ctx in heavy_ctx[1:] + light_ctx:   # heavy_ctx[0] is now the least recently used
                await ctx.process_key(ord("a"), 0, False)
            newcomer = await EngineClient.connect(bus_address)
            ctx = await newcomer.create_context("new")
            assert (await ctx.process_key(ord("a"), 0, False)).preedit_text == "あ"
            assert service.context_count == 8
            with pytest.raises(DBusError) as info:
                await heavy_ctx[0].process_key(ord("a"), 0, False)
            assert info.value.type == wire.ERROR_UNKNOWN_CONTEXT
            for other in heavy_ctx[1:] + light_ctx:   # everyone else keeps their composition
                assert (await other.process_key(ord("i"), 0, False)).preedit_text == "あい"
            for client in (heavy, light, newcomer):
                client.disconnect()

    run(body())


entries = st.lists(st.tuples(st.sampled_from("abcd"), st.integers(0, 50), st.booleans()), max_size=30)


@given(entries)
def test_the_eviction_victim_is_the_oldest_idle_context_of_the_heaviest_client(rows):
    contexts = [(key, owner, float(t), busy) for key, (owner, t, busy) in enumerate(rows)]
    victim = eviction_victim(contexts)
    idle = [c for c in contexts if not c[3]]
    if not idle:
        assert victim is None
        return
    key, owner, last_used, busy = contexts[victim]
    assert not busy
    held = {o: sum(1 for c in contexts if c[1] == o) for o in {c[1] for c in contexts}}
    assert all(held[c[1]] <= held[owner] for c in idle)                      # the heaviest with an idle one
    assert last_used == min(c[2] for c in idle if c[1] == owner)            # its least recently used


@given(st.text())
def test_sendable_always_encodes_and_keeps_what_it_can(text):
    out = wire.sendable(text)
    out.encode("utf-8")
    assert "\x00" not in out and len(out) == len(text)
    assert all(a == b or b == "\ufffd" for a, b in zip(text, out))
    if "\x00" not in text and not any("\ud800" <= ch <= "\udfff" for ch in text):
        assert out == text
