"""A remote input context that survives the engine service going away and coming back.

When a call fails (service missing, restarted, too slow) the key passes through unhandled; after a
timeout the service is left alone for a short while, and a context the service lost is re-created
on the next call with its content type restored, so typing never blocks.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Awaitable, Callable

from dbus_fast.errors import DBusError

from ime_frontend import wire
from ime_frontend.client import EngineClient, RemoteContext
from karukan_engine.session.view import View

log = logging.getLogger(__name__)

BACKOFF_S = 2.0   # after a timeout, keys pass through this long without asking the service
_FAILURES = (DBusError, asyncio.TimeoutError, OSError, EOFError)
# Errors after which the service no longer has our context (it restarted or is gone). A timeout
# is not one of them: a slow service still holds the composition.
_LOST_CONTEXT_ERRORS = frozenset({
    wire.ERROR_UNKNOWN_CONTEXT,
    "org.freedesktop.DBus.Error.ServiceUnknown",
    "org.freedesktop.DBus.Error.NameHasNoOwner",
    "org.freedesktop.DBus.Error.NoReply",
    "org.freedesktop.DBus.Error.Disconnected",
})


def _context_lost(exc: BaseException) -> bool:
    if isinstance(exc, DBusError):
        return exc.type in _LOST_CONTEXT_ERRORS
    return not isinstance(exc, asyncio.TimeoutError)


class ResilientContext:
    def __init__(self, client: EngineClient, client_name: str, on_update: Callable[[View], None] | None) -> None:
        self._client = client
        self._name = client_name
        self._on_update = on_update
        self._remote: RemoteContext | None = None
        self._content_type: tuple[int, int] | None = None
        self._backoff_until = 0.0

    @classmethod
    async def open(cls, client: EngineClient, client_name: str,
                   on_update: Callable[[View], None] | None = None) -> "ResilientContext":
        ctx = cls(client, client_name, on_update)
        try:
            await ctx._ensure()
        except _FAILURES:
            log.warning("engine service unavailable; keys pass through until it answers")
        return ctx

    async def _ensure(self) -> RemoteContext:
        if self._remote is None:
            remote = await self._client.create_context(self._name, self._on_update)
            if self._content_type is not None:
                await remote.set_content_type(*self._content_type)
            self._remote = remote
        return self._remote

    async def _view(self, op: Callable[[RemoteContext], Awaitable[View]]) -> View:
        loop = asyncio.get_running_loop()
        if loop.time() < self._backoff_until:
            return View(handled=False)
        try:
            return await op(await self._ensure())
        except _FAILURES as exc:
            log.warning("engine service call failed (%s); passing the key through", type(exc).__name__)
            if isinstance(exc, asyncio.TimeoutError):
                # No answer in time: stop asking for a while so typing stays fluid.
                self._backoff_until = loop.time() + BACKOFF_S
            if _context_lost(exc):
                self._remote = None
            return View(handled=False)

    async def process_key(self, keysym: int, modifiers: int, release: bool) -> View:
        return await self._view(lambda r: r.process_key(keysym, modifiers, release))

    async def focus_in(self) -> View:
        return await self._view(lambda r: r.focus_in())

    async def focus_out(self) -> View:
        return await self._view(lambda r: r.focus_out())

    async def reset(self) -> View:
        return await self._view(lambda r: r.reset())

    async def page_up(self) -> View:
        return await self._view(lambda r: r.page_up())

    async def page_down(self) -> View:
        return await self._view(lambda r: r.page_down())

    async def select_candidate(self, index: int) -> View:
        return await self._view(lambda r: r.select_candidate(index))

    async def set_input_mode(self, mode: str) -> View:
        return await self._view(lambda r: r.set_input_mode(mode))

    async def set_enabled(self, on: bool) -> View:
        return await self._view(lambda r: r.set_enabled(on))

    async def set_surrounding_text(self, text: str, cursor: int, anchor: int | None) -> None:
        await self._view(lambda r: _then_view(r, r.set_surrounding_text(text, cursor, anchor)))

    async def set_content_type(self, purpose: int, hints: int) -> None:
        self._content_type = (purpose, hints)
        await self._view(lambda r: _then_view(r, r.set_content_type(purpose, hints)))

    async def close(self) -> None:
        if self._remote is not None:
            await self._remote.close()
            self._remote = None


async def _then_view(remote: RemoteContext, call: Awaitable[None]) -> View:
    await call
    return View(handled=False)
