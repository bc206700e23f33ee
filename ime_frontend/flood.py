"""Bounded floods of pipelined D-Bus calls, and a quiet client timing its keys meanwhile.

What a hostile or runaway local client does to the engine service: send thousands of calls
without waiting for any answer. Used by the flood tests and benchmarks/flood_bench.py, nothing at
runtime. Every flood is bounded by a call count; only private buses are meant to be flooded.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from dataclasses import dataclass, field

from dbus_fast import Message, MessageType

from ime_frontend import wire
from ime_frontend.bus import MessageBus

KEY_A = 0x61
ESCAPE = 0xFF1B


def engine_call(member: str, signature: str = "", body: list | None = None) -> Message:
    return Message(destination=wire.BUS_NAME, path=wire.OBJECT_PATH, interface=wire.INTERFACE,
                   member=member, signature=signature, body=body or [])


@dataclass
class FloodResult:
    sent: int = 0
    outcomes: Counter = field(default_factory=Counter)   # "ok", a D-Bus error name, or an exception type
    seconds: float = 0.0

    @property
    def answered(self) -> int:
        """Calls that got a reply (a return or a D-Bus error), not a local failure."""
        return sum(n for k, n in self.outcomes.items() if k == "ok" or "." in k)

    def merge(self, other: "FloodResult") -> "FloodResult":
        return FloodResult(self.sent + other.sent, self.outcomes + other.outcomes, max(self.seconds, other.seconds))


async def pipeline(bus: MessageBus, messages: list[Message]) -> FloodResult:
    """Send every message before reading any reply; count the outcomes."""
    start = time.monotonic()
    calls = [asyncio.ensure_future(bus.call(m)) for m in messages]
    replies = await asyncio.gather(*calls, return_exceptions=True)
    outcomes: Counter = Counter()
    for reply in replies:
        if isinstance(reply, BaseException):
            outcomes[type(reply).__name__] += 1
        elif reply.message_type == MessageType.ERROR:
            outcomes[reply.error_name] += 1
        else:
            outcomes["ok"] += 1
    return FloodResult(len(messages), outcomes, time.monotonic() - start)


async def info_flood(address: str, calls: int) -> FloodResult:
    """One client, `calls` pipelined GetInfo."""
    bus = await MessageBus(bus_address=address).connect()
    try:
        return await pipeline(bus, [engine_call("GetInfo") for _ in range(calls)])
    finally:
        bus.disconnect()


async def key_flood(address: str, contexts: int, keys_per_context: int) -> FloodResult:
    """One client with `contexts` input contexts, each sent `keys_per_context` pipelined
    ProcessKey calls (press/release pairs of 'a', an Escape every 16 presses so the preedit
    stays short), interleaved across the contexts."""
    bus = await MessageBus(bus_address=address).connect()
    try:
        ids = []
        for _ in range(contexts):
            reply = await bus.call(engine_call("CreateContext", "s", ["flood"]))
            ids.append(reply.body[0])
        messages = []
        for i in range(keys_per_context):
            keysym = ESCAPE if (i // 2) % 16 == 15 else KEY_A
            for ctx_id in ids:
                messages.append(engine_call("ProcessKey", "uuuub", [ctx_id, keysym, 0, 0, bool(i % 2)]))
        return await pipeline(bus, messages)
    finally:
        bus.disconnect()


@dataclass
class QuietResult:
    latencies_ms: list[float]
    failures: int
    preedits_right: bool


async def quiet_typist(address: str, keys: int, pause_s: float = 0.01) -> QuietResult:
    """A well-behaved client typing one key at a time: how long each press waits for its answer
    while others flood. Types 'a' (press + release) and checks the preedit grows by one あ."""
    bus = await MessageBus(bus_address=address).connect()
    latencies: list[float] = []
    failures = 0
    right = True
    try:
        (ctx_id,) = (await bus.call(engine_call("CreateContext", "s", ["quiet"]))).body
        for n in range(1, keys + 1):
            start = time.monotonic()
            press = await bus.call(engine_call("ProcessKey", "uuuub", [ctx_id, KEY_A, 0, 0, False]))
            latencies.append((time.monotonic() - start) * 1000)
            release = await bus.call(engine_call("ProcessKey", "uuuub", [ctx_id, KEY_A, 0, 0, True]))
            if MessageType.ERROR in (press.message_type, release.message_type):
                failures += 1
                continue
            view = wire.decode_view(press.body[0])
            right = right and view.handled and view.preedit_text == "あ" * n
            await asyncio.sleep(pause_s)
    finally:
        bus.disconnect()
    return QuietResult(latencies, failures, right)


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]
