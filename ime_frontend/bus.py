"""dbus-fast's asyncio MessageBus, made to wait for a full socket instead of dropping the bus.

dbus-fast writes with a plain non-blocking `send()`. When the peer (dbus-daemon) has not read
the socket buffer yet, `send()` raises BlockingIOError (EAGAIN) and dbus-fast takes that as a
broken connection: it disconnects, and every pending call, context and client of the process is
gone. A flood of pipelined calls (thousands of replies in a burst) does exactly that.

`MessageBus` here is a drop-in subclass whose writer treats EAGAIN / EINTR as "try again when
the socket is writable" (as GDBus and fcitx5's D-Bus layer do) and keeps every queued message,
including a partly written one, in order. Real errors (EPIPE, ECONNRESET, ...) still end the
connection. `unexpected_loss(bus)` tells a lost connection from one we closed ourselves.

Use it everywhere this package opens a bus.
"""

from __future__ import annotations

import array
import asyncio
import logging
import socket
from copy import copy

from dbus_fast.aio import message_bus as _aio

from ime_frontend.fair import TurnQueue

__all__ = ["MessageBus", "DrainingWriter", "unexpected_loss"]


class TurnsByDestination:
    """The writer's queue, one lane per destination served in turns (TurnQueue), so that while
    thousands of replies to a flooding client wait for the bus daemon to read them, a reply to
    another client goes out after at most one message of each other waiting lane, not after all
    of them. Messages to one destination keep their order (D-Bus orders nothing across
    destinations). Looks like the deque dbus-fast's writer pops from."""

    def __init__(self, waiting=()) -> None:
        self._turns: TurnQueue = TurnQueue()
        for item in waiting:   # what was queued before (one lane, in order)
            self.append(item)

    def __len__(self) -> int:
        return len(self._turns)

    def push(self, destination: str, item) -> None:
        self._turns.push(destination, item)

    def append(self, item) -> None:
        self._turns.push("", item)

    def popleft(self):
        return self._turns.pop()[1]


class DrainingWriter(_aio._MessageWriter):
    """dbus-fast's message writer, except that a full socket waits for writability, that
    messages queued for different destinations go out in turns (TurnsByDestination), and that
    once the connection is gone a send fails at once, quietly (see _settle_failed)."""

    def buffer_message(self, msg, future=None) -> None:
        if not isinstance(self.messages, TurnsByDestination):   # a writer made as dbus-fast's
            self.messages = TurnsByDestination(self.messages)
        fds = msg.unix_fds
        self.messages.push(msg.destination or "",
                           (msg._marshall(self.negotiate_unix_fd), copy(fds) if fds else None, future))

    def schedule_write(self, msg=None, future=None) -> None:
        if self.bus._disconnected:
            # Never touch a closed socket: every reply and signal a busy process still sends
            # would fail with EBADF and log a traceback (megabytes after a flood).
            _settle_failed(future, ConnectionError("the bus connection is closed"))
            return
        super().schedule_write(msg, future)

    def write_callback(self, remove_writer: bool = True) -> None:
        while True:
            if self.buf is None:
                if not self.messages:
                    if remove_writer:
                        self.loop.remove_writer(self.fd)
                    return
                data, fds, fut = self.messages.popleft()
                self.buf = memoryview(data)
                self.offset = 0
                self.unix_fds = fds
                self.fut = fut
            try:
                sent = self._send_some()
            except (BlockingIOError, InterruptedError):
                # The daemon has not read the socket buffer yet: resume when it is writable.
                # Nothing was written, so the message (and its fds) is sent whole later.
                self._wait_writable()
                return
            except Exception as exc:
                self._fail(exc)
                return
            self.offset += sent
            if self.offset < len(self.buf):
                self._wait_writable()
                return
            self.buf = None
            # (self.fut stays: schedule_write() looks at the last one to skip a needless add_writer)
            if self.fut is not None and not self.fut.done():
                self.fut.set_result(None)

    def _send_some(self) -> int:
        chunk = self.buf[self.offset:]
        if self.unix_fds and self.negotiate_unix_fd:
            ancdata = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", self.unix_fds))]
            sent = self.sock.sendmsg([chunk], ancdata)
            self.unix_fds = None   # the fds went with the first byte
            return sent
        return self.sock.send(chunk)

    def _wait_writable(self) -> None:
        # Re-registering an fd that is already watched only replaces the callback.
        self.loop.add_writer(self.fd, self.write_callback)

    def _fail(self, exc: Exception) -> None:
        fut = self.fut
        if fut is not None and not fut.done():
            if self.bus._user_disconnect:
                fut.set_result(None)
            else:
                _settle_failed(fut, exc)
        self.bus._finalize(exc)


def _settle_failed(fut, exc: Exception) -> None:
    """Fail a send's future, marked as seen: an awaiting caller still gets the error, and one that
    ignores the future (a fire-and-forget signal or reply) does not make asyncio log it."""
    if fut is not None and not fut.done():
        fut.set_exception(exc)
        fut.exception()


class MessageBus(_aio.MessageBus):
    """dbus_fast.aio.MessageBus with a writer that survives a momentarily full socket."""

    __slots__ = ()

    async def connect(self) -> "MessageBus":
        result = await super().connect()
        writer = self._writer
        if writer is not None and type(writer) is _aio._MessageWriter:
            # Same object and partial-write state: only the write logic and the queue change.
            writer.messages = TurnsByDestination(writer.messages)
            writer.__class__ = DrainingWriter
            if writer.buf is not None or writer.messages:
                writer._wait_writable()
        return result


class _DropCancelledReplies(logging.Filter):
    """dbus-fast logs a traceback for every method handler that ends without a result, and at
    shutdown every handler still waiting (thousands after a flood) is cancelled: not errors."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        return not isinstance(exc, asyncio.CancelledError)


logging.getLogger("dbus_fast.send_reply").addFilter(_DropCancelledReplies())


def unexpected_loss(bus: _aio.MessageBus) -> bool:
    """True when the connection ended without this process asking for it."""
    return not bus.connected and not bus._user_disconnect
