"""`karukan doctor` under IBus: is Karukan the engine keys go to, does its process answer, and
does a key typed through ibus-daemon come back converted (issue 30 item 9)?

Files being installed and the daemon listing the engine are not enough: with Karukan's engine
process gone, ibus-daemon has "No engine is set" and every key reaches the application as
typed. The probe opens its own input context, as an application does, types `a` and expects
kana; it then drops the composition and closes the context (the user's application gets the
engine back on its next key).
"""

from __future__ import annotations

import asyncio

from ime_frontend.doctor_check import (DOCTOR_TIMEOUT_S, ESCAPE, PROBE_KEY, TYPING_TIMEOUT_S, CallFailed,
                                       Check, call, converted, wait_until)
from ime_frontend.ibus.component import COMPONENT_NAME, ENGINE_NAME
from ime_frontend.toolkit import IBUS_RELEASE_MASK

IBUS = "org.freedesktop.IBus"
IBUS_PATH = "/org/freedesktop/IBus"
IC_IFACE = "org.freedesktop.IBus.InputContext"
SELECT = f"run: ibus engine {ENGINE_NAME}"
# IBusCapabilite: preedit text and focus (the probe draws no lookup table).
PROBE_CAPS = (1 << 0) | (1 << 3)


async def ibus_usable_checks(address: str) -> list[Check]:
    from ime_frontend.bus import MessageBus

    try:
        bus = await asyncio.wait_for(MessageBus(bus_address=address).connect(), DOCTOR_TIMEOUT_S)
    except (OSError, asyncio.TimeoutError, ValueError) as exc:
        return [Check("ibus global engine", False, f"cannot connect to ibus-daemon ({type(exc).__name__})",
                      "run: ibus restart")]
    try:
        selected = await global_engine_check(bus)
        if not selected.ok:
            return [selected]
        process = await engine_process_check(bus)
        if not process.ok:
            return [selected, process]
        return [selected, process, await typing_check(bus)]
    finally:
        bus.disconnect()


async def global_engine_check(bus) -> Check:
    try:
        (desc,) = await call(bus, IBUS, IBUS_PATH, "org.freedesktop.DBus.Properties", "Get", "ss",
                             [IBUS, "GlobalEngine"])
        name = _engine_name(desc)
    except CallFailed:
        name = None          # "No engine is set": keys reach applications as typed
    except asyncio.TimeoutError:
        return Check("ibus global engine", False, "ibus-daemon does not answer", "run: ibus restart")
    if name == ENGINE_NAME:
        return Check("ibus global engine", True, f"'{ENGINE_NAME}' is selected")
    detail = ("no engine is set: keys reach applications as typed" if name is None
              else f"'{name}' is selected, not Karukan")
    return Check("ibus global engine", False, detail, SELECT + " (or switch to it with Super+Space)")


async def engine_process_check(bus) -> Check:
    """Karukan's engine runs in its own process, which owns the component name on IBus's bus."""
    name = "ibus engine process"
    try:
        (owned,) = await call(bus, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
                              "NameHasOwner", "s", [COMPONENT_NAME])
        if not owned:
            return Check(name, False, "not running", SELECT)
        await call(bus, COMPONENT_NAME, "/", "org.freedesktop.DBus.Peer", "Ping")
    except asyncio.TimeoutError:
        return Check(name, False, f"does not answer within {DOCTOR_TIMEOUT_S:.0f} s", "run: ibus restart")
    except CallFailed as exc:
        return Check(name, False, f"error {exc}", SELECT)
    return Check(name, True, "answers")


async def typing_check(bus) -> Check:
    """Type `a` into an input context of our own: kana must come back."""
    name = "typing through IBus"
    shown = {"preedit": ""}
    try:
        (path,) = await call(bus, IBUS, IBUS_PATH, IBUS, "CreateInputContext", "s", ["karukan-doctor"])
    except (CallFailed, asyncio.TimeoutError) as exc:
        return Check(name, False, f"no input context ({type(exc).__name__})", "run: ibus restart")

    def on_message(msg) -> None:
        if msg.path == path and msg.member in ("UpdatePreeditText", "UpdatePreeditTextWithMode"):
            from ime_frontend.ibus.gvariant import decode_text

            shown["preedit"] = decode_text(msg.body[0].value)[0] if msg.body[2] else ""
        elif msg.path == path and msg.member == "HidePreeditText":
            shown["preedit"] = ""

    bus.add_message_handler(on_message)

    async def ic(member: str, signature: str = "", body: list | None = None, timeout_s: float = DOCTOR_TIMEOUT_S):
        return await call(bus, IBUS, path, IC_IFACE, member, signature, body, timeout_s)

    async def karukan_attached() -> bool:
        try:
            (desc,) = await ic("GetEngine")
        except CallFailed:
            return False
        return _engine_name(desc) == ENGINE_NAME

    try:
        await ic("SetCapabilities", "u", [PROBE_CAPS])
        await ic("FocusIn")
        deadline = asyncio.get_running_loop().time() + TYPING_TIMEOUT_S
        while not await karukan_attached():
            if asyncio.get_running_loop().time() > deadline:
                return Check(name, False, "the input context never got Karukan's engine", SELECT)
            await asyncio.sleep(0.05)
        for release in (0, IBUS_RELEASE_MASK):
            await ic("ProcessKeyEvent", "uuu", [PROBE_KEY, 0, release], TYPING_TIMEOUT_S)
        await wait_until(lambda: converted(shown["preedit"]), DOCTOR_TIMEOUT_S)
        typed = shown["preedit"]
        for release in (0, IBUS_RELEASE_MASK):   # drop the composition: nothing is committed
            await ic("ProcessKeyEvent", "uuu", [ESCAPE, 0, release])
    except asyncio.TimeoutError:
        return Check(name, False, f"a key got no answer within {TYPING_TIMEOUT_S:.0f} s", "run: ibus restart")
    except CallFailed as exc:
        return Check(name, False, f"error {exc}", SELECT)
    finally:
        bus.remove_message_handler(on_message)
        await _close_context(bus, path)
    if converted(typed):
        return Check(name, True, f"a → {typed}")
    return Check(name, False, f"a → {typed or 'nothing'} (not converted)", SELECT)


def _engine_name(desc) -> str:
    """The name in a serialized IBusEngineDesc (a property's value comes wrapped twice)."""
    while hasattr(desc, "signature") and hasattr(desc, "value"):
        desc = desc.value
    return desc[2]


async def _close_context(bus, path: str) -> None:
    for interface, member in ((IC_IFACE, "FocusOut"), ("org.freedesktop.IBus.Service", "Destroy")):
        try:
            await call(bus, IBUS, path, interface, member)
        except (CallFailed, asyncio.TimeoutError):
            pass
