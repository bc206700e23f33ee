"""The Karukan engine service: one process on the session bus serving many input contexts.

Interface org.karukan.Engine1 at /org/karukan/Engine (bus name org.karukan.Engine); its methods
are declared in ime_frontend.operations, and the dispatch table and introspection XML here are
built from that table. Methods are dispatched from raw messages (not a dbus-fast ServiceInterface) because every call needs its
sender: a context belongs to the connection that created it, is invisible to others, and dies
when that connection leaves the bus. Views are sent as one struct (see ime_frontend.wire); late
views (model results after a key was answered) go to the owner as the ViewUpdated signal.

Nothing a user types is logged.

Exit status: 0 after SIGTERM/SIGINT (or `stop`), 1 when the bus connection is lost without being
asked to close (the session bus died or dropped us), so a supervisor (systemd's
Restart=on-failure) starts a fresh engine.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import traceback
from dataclasses import dataclass
from typing import Awaitable, Callable

from dbus_fast import BusType, Message, MessageType
from dbus_fast.constants import NameFlag, RequestNameReply

from ime_frontend import operations as ops
from ime_frontend import wire
from ime_frontend.bus import MessageBus, unexpected_loss
from ime_frontend.contexts import ContextHost, EngineClosing, EngineCore, eviction_victim
from ime_frontend.fair import CLIENT, NestedTurns
from karukan_engine.config import Config
from karukan_engine.session.view import View

log = logging.getLogger(__name__)

MAX_CONTEXTS_PER_CLIENT = 256
MAX_CONTEXTS = 4096
MAX_SURROUNDING_CHARS = 65536
MAX_NAME_CHARS = 256
ENGINE_VERSION = "0.1.0"


class CallError(Exception):
    """Answer the call with this D-Bus error."""

    def __init__(self, name: str, text: str) -> None:
        super().__init__(text)
        self.name = name


@dataclass(frozen=True)
class MethodSpec:
    in_sig: str
    out_sig: str
    arg_names: tuple[str, ...]
    out_names: tuple[str, ...]
    handler: Callable[["EngineService", str, list], Awaitable[list]]


@dataclass
class _Context:
    owner: str
    host: ContextHost
    encoder: wire.ViewEncoder   # the list of the last reply (a key's reply may skip it if unchanged)


class EngineService:
    """Dispatches org.karukan.Engine1 calls on one bus connection to the hosted contexts."""

    def __init__(self, bus: MessageBus, core: EngineCore) -> None:
        self._bus = bus
        self._core = core
        self._contexts: dict[int, _Context] = {}
        self._next_id = 1
        self._tasks: set[asyncio.Task] = set()
        # Calls wait here, one lane per client and in it one per context, and are started in
        # turns (see _dispatch).
        self._inbox: NestedTurns[tuple[Message, MethodSpec]] = NestedTurns()
        self._dispatcher: asyncio.Task | None = None

    @property
    def context_count(self) -> int:
        return len(self._contexts)

    # --- message dispatch ---------------------------------------------------------------------

    def handle_message(self, msg: Message) -> bool | Message:
        if msg.message_type == MessageType.SIGNAL:
            self._watch_disconnects(msg)
            return False
        if msg.message_type != MessageType.METHOD_CALL or msg.path != wire.OBJECT_PATH:
            return False
        if msg.interface == "org.freedesktop.DBus.Introspectable" and msg.member == "Introspect":
            return Message.new_method_return(msg, "s", [introspection_xml()])
        if msg.interface == "org.freedesktop.DBus.Peer":
            return False  # dbus-fast answers Ping / GetMachineId itself
        if msg.interface not in (wire.INTERFACE, None):
            return Message.new_error(msg, "org.freedesktop.DBus.Error.UnknownInterface", "unknown interface")
        spec = METHODS.get(msg.member)
        if spec is None:
            return Message.new_error(msg, "org.freedesktop.DBus.Error.UnknownMethod", f"no method {msg.member}")
        if msg.signature != spec.in_sig:
            return Message.new_error(
                msg, "org.freedesktop.DBus.Error.InvalidArgs",
                f"{msg.member} takes ({spec.in_sig}), got ({msg.signature})",
            )
        context = msg.body[0] if spec.arg_names[:1] == ("context",) else None
        self._inbox.push(msg.sender or "", context, (msg, spec))
        if self._dispatcher is None:
            self._dispatcher = asyncio.ensure_future(self._dispatch())
        return True

    async def _dispatch(self) -> None:
        """Start the waiting calls one client at a time, in turns, one per event-loop round.

        The bus delivers every client's calls on one socket in arrival order; a flood of
        thousands of pipelined calls would otherwise all be answered before a call that arrived
        behind them. Here the reader only queues (cheap), so it keeps reading while calls are
        started one per round: another client's call is started within one turn of each client
        with calls waiting, and inside one client (fcitx5 is one client for all its
        applications) each input context likewise takes turns. Calls on one context keep their
        order; calls without a context form one lane of their client."""
        try:
            while self._inbox:
                _client, _context, (msg, spec) = self._inbox.pop()
                task = asyncio.ensure_future(self._answer(msg, spec))
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)
                await asyncio.sleep(0)   # the reader (and started calls) run before the next start
        finally:
            self._dispatcher = None

    def close(self) -> None:
        """Stop starting calls (shutting down: the bus is going away)."""
        if self._dispatcher is not None:
            self._dispatcher.cancel()
        self._inbox.drain()

    async def close_contexts(self) -> None:
        """Close every context (shutting down), each learning what its last commit chose."""
        contexts, self._contexts = list(self._contexts.values()), {}
        for ctx in contexts:
            await ctx.host.close()

    async def _answer(self, msg: Message, spec: MethodSpec) -> None:
        CLIENT.set(msg.sender or "")   # this call's task only: its session work queues in the caller's lane
        try:
            body = await spec.handler(self, msg.sender or "", list(msg.body))
            reply = Message.new_method_return(msg, spec.out_sig, body)
        except CallError as exc:
            reply = Message.new_error(msg, exc.name, str(exc))
        except EngineClosing as exc:   # shutting down with calls still queued: no line each
            reply = Message.new_error(msg, exc.type, exc.text)
        except Exception as exc:  # a bug in a lower layer must not take the service down
            # Type and place only: an exception's message may quote what the user typed.
            where = traceback.extract_tb(exc.__traceback__)[-1]
            log.error("%s failed: %s at %s:%d", msg.member, type(exc).__name__, where.filename, where.lineno)
            reply = Message.new_error(msg, "org.freedesktop.DBus.Error.Failed", type(exc).__name__)
        if self._bus.connected:
            try:
                self._bus.send(reply)   # marshals here: a body D-Bus cannot carry raises
            except Exception as exc:     # never leave the call unanswered
                log.error("%s reply could not be sent: %s", msg.member, type(exc).__name__)
                self._forget_sent(spec, msg)
                self._bus.send(Message.new_error(msg, "org.freedesktop.DBus.Error.Failed", "unsendable reply"))

    def _forget_sent(self, spec: MethodSpec, msg: Message) -> None:
        ctx = self._contexts.get(msg.body[0]) if spec.arg_names[:1] == ("context",) else None
        if ctx is not None:
            ctx.encoder.forget()

    def _watch_disconnects(self, msg: Message) -> None:
        if msg.member != "NameOwnerChanged" or msg.sender != "org.freedesktop.DBus":
            return
        name, _old, new = msg.body
        if name.startswith(":") and not new:
            for ctx_id in [i for i, c in self._contexts.items() if c.owner == name]:
                self._drop(ctx_id)

    # --- contexts -----------------------------------------------------------------------------

    def _context(self, sender: str, ctx_id: int) -> ContextHost:
        ctx = self._contexts.get(ctx_id)
        if ctx is None or ctx.owner != sender:
            raise CallError(wire.ERROR_UNKNOWN_CONTEXT, f"no input context {ctx_id}")
        return ctx.host

    def _drop(self, ctx_id: int) -> None:
        ctx = self._contexts.pop(ctx_id, None)
        if ctx is not None:
            ctx.host.detach()

    def _send_update(self, owner: str, ctx_id: int, view: View) -> None:
        ctx = self._contexts.get(ctx_id)
        if ctx is None or not self._bus.connected:
            return
        try:
            self._bus.send(Message(
                message_type=MessageType.SIGNAL, destination=owner, path=wire.OBJECT_PATH,
                interface=wire.INTERFACE, member=ops.VIEW_UPDATED.member, signature=ops.VIEW_UPDATED.in_sig,
                body=[ctx_id, ctx.encoder.replies, wire.encode_view(view)],
            ))
        except Exception as exc:  # a late view that cannot be sent is dropped; the next key redraws
            log.error("ViewUpdated could not be sent: %s", type(exc).__name__)

    async def create_context(self, sender: str, body: list) -> list:
        (client_name,) = body
        if len(client_name) > MAX_NAME_CHARS:
            raise CallError(wire.ERROR_INVALID_ARGS, "client name too long")
        owned = sum(1 for c in self._contexts.values() if c.owner == sender)
        if owned >= MAX_CONTEXTS_PER_CLIENT:
            raise CallError(wire.ERROR_LIMITS, "too many input contexts")
        if len(self._contexts) >= MAX_CONTEXTS:
            # Full: close the oldest idle context of the client holding the most, so a new
            # application always gets one (that client re-creates it on its next call).
            victim = eviction_victim((i, c.owner, c.host.last_used, c.host.busy) for i, c in self._contexts.items())
            if victim is None:
                raise CallError(wire.ERROR_LIMITS, "too many input contexts")
            log.info("context limit reached: closed context %d of the client holding the most", victim)
            self._drop(victim)
        ctx_id = self._next_id
        self._next_id += 1
        host = self._core.new_context(
            asyncio.get_running_loop(), lambda view: self._send_update(sender, ctx_id, view))
        self._contexts[ctx_id] = _Context(sender, host, wire.ViewEncoder())
        log.debug("context %d created (%d open)", ctx_id, len(self._contexts))
        return [ctx_id]

    async def destroy_context(self, sender: str, body: list) -> list:
        self._context(sender, body[0])
        self._drop(body[0])
        return []

    async def run_operation(self, op: ops.Operation, sender: str, body: list) -> list:
        """One of ops.CONTEXT_OPERATIONS: checked, run on the owner's context, answered."""
        ctx_id, args = op.host_args(body)
        host = self._context(sender, ctx_id)
        encoder = self._contexts[ctx_id].encoder
        check = _CHECKS.get(op.member)
        if check is not None:
            check(*args)
        try:
            view = await getattr(host, op.method)(*args)
        except (ValueError, KeyError) as exc:
            if op.member not in _UNKNOWN_VALUES:
                raise
            raise CallError(wire.ERROR_INVALID_ARGS, _UNKNOWN_VALUES[op.member]) from exc
        if op.reply is ops.Reply.VIEW:
            return [encoder.encode_reply(view, key_reply=op is ops.PROCESS_KEY)]
        # The reply carries no view: a commit the call caused (a field turned into a password
        # field mid-composition) reaches the owner as a late view.
        if view.commit:
            self._send_update(sender, ctx_id, view)
        return []

    async def info(self, sender: str, body: list) -> list:
        return [{
            "version": ENGINE_VERSION,
            "converter": type(self._core.converter).__name__,
            "contexts": str(len(self._contexts)),
            # Settings a frontend draws with (the fcitx5 addon reads it once per service start).
            "candidate_layout": (self._core.config or Config()).ui.candidate_layout,
        }]


