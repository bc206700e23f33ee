"""A bounded D-Bus fuzz of the engine service on a bus with Debian's session-bus limits:
hypothesis draws method names, signatures and values (the real methods with hostile values, and
arbitrary ones), sends each batch pipelined, and every call must get a reply (a return or a D-Bus
error) while the service keeps running and typing for everyone else.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dbus_fast import Message, MessageType, Variant

from ime_frontend import wire
from ime_frontend.bus import MessageBus
from ime_frontend.flood import quiet_typist
from karukan_testing.headless import HeadlessDesktop
from ime_frontend.service import METHODS

LIVENESS_S = 60.0

TEXT = st.text(st.characters(blacklist_characters="\0", blacklist_categories=("Cs",)), max_size=80)
U32 = st.integers(0, 2**32 - 1)
SMALL_U32 = st.integers(0, 64) | U32
BASIC = {
    "y": st.integers(0, 255), "b": st.booleans(), "n": st.integers(-2**15, 2**15 - 1),
    "q": st.integers(0, 2**16 - 1), "i": st.integers(-2**31, 2**31 - 1), "u": U32,
    "x": st.integers(-2**63, 2**63 - 1), "t": st.integers(0, 2**64 - 1),
    "d": st.floats(allow_nan=True), "s": TEXT,
    "o": st.lists(st.text("abcXYZ_09", min_size=1, max_size=6), max_size=3).map(lambda p: "/" + "/".join(p)),
}


@st.composite
def typed(draw, depth: int = 0):
    """(signature, value) of one complete D-Bus type."""
    kinds = ["basic"] * 4 + (["array", "struct", "variant", "dict"] if depth < 2 else [])
    kind = draw(st.sampled_from(kinds))
    if kind == "basic":
        code = draw(st.sampled_from(sorted(BASIC)))
        return code, draw(BASIC[code])
    if kind == "array":
        code = draw(st.sampled_from(sorted(BASIC)))
        if code == "y":
            return "ay", draw(st.binary(max_size=8))   # dbus-fast carries `ay` as bytes
        return "a" + code, draw(st.lists(BASIC[code], max_size=4))
    if kind == "struct":
        items = draw(st.lists(typed(depth + 1), min_size=1, max_size=3))
        return "(" + "".join(s for s, _ in items) + ")", [v for _, v in items]
    if kind == "variant":
        sig, value = draw(typed(depth + 1))
        return "v", Variant(sig, value)
    key_code = draw(st.sampled_from(["s", "u", "i"]))
    keys = draw(st.lists(BASIC[key_code], max_size=3, unique=True))
    return "a{" + key_code + "v}", {k: Variant("u", 1) for k in keys}


def real_method_call(ids: list[int]):
    """One of the service's own methods, with in-range-looking but hostile values."""
    ctx = st.sampled_from(ids) | SMALL_U32 if ids else SMALL_U32
    by_code = {"u": SMALL_U32, "s": TEXT, "b": st.booleans()}

    @st.composite
    def build(draw):
        name = draw(st.sampled_from(sorted(METHODS)))
        spec = METHODS[name]
        body = []
        for i, code in enumerate(spec.in_sig):
            body.append(draw(ctx) if i == 0 and spec.arg_names[0] == "context" else draw(by_code[code]))
        return name, spec.in_sig, body

    return build()


@st.composite
def any_call(draw, ids: list[int]):
    choice = draw(st.sampled_from(["real", "real", "wrong-signature", "unknown"]))
    if choice == "real":
        return draw(real_method_call(ids))
    items = draw(st.lists(typed(), max_size=4))
    name = draw(st.sampled_from(sorted(METHODS))) if choice == "wrong-signature" else \
        draw(st.text("ABCDEFGHIJKLMNOPQRSTUVWXYZabcxyz", min_size=1, max_size=12))
    return name, "".join(s for s, _ in items), [v for _, v in items]


@pytest.fixture(scope="module")
def service_desktop():
    with HeadlessDesktop() as desktop:
        config = Path(desktop.env["XDG_CONFIG_HOME"]) / "karukan/config.toml"
        config.parent.mkdir(parents=True, exist_ok=True)
        config.write_text("[session]\nlive_conversion = false\n", encoding="utf-8")
        desktop.start_session_bus()
        service = desktop.start_service(["--no-model"])
        yield desktop, service
        desktop.stop(service)
        assert service.returncode == 0


async def _fire(address: str, calls) -> list[str]:
    bus = await MessageBus(bus_address=address).connect()
    try:
        messages = [Message(destination=wire.BUS_NAME, path=wire.OBJECT_PATH, interface=wire.INTERFACE,
                            member=name, signature=sig, body=body) for name, sig, body in calls]
        replies = await asyncio.wait_for(asyncio.gather(*(bus.call(m) for m in messages)), LIVENESS_S)
        return ["ok" if r.message_type == MessageType.METHOD_RETURN else r.error_name for r in replies]
    finally:
        bus.disconnect()


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                  HealthCheck.too_slow])
@given(data=st.data())
def test_every_fuzzed_call_gets_an_answer_and_the_service_keeps_typing(service_desktop, data):
    desktop, service = service_desktop
    address = desktop.session_address
    # Each batch opens a few contexts of its own (they die with its connection) and pipelines up
    # to 30 calls at them, at other contexts and at nothing.
    ids = data.draw(st.lists(st.integers(1, 400), max_size=4), label="context ids")
    calls = data.draw(st.lists(any_call(ids), min_size=1, max_size=30), label="calls")
    answers = asyncio.run(_fire(address, [("CreateContext", "s", ["fuzz"])] * 2 + calls))
    assert len(answers) == len(calls) + 2
    # Errors come from the service itself, never from the bus (NoReply, ServiceUnknown, ...).
    bus_errors = [a for a in answers if a.startswith("org.freedesktop.DBus.Error.") and
                  a.split(".")[-1] in ("NoReply", "ServiceUnknown", "NameHasNoOwner", "Disconnected")]
    assert bus_errors == [] and service.poll() is None, desktop.log_tail("engine-service")
    typed_ok = asyncio.run(asyncio.wait_for(quiet_typist(address, 2, pause_s=0), LIVENESS_S))
    assert typed_ok.failures == 0 and typed_ok.preedits_right
