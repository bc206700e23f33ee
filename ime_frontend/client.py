"""A client of the engine service (org.karukan.Engine1) for Python frontends, doctor and tests.

RemoteContext offers the same async operations as ContextHost, so a frontend can run its session
in-process or forward to the service without knowing which.
"""

from __future__ import annotations

import asyncio
from typing import Any, Callable

from dbus_fast import BusType, Message, MessageFlag, MessageType
from dbus_fast.errors import DBusError

from ime_frontend import operations as ops
from ime_frontend import wire
from ime_frontend.bus import MessageBus
from karukan_engine.session.view import View

DEFAULT_TIMEOUT_S = 5.0


class EngineClient:
    """auto_start=False: calls never D-Bus-activate the service (a missing service answers
    ServiceUnknown at once); start it with start_service(), which waits for it to own its name."""

    def __init__(self, bus: MessageBus, timeout_s: float = DEFAULT_TIMEOUT_S, auto_start: bool = True) -> None:
        self.bus = bus
        self.timeout_s = timeout_s
        self._flags = MessageFlag.NONE if auto_start else MessageFlag.NO_AUTOSTART
        self._contexts: dict[int, RemoteContext] = {}
        bus.add_message_handler(self._on_message)

    @classmethod
    async def connect(cls, bus_address: str | None = None, timeout_s: float = DEFAULT_TIMEOUT_S,
                      auto_start: bool = True) -> "EngineClient":
        bus = MessageBus(bus_address=bus_address) if bus_address else MessageBus(bus_type=BusType.SESSION)
        await bus.connect()
        return cls(bus, timeout_s, auto_start)

    async def call(self, member: str, signature: str = "", body: list | None = None) -> list:
        """Call a method of the service; raise DBusError on an error reply."""
        return list((await self._reply(member, signature, body)).body)

    async def _reply(self, member: str, signature: str, body: list | None) -> Message:
        reply = await asyncio.wait_for(self.bus.call(Message(
            destination=wire.BUS_NAME, path=wire.OBJECT_PATH, interface=wire.INTERFACE,
            member=member, signature=signature, body=body or [], flags=self._flags,
        )), self.timeout_s)
        if reply.message_type == MessageType.ERROR:
            raise DBusError(reply.error_name, reply.body[0] if reply.body else "")
        return reply

    async def _bus_daemon(self, member: str, signature: str, body: list, timeout_s: float) -> list:
        reply = await asyncio.wait_for(self.bus.call(Message(
            destination="org.freedesktop.DBus", path="/org/freedesktop/DBus", interface="org.freedesktop.DBus",
            member=member, signature=signature, body=body)), timeout_s)
        if reply.message_type == MessageType.ERROR:
            raise DBusError(reply.error_name, reply.body[0] if reply.body else "")
        return list(reply.body)

    async def start_service(self, timeout_s: float) -> None:
        """D-Bus-activate the service and wait until it owns its name (it takes the name only once
        it can answer); DBusError when it is not activatable or fails, TimeoutError past timeout_s."""
        await self._bus_daemon("StartServiceByName", "su", [wire.BUS_NAME, 0], timeout_s)

    async def service_running(self) -> bool:
        (owned,) = await self._bus_daemon("NameHasOwner", "s", [wire.BUS_NAME], self.timeout_s)
        return bool(owned)

    async def info(self) -> dict[str, str]:
        return (await self.call(ops.GET_INFO.member))[0]

    async def create_context(self, client_name: str, on_update: Callable[[View], None] | None = None) -> "RemoteContext":
        reply = await self._reply(ops.CREATE_CONTEXT.member, ops.CREATE_CONTEXT.in_sig, [client_name])
        (ctx_id,) = reply.body
        ctx = RemoteContext(self, ctx_id, on_update)
        ctx.owner = reply.sender   # the service's unique name: its late views come from there only
        self._contexts[ctx_id] = ctx
        return ctx

    def _on_message(self, msg: Message) -> bool:
        if (msg.message_type == MessageType.SIGNAL and msg.interface == wire.INTERFACE
                and msg.member == ops.VIEW_UPDATED.member):
            ctx = self._contexts.get(msg.body[0])
            # any peer may send us a signal: only the service that made the context is believed
            if ctx is not None and ctx.on_update is not None and msg.sender == ctx.owner:
                ctx.on_update(wire.decode_view(msg.body[2]))   # in order here: its reply count is moot
            return True
        return False

    def disconnect(self) -> None:
        self.bus.disconnect()


class RemoteContext:
    """An input context in the service; its operations (one per row of
    ime_frontend.operations.CONTEXT_OPERATIONS) are added below the class."""

    def __init__(self, client: EngineClient, ctx_id: int, on_update: Callable[[View], None] | None) -> None:
        self.client = client
        self.id = ctx_id
        self.on_update = on_update
        self.owner: str | None = None   # the unique name that answered CreateContext
        self.decoder = wire.ViewDecoder()   # a key's reply may leave out an unchanged suggestion list

    async def run(self, op: ops.Operation, *args: Any, **kwargs: Any) -> View | None:
        """Call op on this context with a host-style argument list; its view, or None."""
        body = op.wire_body(self.id, op.bind(args, kwargs))
        reply = await self.client.call(op.member, op.in_sig, body)
        return self.decoder.decode_reply(reply[0]) if op.reply is ops.Reply.VIEW else None

    async def close(self) -> None:
        self.client._contexts.pop(self.id, None)
        try:
            await self.client.call(ops.DESTROY_CONTEXT.member, ops.DESTROY_CONTEXT.in_sig, [self.id])
        except (DBusError, OSError):
            pass  # the service is gone or already dropped it


for _op in ops.CONTEXT_OPERATIONS:
    setattr(RemoteContext, _op.method, ops.operation_method(_op, RemoteContext.run))
del _op