# What the service refuses before an operation reaches the session: more than one call may carry,
# or positions beyond the text. Each check takes the host method's arguments.
def _check_surrounding_text(text: str, cursor: int, anchor: int) -> None:
    if len(text) > MAX_SURROUNDING_CHARS:
        raise CallError(wire.ERROR_LIMITS, f"surrounding text over {MAX_SURROUNDING_CHARS} characters")
    if cursor > len(text) or anchor > len(text):
        raise CallError(wire.ERROR_INVALID_ARGS, "cursor or anchor beyond the text")


def _check_input_mode(mode: str) -> None:
    if len(mode) > MAX_NAME_CHARS:
        raise CallError(wire.ERROR_INVALID_ARGS, "mode name too long")


def _check_returned_text(text: str) -> None:
    if len(text) > MAX_SURROUNDING_CHARS:
        raise CallError(wire.ERROR_LIMITS, f"committed text over {MAX_SURROUNDING_CHARS} characters")


_CHECKS: dict[str, Callable[..., None]] = {
    ops.SET_SURROUNDING_TEXT.member: _check_surrounding_text,
    ops.RETURN_COMMITTED.member: _check_returned_text,
    ops.SET_INPUT_MODE.member: _check_input_mode,
}
# Operations whose session raises ValueError / KeyError for a value it does not know: the caller
# gets InvalidArgs with this text.
_UNKNOWN_VALUES: dict[str, str] = {ops.SET_INPUT_MODE.member: "unknown input mode"}


