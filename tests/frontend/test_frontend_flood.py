"""Floods of pipelined calls against the engine service on a bus configured like Debian's
session bus (50,000 pending replies per connection, 1 GB queues): the service stays up, answers
every call, keeps a quiet client typing, and exits non-zero when it loses the bus.

Every flood is bounded by a call count; latency is measured and reported, never asserted beyond
a generous liveness bound.
"""

from __future__ import annotations

import asyncio
import signal
import socket
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dbus_fast import Message
from dbus_fast.aio import message_bus as aio_bus

from ime_frontend.bus import DrainingWriter, MessageBus
from ime_frontend.flood import info_flood, key_flood, percentile, quiet_typist
from karukan_testing.headless import DEBIAN_SESSION_LIMITS, HeadlessDesktop

LIVENESS_S = 120.0   # a call unanswered for this long counts as lost (the bound is not a benchmark)


# --- the writer, on a socket pair ------------------------------------------------------------


class _FakeBus:
    """What a message writer uses of its bus."""

    def __init__(self, sock: socket.socket, loop: asyncio.AbstractEventLoop) -> None:
        self._sock = sock
        self._fd = sock.fileno()
        self._loop = loop
        self._negotiate_unix_fd = False
        self._user_disconnect = False
        self._disconnected = False
        self.unique_name = ":1.1"
        self.finalized: list[Exception | None] = []

    def _finalize(self, err: Exception | None = None) -> None:
        self.finalized.append(err)
        self._disconnected = True
        self._loop.remove_writer(self._fd)


def _signal(payload: str) -> Message:
    return Message.new_signal("/org/example", "org.example.Test", "Chunk", "s", [payload])


async def _write_through_a_full_socket(writer_class, sizes: list[int], read_chunk: int) -> tuple[bytes, bytes, _FakeBus]:
    """Queue messages of the given payload sizes on a socket with a small buffer that nobody
    reads at first; then read it in chunks of read_chunk bytes. (sent, received, bus)."""
    loop = asyncio.get_running_loop()
    ours, peer = socket.socketpair()
    ours.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
    peer.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    ours.setblocking(False)
    peer.setblocking(False)
    bus = _FakeBus(ours, loop)
    writer = writer_class(bus)
    futures, expected = [], bytearray()
    for serial, size in enumerate(sizes, start=1):
        msg = _signal("x" * size)
        msg.serial = serial
        expected += msg._marshall(False)
        fut = loop.create_future()
        futures.append(fut)
        writer.schedule_write(msg, fut)
    await asyncio.sleep(0.05)          # the socket fills; nobody reads yet
    received = bytearray()
    idle = 0
    while len(received) < len(expected) and not bus.finalized and idle < 200:
        try:
            chunk = peer.recv(read_chunk)
        except BlockingIOError:
            idle += 1
            await asyncio.sleep(0.005)
            continue
        idle = 0
        received += chunk
        await asyncio.sleep(0)
    if not bus.finalized:   # a finalized writer leaves its futures to the bus: not waited for
        await asyncio.wait_for(asyncio.gather(*futures), 30)
    for fut in futures:
        if fut.done() and not fut.cancelled():
            fut.exception()   # retrieved: the failure is what the test looks at
    loop.remove_writer(ours.fileno())
    ours.close()
    peer.close()
    return bytes(expected), bytes(received), bus


def test_a_full_socket_makes_the_writer_wait_not_disconnect():
    sizes = [2000] * 300    # ~600 kB queued at once into a 4 kB socket buffer

    async def body():
        return await _write_through_a_full_socket(DrainingWriter, sizes, 65536)

    sent, received, bus = asyncio.run(body())
    assert bus.finalized == [] and received == sent


def test_dbus_fasts_own_writer_drops_the_connection_on_a_full_socket():
    """Why ime_frontend.bus exists: if this starts failing, dbus-fast has fixed its writer."""
    async def body():
        return await _write_through_a_full_socket(aio_bus._MessageWriter, [2000] * 300, 65536)

    _sent, _received, bus = asyncio.run(body())
    assert bus.finalized and isinstance(bus.finalized[0], BlockingIOError)


@settings(max_examples=25, deadline=None)
@given(sizes=st.lists(st.integers(0, 20000), min_size=1, max_size=60),
       read_chunk=st.integers(1, 70000))
def test_every_message_arrives_whole_and_in_order_however_the_socket_drains(sizes, read_chunk):
    async def body():
        return await _write_through_a_full_socket(DrainingWriter, sizes, read_chunk)

    sent, received, bus = asyncio.run(body())
    assert bus.finalized == [] and received == sent


