"""A remote input context that survives the engine service going away and coming back.

A service that is not running is started (D-Bus activation, through a ServiceStarter shared by
every context of the process) and the call waits for it within a startup budget, so keys typed
while it starts are answered by it, in order (one lock per context, FIFO), instead of reaching
the application raw. When it cannot start in time, or a call fails otherwise (restarted, too
slow), the key passes through unhandled; after a timeout the service is left alone for a short
while, and a context the service lost is re-created on the next call with its content type
restored, so typing never blocks for long.
"""

from __future__ import annotations

import asyncio
import logging
import os
from typing import Any, Awaitable, Callable

from dbus_fast.errors import DBusError

from ime_frontend import operations as ops
from ime_frontend import wire
from ime_frontend.client import EngineClient, RemoteContext
from karukan_engine.session.view import View

log = logging.getLogger(__name__)

BACKOFF_S = 2.0   # after a timeout, keys pass through this long without asking the service
# How long keys wait for a starting service (KARUKAN_IBUS_STARTUP_MS overrides): it answers in
# about 0.4 s on a desktop; the budget leaves room for a busy machine at login.
STARTUP_BUDGET_S = 5.0
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


# Errors that mean nobody owns the service name.
_NO_SERVICE_ERRORS = frozenset({
    "org.freedesktop.DBus.Error.ServiceUnknown",
    "org.freedesktop.DBus.Error.NameHasNoOwner",
})


def _context_lost(exc: BaseException) -> bool:
    if isinstance(exc, DBusError):
        return exc.type in _LOST_CONTEXT_ERRORS
    return not isinstance(exc, asyncio.TimeoutError)


def startup_budget_s() -> float:
    try:
        ms = int(os.environ.get("KARUKAN_IBUS_STARTUP_MS", ""))
    except ValueError:
        return STARTUP_BUDGET_S
    return ms / 1000 if 0 < ms <= 600_000 else STARTUP_BUDGET_S


class ServiceStarter:
    """One start of the engine service at a time, awaited by every context that needs it."""

    def __init__(self, client: EngineClient, budget_s: float | None = None) -> None:
        self._client = client
        self.budget_s = startup_budget_s() if budget_s is None else budget_s
        self._start: asyncio.Future | None = None
        self._retry_after = 0.0

    def start(self) -> "asyncio.Future[bool]":
        """Start the service unless a start is in flight; the future says whether it is up.
        Within BACKOFF_S of a failed start it fails at once (held keys must not wait twice)."""
        loop = asyncio.get_running_loop()
        if self._start is None or self._start.done():
            if loop.time() < self._retry_after:
                failed = loop.create_future()
                failed.set_result(False)
                return failed
            self._start = asyncio.ensure_future(self._run())
        return self._start

    @property
    def starting(self) -> bool:
        return self._start is not None and not self._start.done()

    async def wait(self) -> None:
        if self._start is not None:
            await asyncio.shield(self._start)

    async def _run(self) -> bool:
        try:
            await self._client.start_service(self.budget_s)
        except _FAILURES as exc:
            name = exc.type if isinstance(exc, DBusError) else type(exc).__name__
            log.warning("engine service did not start (%s); keys pass through", name)
            self._retry_after = asyncio.get_running_loop().time() + BACKOFF_S
            return False
        return True


class ResilientContext:
    """One input context kept alive across service restarts; its operations (one per row of
    ime_frontend.operations.CONTEXT_OPERATIONS) are added below the class."""

    def __init__(self, client: EngineClient, client_name: str, on_update: Callable[[View], None] | None,
                 starter: ServiceStarter | None = None) -> None:
        self._client = client
        self._name = client_name
        self._on_update = on_update
        self._starter = starter
        self._remote: RemoteContext | None = None
        # The last arguments of each remembered operation (the content type), by method name.
        self._settings: dict[str, tuple[tuple, dict]] = {}
        self._backoff_until = 0.0
        self._lock = asyncio.Lock()   # FIFO: calls reach the service in the order they came

    @classmethod
    async def open(cls, client: EngineClient, client_name: str,
                   on_update: Callable[[View], None] | None = None,
                   starter: ServiceStarter | None = None) -> "ResilientContext":
        ctx = cls(client, client_name, on_update, starter)
        if starter is not None and starter.starting:
            return ctx    # the context is created by the first call, once the service is up
        try:
            await ctx._ensure()
        except _FAILURES:
            log.warning("engine service unavailable; keys pass through until it answers")
        return ctx

    async def _ensure(self) -> RemoteContext:
        if self._remote is None:
            remote = await self._client.create_context(self._name, self._on_update)
            for method, (args, kwargs) in self._settings.items():
                await getattr(remote, method)(*args, **kwargs)
            self._remote = remote
        return self._remote

    async def _view(self, request: Callable[[RemoteContext], Awaitable[View]]) -> View:
        async with self._lock:
            if self._starter is not None:
                await self._starter.wait()    # held while the service starts
            return await self._call(request)

    async def _call(self, request: Callable[[RemoteContext], Awaitable[View]], retry: bool = True) -> View:
        loop = asyncio.get_running_loop()
        if loop.time() < self._backoff_until:
            return View(handled=False)
        try:
            return await request(await self._ensure())
        except _FAILURES as exc:
            if _context_lost(exc):
                self._remote = None
            if retry and self._starter is not None and await self._missing(exc):
                # Not running (never started, killed, crashed): start it and hold this call for it.
                if await self._starter.start():
                    return await self._call(request, retry=False)
                self._backoff_until = loop.time() + BACKOFF_S
                return View(handled=False)
            log.warning("engine service call failed (%s); passing the key through", type(exc).__name__)
            if isinstance(exc, asyncio.TimeoutError):
                # No answer in time: stop asking for a while so typing stays fluid.
                self._backoff_until = loop.time() + BACKOFF_S
            return View(handled=False)

    async def _missing(self, exc: BaseException) -> bool:
        """Did the call fail because no service owns the name (rather than a slow or broken one)?"""
        if isinstance(exc, DBusError) and exc.type in _NO_SERVICE_ERRORS:
            return True
        try:
            return not await self._client.service_running()
        except _FAILURES:
            return False

    async def run(self, op: ops.Operation, *args: Any, **kwargs: Any) -> View | None:
        """Call op on the service's context (re-created or the service started as needed); a
        key that cannot be answered in time gets View(handled=False)."""
        if op.remembered:
            op.bind(args, kwargs)   # a bad call fails here, never again at each re-creation
            self._settings[op.method] = (args, kwargs)   # replayed into a re-created context
        view = await self._view(lambda remote: _answer(remote, op, args, kwargs))
        return view if op.reply is ops.Reply.VIEW else None

    async def close(self) -> None:
        if self._remote is not None:
            await self._remote.close()
            self._remote = None


async def _answer(remote: RemoteContext, op: ops.Operation, args: tuple, kwargs: dict) -> View:
    view = await getattr(remote, op.method)(*args, **kwargs)
    return view if op.reply is ops.Reply.VIEW else View(handled=False)


for _op in ops.CONTEXT_OPERATIONS:
    setattr(ResilientContext, _op.method, ops.operation_method(_op, ResilientContext.run))
del _op