def _operation_handler(op: ops.Operation) -> Callable[[EngineService, str, list], Awaitable[list]]:
    async def handler(service: EngineService, sender: str, body: list) -> list:
        return await service.run_operation(op, sender, body)

    return handler


def _spec(method: ops.Method, handler: Callable[[EngineService, str, list], Awaitable[list]]) -> MethodSpec:
    return MethodSpec(method.in_sig, method.out_sig, tuple(p.name for p in method.ins),
                      tuple(p.name for p in method.outs), handler)


_HANDLERS: dict[str, Callable[[EngineService, str, list], Awaitable[list]]] = {
    ops.CREATE_CONTEXT.member: EngineService.create_context,
    ops.DESTROY_CONTEXT.member: EngineService.destroy_context,
    ops.GET_INFO.member: EngineService.info,
    **{op.member: _operation_handler(op) for op in ops.CONTEXT_OPERATIONS},
}
# Every method of ops.INTERFACE_METHODS, in its order (a method without a handler fails here, at import).
METHODS: dict[str, MethodSpec] = {m.member: _spec(m, _HANDLERS[m.member]) for m in ops.INTERFACE_METHODS}


def introspection_xml() -> str:
    return ops.introspection_xml()


EXIT_BUS_LOST = 1


async def serve(core_factory: Callable[[], EngineCore], bus_address: str | None = None,
                replace: bool = False, ready: Callable[[EngineService], None] | None = None,
                stop: asyncio.Event | None = None) -> int:
    """Run until `stop` is set (by default: SIGTERM/SIGINT): 0; or until the bus goes away
    unasked: EXIT_BUS_LOST."""
    loop = asyncio.get_running_loop()
    if stop is None:
        stop = asyncio.Event()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
    # Load the converter before owning the name: a client activated by its first call must find
    # an engine that answers.
    core = await loop.run_in_executor(None, core_factory)
    bus = MessageBus(bus_address=bus_address) if bus_address else MessageBus(bus_type=BusType.SESSION)
    await bus.connect()
    service = EngineService(bus, core)
    bus.add_message_handler(service.handle_message)
    await bus.call(Message(
        destination="org.freedesktop.DBus", path="/org/freedesktop/DBus", interface="org.freedesktop.DBus",
        member="AddMatch", signature="s",
        body=["type='signal',sender='org.freedesktop.DBus',member='NameOwnerChanged',arg2=''"],
    ))
    flags = NameFlag.DO_NOT_QUEUE | (NameFlag.REPLACE_EXISTING if replace else NameFlag.NONE)
    flags |= NameFlag.ALLOW_REPLACEMENT
    reply = await bus.request_name(wire.BUS_NAME, flags)
    if reply not in (RequestNameReply.PRIMARY_OWNER, RequestNameReply.ALREADY_OWNER):
        bus.disconnect()
        await loop.run_in_executor(None, core.close)
        raise RuntimeError(f"{wire.BUS_NAME} is already owned by another engine service")
    lost = asyncio.ensure_future(bus.wait_for_disconnect())
    log.info("engine service ready (%s)", type(core.converter).__name__)
    if ready is not None:
        ready(service)
    stopped = asyncio.ensure_future(stop.wait())
    await asyncio.wait({lost, stopped}, return_when=asyncio.FIRST_COMPLETED)
    status = 0
    if not stopped.done() and unexpected_loss(bus):
        reason = lost.exception() if lost.done() and not lost.cancelled() else None
        log.error("lost the bus connection (%s); exiting so the engine is restarted",
                  type(reason).__name__ if reason is not None else "closed by the bus")
        status = EXIT_BUS_LOST
    if bus.connected:
        try:
            await bus.release_name(wire.BUS_NAME)
        except Exception:  # shutting down anyway
            pass
        bus.disconnect()
    stopped.cancel()
    lost.cancel()
    service.close()
    await service.close_contexts()
    await loop.run_in_executor(None, core.close)
    log.info("engine service stopped")
    return status


def main(argv: list[str] | None = None) -> int:
    import argparse

    from ime_frontend.serve_options import add_serve_arguments

    parser = argparse.ArgumentParser(prog="karukan-engine", description="Karukan engine service")
    add_serve_arguments(parser)
    return run_serve(parser.parse_args(argv))


def run_serve(args) -> int:
    from ime_frontend.contexts import build_core

    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO,
                        format="karukan-engine: %(levelname)s %(name)s: %(message)s")

    def ready(_service: EngineService) -> None:
        print("READY", flush=True)  # for supervisors and tests that start the service by hand

    # Tests only: a cold start that lasts until this file exists (keys typed meanwhile are held).
    import os, time
    while os.environ.get("KARUKAN_TEST_START_GATE") and not os.path.exists(os.environ["KARUKAN_TEST_START_GATE"]):
        time.sleep(0.05)
    return asyncio.run(serve(lambda: build_core(not args.no_model, args.model), args.address, args.replace, ready))


if __name__ == "__main__":
    raise SystemExit(main())