def test_after_the_connection_is_gone_a_send_fails_at_once_and_quietly():
    """A busy engine keeps sending replies and signals for a while after losing its bus; each
    used to hit the closed socket and log a traceback (2 MB after a flood)."""
    async def body():
        loop = asyncio.get_running_loop()
        ours, peer = socket.socketpair()
        ours.setblocking(False)
        bus = _FakeBus(ours, loop)
        writer = DrainingWriter(bus)
        bus._finalize(None)
        ours.close()                       # any write now would raise EBADF
        futures = [loop.create_future() for _ in range(100)]
        for fut in futures:
            writer.schedule_write(_signal("late"), fut)
        peer.close()
        return futures

    futures = asyncio.run(body())
    assert all(isinstance(f.exception(), ConnectionError) for f in futures)
    # Marked as retrieved: nobody awaiting them makes asyncio log "exception was never retrieved".
    assert not any(f._log_traceback for f in futures)


def test_connected_buses_get_the_draining_writer():
    async def body():
        with HeadlessDesktop() as desktop:
            bus = await MessageBus(bus_address=desktop.start_session_bus()).connect()
            try:
                return type(bus._writer), bus.connected
            finally:
                bus.disconnect()

    assert asyncio.run(body()) == (DrainingWriter, True)


# --- the service on a Debian-like session bus -------------------------------------------------


@pytest.fixture
def desktop():
    with HeadlessDesktop() as d:
        assert d.bus_limits["max_replies_per_connection"] == 50000
        config = Path(d.env["XDG_CONFIG_HOME"]) / "karukan/config.toml"
        config.parent.mkdir(parents=True, exist_ok=True)
        config.write_text("[session]\nlive_conversion = false\n", encoding="utf-8")
        d.start_session_bus()
        yield d


def test_the_test_bus_has_debians_session_limits(desktop):
    conf = (desktop.root / "session-bus.conf").read_text()
    for name, value in DEBIAN_SESSION_LIMITS.items():
        assert f'<limit name="{name}">{value}</limit>' in conf


async def _flood_while_typing(address: str, floods: list, quiet_keys: int):
    tasks = [asyncio.ensure_future(f) for f in floods]
    quiet = await asyncio.wait_for(quiet_typist(address, quiet_keys), LIVENESS_S)
    results = await asyncio.wait_for(asyncio.gather(*tasks), LIVENESS_S)
    return results, quiet


def _report(name: str, results, quiet) -> None:
    sent = sum(r.sent for r in results)
    answered = sum(r.answered for r in results)
    print(f"\n{name}: {sent} calls from {len(results)} clients, {answered} answered in "
          f"{max(r.seconds for r in results):.1f} s; quiet client p50 {percentile(quiet.latencies_ms, 0.5):.1f} ms, "
          f"max {max(quiet.latencies_ms):.1f} ms over {len(quiet.latencies_ms)} keys")


def test_pipelined_floods_from_several_clients_leave_the_service_up_and_answering(desktop):
    service = desktop.start_service(["--no-model"])
    address = desktop.session_address
    floods = [info_flood(address, 5000) for _ in range(4)]                 # 20,000 GetInfo
    floods += [key_flood(address, contexts=16, keys_per_context=8) for _ in range(8)]   # 1,024 keys

    results, quiet = asyncio.run(_flood_while_typing(address, floods, quiet_keys=20))
    _report("flood", results, quiet)
    for r in results:
        assert r.outcomes == {"ok": r.sent}, r.outcomes
    assert service.poll() is None, desktop.log_tail("engine-service")
    assert quiet.failures == 0 and quiet.preedits_right and len(quiet.latencies_ms) == 20
    # After the flood the service is as it was: a new client types at once.
    after = asyncio.run(asyncio.wait_for(quiet_typist(address, 3, pause_s=0), LIVENESS_S))
    assert after.failures == 0 and after.preedits_right
    desktop.stop(service)
    assert service.returncode == 0


def test_sixteen_clients_with_sixteen_contexts_each_flooding_keys(desktop):
    service = desktop.start_service(["--no-model"])
    address = desktop.session_address
    floods = [key_flood(address, contexts=16, keys_per_context=16) for _ in range(16)]   # 4,096 keys

    results, quiet = asyncio.run(_flood_while_typing(address, floods, quiet_keys=10))
    _report("16x16", results, quiet)
    for r in results:
        assert r.outcomes == {"ok": r.sent}, r.outcomes
    assert service.poll() is None, desktop.log_tail("engine-service")
    assert quiet.failures == 0 and quiet.preedits_right
    desktop.stop(service)
    assert service.returncode == 0


def test_losing_the_session_bus_exits_non_zero(desktop):
    """systemd's Restart=on-failure restarts only a failed unit: a lost bus must not look like
    a clean stop."""
    service = desktop.start_service(["--no-model"])
    (bus_daemon,) = [p for name, p in desktop._procs if name == "dbus-daemon"]
    desktop.stop(bus_daemon, signal.SIGKILL)
    assert service.wait(LIVENESS_S) == 1
    assert "lost the bus connection" in desktop.log_tail("engine-service")


def test_a_stop_signal_still_exits_zero(desktop):
    service = desktop.start_service(["--no-model"])
    desktop.stop(service)
    assert service.returncode == 0
