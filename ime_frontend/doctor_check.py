"""One `karukan doctor` check, and the D-Bus call the checks make (bounded, never hanging)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

DOCTOR_TIMEOUT_S = 3.0
# A key typed through a framework may wait for the engine to start (dictionary load, D-Bus
# activation of the engine service): this long.
TYPING_TIMEOUT_S = 20.0
# What the probe types, and what must come back: romaji in, kana out.
PROBE_KEY = ord("a")
ESCAPE = 0xFF1B


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str
    fix: str = ""   # the one line that repairs a failed check


class CallFailed(Exception):
    """An error reply, with its D-Bus error name."""


async def call(bus, destination: str, path: str, interface: str, member: str, signature: str = "",
               body: list | None = None, timeout_s: float = DOCTOR_TIMEOUT_S) -> list:
    """The reply's body; CallFailed on an error reply, asyncio.TimeoutError when none comes."""
    from dbus_fast import Message, MessageType

    reply = await asyncio.wait_for(bus.call(Message(
        destination=destination, path=path, interface=interface, member=member, signature=signature,
        body=body or [])), timeout_s)
    if reply.message_type == MessageType.ERROR:
        raise CallFailed(reply.error_name + (f": {reply.body[0]}" if reply.body else ""))
    return list(reply.body)


def converted(preedit: str) -> bool:
    """The probe's key came back as Japanese text, not as the romaji typed."""
    return bool(preedit) and not any(ch.isascii() and ch.isalpha() for ch in preedit)


async def wait_until(predicate, timeout_s: float) -> bool:
    deadline = asyncio.get_running_loop().time() + timeout_s
    while not predicate():
        if asyncio.get_running_loop().time() > deadline:
            return False
        await asyncio.sleep(0.02)
    return True
