"""ResilientContext + ServiceStarter (IBus --backend service): keys that arrive while the engine
service starts wait for it, in order; a start that fails lets them through once, not per key
(issue 14 item 1). A fake client stands in for the bus."""

from __future__ import annotations

import asyncio

from dbus_fast.errors import DBusError

from ime_frontend.resilient import ResilientContext, ServiceStarter
from karukan_engine.session.view import View

UNKNOWN = "org.freedesktop.DBus.Error.ServiceUnknown"


class FakeRemote:
    def __init__(self, client: "FakeClient") -> None:
        self.client = client

    async def process_key(self, keysym: int, modifiers: int, release: bool) -> View:
        if not self.client.up:
            raise DBusError(UNKNOWN, "not running")
        self.client.seen.append(keysym)
        return View(handled=True)

    async def set_content_type(self, purpose: int, hints: int) -> None:
        pass

    async def close(self) -> None:
        pass


class FakeClient:
    def __init__(self, start_ok: bool = True) -> None:
        self.up = False
        self.start_ok = start_ok
        self.release_start = asyncio.Event()
        self.starts = 0
        self.seen: list[int] = []

    async def create_context(self, name, on_update):
        if not self.up:
            raise DBusError(UNKNOWN, "not running")
        return FakeRemote(self)

    async def start_service(self, timeout_s: float) -> None:
        self.starts += 1
        await self.release_start.wait()
        if not self.start_ok:
            raise DBusError("org.freedesktop.DBus.Error.Spawn.ChildExited", "failed")
        self.up = True

    async def service_running(self) -> bool:
        return self.up


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 30))


def test_keys_during_the_start_wait_for_it_and_keep_their_order():
    async def body():
        client = FakeClient()
        starter = ServiceStarter(client, budget_s=30)
        starter.start()
        ctx = await ResilientContext.open(client, "ibus", None, starter)
        keys = [asyncio.ensure_future(ctx.process_key(k, 0, False)) for k in b"kyou"]
        await asyncio.sleep(0.05)
        assert not any(k.done() for k in keys) and client.seen == []    # held
        client.release_start.set()
        views = await asyncio.gather(*keys)
        assert [v.handled for v in views] == [True] * 4
        assert client.seen == list(b"kyou") and client.starts == 1

    run(body())


def test_a_key_that_finds_no_service_starts_it_and_is_answered_by_it():
    async def body():
        client = FakeClient()
        client.release_start.set()
        starter = ServiceStarter(client, budget_s=30)
        ctx = await ResilientContext.open(client, "ibus", None, starter)   # service not running yet
        assert (await ctx.process_key(ord("a"), 0, False)).handled
        assert client.seen == [ord("a")] and client.starts == 1

    run(body())


def test_a_failed_start_lets_the_held_keys_through_after_one_attempt():
    async def body():
        client = FakeClient(start_ok=False)
        starter = ServiceStarter(client, budget_s=30)
        starter.start()
        ctx = await ResilientContext.open(client, "ibus", None, starter)
        keys = [asyncio.ensure_future(ctx.process_key(k, 0, False)) for k in b"kana"]
        await asyncio.sleep(0.05)
        client.release_start.set()
        views = await asyncio.gather(*keys)
        assert [v.handled for v in views] == [False] * 4     # to the application, in order
        assert client.starts == 1                            # not one start (and wait) per key

    run(body())
