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
import socket

from dbus_fast.aio import message_bus as _aio

__all__ = ["MessageBus", "DrainingWriter", "unexpected_loss"]


class DrainingWriter(_aio._MessageWriter):
    """dbus-fast's message writer, except that a full socket waits for writability."""

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
            fut, self.fut = self.fut, None
            if fut is not None and not fut.done():
                fut.set_result(None)

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
                fut.set_exception(exc)
        self.bus._finalize(exc)


class MessageBus(_aio.MessageBus):
    """dbus_fast.aio.MessageBus with a writer that survives a momentarily full socket."""

    __slots__ = ()

    async def connect(self) -> "MessageBus":
        result = await super().connect()
        writer = self._writer
        if writer is not None and type(writer) is _aio._MessageWriter:
            # Same object, same queue and partial-write state: only the write logic changes.
            writer.__class__ = DrainingWriter
            if writer.buf is not None or writer.messages:
                writer._wait_writable()
        return result


def unexpected_loss(bus: _aio.MessageBus) -> bool:
    """True when the connection ended without this process asking for it."""
    return not bus.connected and not bus._user_disconnect
