#!/usr/bin/env python3
"""Where a call to the engine service spends its time: the bus daemon, the service's own
dispatch, the session.

On a private session bus (karukan_testing.headless), one client makes the same kind of call
many times, one after another, and times each round trip:

- bus daemon: org.freedesktop.DBus.GetId, answered by dbus-daemon itself (client ↔ daemon);
- echo process: a method of a bare dbus-fast service in another process (client ↔ daemon ↔
  process: what the second hop through the daemon adds);
- raw socket: the same bytes as the echo call, written to another process over a Unix socket
  and read back (no daemon, no D-Bus: what a peer-to-peer connection could at best cost);
- service Ping: org.freedesktop.DBus.Peer.Ping to the engine service (dbus-fast answers it on
  the service's loop, before any Karukan code);
- service GetInfo: the service's dispatch (its turn queue, a task, the handler, the reply)
  without the session;
- service key: a key the session handles (a letter, then Escape every 8 letters), dictionary
  only: the dispatch, the hop to the context's worker thread and the session.

The differences between rows say what each layer adds. --pace-ms P sleeps P ms between calls
(processes then sleep between calls, as between a person's keys).

    python benchmarks/dbus_hop_bench.py [--calls 2000] [--pace-ms 0] [--json out.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Awaitable, Callable

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from dbus_fast import Message, MessageType  # noqa: E402

from ime_frontend import wire  # noqa: E402
from ime_frontend.bus import MessageBus  # noqa: E402
from ime_frontend.client import EngineClient  # noqa: E402
from karukan_testing.headless import HeadlessDesktop, read_line  # noqa: E402
from roundtrip_bench import summary  # noqa: E402

ESCAPE = 0xFF1B
LETTERS = "kaminoya"
SETTLE_S = 5.0

# A bare dbus-fast service in its own process: one method that returns its argument.
ECHO_SERVICE = """
import asyncio, sys
from dbus_fast.aio import MessageBus
from dbus_fast.service import ServiceInterface, method

class Echo(ServiceInterface):
    def __init__(self):
        super().__init__("org.karukan.HopBench")

    @method()
    def Echo(self, value: "u") -> "u":
        return value

async def main():
    bus = await MessageBus(bus_address=sys.argv[1]).connect()
    bus.export("/hop", Echo())
    await bus.request_name("org.karukan.HopBench")
    print("READY", flush=True)
    await bus.wait_for_disconnect()

asyncio.run(main())
"""

# Echoes every block of bytes it reads back to the sender (the raw-socket row).
SOCKET_ECHO = """
import socket, sys
sock = socket.socket(fileno=int(sys.argv[1]))
while True:
    data = sock.recv(65536)
    if not data:
        break
    sock.sendall(data)
"""


async def timed(call: Callable[[int], Awaitable[object]], calls: int, pace_s: float, warmup: int = 50) -> list[float]:
    out = []
    for i in range(warmup + calls):
        start = time.perf_counter()
        await call(i)
        if i >= warmup:
            out.append((time.perf_counter() - start) * 1e3)
        if pace_s:
            await asyncio.sleep(pace_s)
    return out


def echo_call() -> Message:
    return Message(destination="org.karukan.HopBench", path="/hop", interface="org.karukan.HopBench",
                   member="Echo", signature="u", body=[1])


def raw_socket_row(desktop: HeadlessDesktop, payload: bytes, calls: int, pace_s: float) -> list[float]:
    ours, theirs = socket.socketpair()
    proc = desktop.spawn("socket-echo", [sys.executable, "-c", SOCKET_ECHO, str(theirs.fileno())],
                         pass_fds=(theirs.fileno(),))
    theirs.close()
    try:
        out = []
        for i in range(50 + calls):
            start = time.perf_counter()
            ours.sendall(payload)
            got = 0
            while got < len(payload):
                got += len(ours.recv(65536))
            if i >= 50:
                out.append((time.perf_counter() - start) * 1e3)
            if pace_s:
                time.sleep(pace_s)
        return out
    finally:
        ours.close()
        proc.wait(timeout=5)


async def bus_rows(address: str, calls: int, pace_s: float) -> dict[str, list[float]]:
    bus = await MessageBus(bus_address=address).connect()
    client = EngineClient(bus, auto_start=False)
    rows: dict[str, list[float]] = {}
    try:
        rows["bus daemon"] = await timed(lambda _i: client._bus_daemon("GetId", "", [], 5.0), calls, pace_s)
        rows["echo process"] = await timed(lambda _i: bus.call(echo_call()), calls, pace_s)

        async def ping(_i: int) -> None:
            reply = await bus.call(Message(destination=wire.BUS_NAME, path=wire.OBJECT_PATH,
                                           interface="org.freedesktop.DBus.Peer", member="Ping"))
            assert reply.message_type == MessageType.METHOD_RETURN, reply.body

        rows["service Ping"] = await timed(ping, calls, pace_s)
        rows["service GetInfo"] = await timed(lambda _i: client.call("GetInfo"), calls, pace_s)
        context = await client.create_context("hop-bench")

        async def key(i: int) -> None:
            letter = LETTERS[i % len(LETTERS)]
            view = await context.process_key(ord(letter), 0, False)
            assert view.handled
            if i % len(LETTERS) == len(LETTERS) - 1:
                await context.process_key(ESCAPE, 0, False)   # untimed: keeps the reading short

        rows["service key"] = await timed(key, calls, pace_s)
    finally:
        bus.disconnect()
    return rows


def run(calls: int, pace_ms: float) -> dict:
    pace_s = pace_ms / 1000
    with HeadlessDesktop() as desktop:
        address = desktop.start_session_bus()
        echo = desktop.spawn("echo-service", [sys.executable, "-c", ECHO_SERVICE, address], stdout_pipe=True)
        if read_line(echo.stdout, "echo service").strip() != "READY":
            raise RuntimeError("the echo service did not start")
        desktop.start_service(["--no-model"])
        time.sleep(SETTLE_S)   # the service loads its language models on threads after READY
        rows = asyncio.run(bus_rows(address, calls, pace_s))
        # the same bytes as one echo call on the wire
        payload = bytes(echo_call()._marshall(False))
        rows["raw socket"] = raw_socket_row(desktop, payload, calls, pace_s)
    order = ["raw socket", "bus daemon", "echo process", "service Ping", "service GetInfo", "service key"]
    return {name: summary(rows[name]) for name in order}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--pace-ms", type=float, default=0.0, help="pause between calls")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    results = run(args.calls, args.pace_ms)
    print(f"{'round trip':18} {'n':>6} {'p50 ms':>8} {'p95 ms':>8}")
    for name, row in results.items():
        print(f"{name:18} {row['n']:6d} {row['p50_ms']:8.3f} {row['p95_ms']:8.3f}")
    if args.json:
        args.json.write_text(json.dumps({"calls": args.calls, "pace_ms": args.pace_ms, "results": results,
                                         "machine": {"cpus": os.cpu_count(), "python": platform.python_version()}},
                                        indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
