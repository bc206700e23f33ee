"""A burst of asynchronous key events through the real ibus-daemon (what libibus sends when an
application's key events pile up): the in-process engine keeps running and answers every key.

Before ime_frontend.bus, 2,000-3,000 pipelined keys made the engine's socket to ibus-daemon
momentarily full; dbus-fast dropped the connection and the engine process died.
"""

from __future__ import annotations

import asyncio
import time

from e2e_support import engine_pids, run
from karukan_testing.app_clients import RELEASE_MASK
from ime_frontend.flood import percentile
from test_e2e_ibus import ready_app, type_text

from dbus_fast import Message, MessageType

KEY_A, ESCAPE = 0x61, 0xFF1B
# GDBus's name for G_IO_ERROR_TIMED_OUT (24), as ibus-daemon relays it.
DAEMON_TIMEOUT = "Code24"
PRESSES = 2500   # 5,000 ProcessKeyEvent calls in flight at once


def _key_call(app, keyval: int, release: bool) -> Message:
    return Message(destination="org.freedesktop.IBus", path=app.path, interface=app.IFACE,
                   member="ProcessKeyEvent", signature="uuu",
                   body=[keyval, 0, RELEASE_MASK if release else 0])


def test_thousands_of_pipelined_key_events_leave_the_engine_running(ibus_desktop):
    async def body():
        app = await ready_app(ibus_desktop)
        (pid,) = engine_pids(ibus_desktop, "ime_frontend.ibus")
        messages = []
        for i in range(PRESSES):
            keyval = ESCAPE if i % 16 == 15 else KEY_A
            messages += [_key_call(app, keyval, False), _key_call(app, keyval, True)]
        start = time.monotonic()
        replies = await asyncio.gather(*(app.bus.call(m) for m in messages), return_exceptions=True)
        seconds = time.monotonic() - start
        kinds = [type(r).__name__ if isinstance(r, BaseException)
                 else ("ok" if r.message_type == MessageType.METHOD_RETURN else r.error_name) for r in replies]
        counts = {k: kinds.count(k) for k in set(kinds)}
        # Every key got an answer and the engine kept its connection. (ibus-daemon answers a key
        # the engine has not answered within its own 15 s timeout with an error; on a loaded
        # machine the last of thousands may wait that long: that is the daemon's bound, not a loss.)
        assert all(k == "ok" or k.endswith(DAEMON_TIMEOUT) for k in kinds), counts
        assert engine_pids(ibus_desktop, "ime_frontend.ibus") == [pid]
        assert all(r.body[0] for r, k in zip(replies[::2], kinds[::2]) if k == "ok")
        # And it still types normally afterwards.
        await app.ic("Reset")
        latencies = []
        for _ in range(5):
            t = time.monotonic()
            await type_text(app, "a")
            latencies.append((time.monotonic() - t) * 1000)
        assert app.shown.preedit.endswith("ああああ")
        print(f"\nibus flood: {len(messages)} key events in {seconds:.1f} s ({counts}); "
              f"a key afterwards p50 {percentile(latencies, 0.5):.1f} ms")
        app.disconnect()

    run(body())


def test_the_engine_exits_non_zero_when_it_loses_ibus_daemon():
    """A lost connection is a failure, not a clean stop (a supervisor restarts on failure)."""
    import signal
    import sys

    from e2e_support import need
    from karukan_testing.headless import HeadlessDesktop, read_line

    need("ibus-daemon", "dbus-daemon")
    with HeadlessDesktop() as desktop:
        desktop.start_session_bus()
        address = desktop.start_ibus()
        (daemon,) = [p for name, p in desktop._procs if name == "ibus-daemon"]
        engine = desktop.spawn("engine", [sys.executable, "-m", "ime_frontend.ibus", "--no-model",
                                          "--address", address], stdout_pipe=True)
        assert read_line(engine.stdout, "ibus engine").strip() == "READY"

        async def flood_then_kill() -> None:
            from karukan_testing.app_clients import IBusApp

            app = await IBusApp.connect(address)
            for _ in range(100):   # the engine registered itself: wait until the daemon uses it
                try:
                    await app.set_engine("karukan")
                    if await app.engine_name() == "karukan":
                        break
                except Exception:
                    pass
                await asyncio.sleep(0.1)
            calls = [asyncio.ensure_future(app.bus.call(_key_call(app, KEY_A, i % 2 == 1))) for i in range(6000)]
            await asyncio.sleep(0.5)   # thousands of key events still waiting in the engine
            desktop.stop(daemon, signal.SIGKILL)
            await asyncio.gather(*calls, return_exceptions=True)
            app.disconnect()

        run(flood_then_kill())
        assert engine.wait(60) == 1, desktop.log_tail("engine")
        log = (desktop.logs / "engine.log").read_text(errors="replace")
        assert "lost the connection to ibus-daemon" in log
        # One line for the loss, not a traceback for every key still waiting (2 MB before).
        assert len(log) < 64 * 1024, log[-2000:]


LIBIBUS_FLOOD = r"""
import json, sys, time
import gi
gi.require_version("IBus", "1.0")
from gi.repository import Gio, GLib, IBus

presses = int(sys.argv[1])
IBus.init()
bus = IBus.Bus.new()
assert bus.is_connected(), "no ibus-daemon"
ic = bus.create_input_context("karukan-libibus-flood")
ic.set_capabilities(int(IBus.Capabilite.PREEDIT_TEXT | IBus.Capabilite.FOCUS))
ic.focus_in()
deadline = time.monotonic() + 60
while time.monotonic() < deadline:
    try:
        ic.set_engine("karukan")
        engine = ic.get_engine()
        if engine is not None and engine.get_name() == "karukan":
            break
    except GLib.Error:
        pass
    time.sleep(0.1)
loop = GLib.MainLoop()
out = {"ok": 0, "handled": 0, "errors": 0, "timeouts": 0, "first_error": ""}
left = [2 * presses]

def done(context, result, _data):
    try:
        out["handled"] += int(bool(context.process_key_event_async_finish(result)))
        out["ok"] += 1
    except GLib.Error as exc:
        if exc.matches(Gio.io_error_quark(), Gio.IOErrorEnum.TIMED_OUT) or "Timeout was reached" in exc.message:
            out["timeouts"] += 1   # ibus-daemon's own 15 s bound for an answer: not a lost engine
        else:
            out["errors"] += 1
            out["first_error"] = out["first_error"] or exc.message[:120]
    left[0] -= 1
    if left[0] == 0:
        loop.quit()

start = time.monotonic()
for i in range(presses):
    keyval = 0xFF1B if i % 16 == 15 else 0x61
    for state in (0, int(IBus.ModifierType.RELEASE_MASK)):
        ic.process_key_event_async(keyval, 0, state, 120000, None, done, None)
GLib.timeout_add_seconds(180, loop.quit)
loop.run()
out["seconds"] = round(time.monotonic() - start, 2)
out["left"] = left[0]
print(json.dumps(out))
"""


def test_a_libibus_client_sending_thousands_of_async_key_events(ibus_desktop):
    """The issue's probe with the real client library: libibus's process_key_event_async, as an
    application's IBus im module sends key events, 2,500 presses and releases without waiting."""
    import json
    import subprocess

    system_python = "/usr/bin/python3"
    probe = subprocess.run([system_python, "-c", "import gi; gi.require_version('IBus', '1.0')"], capture_output=True)
    if probe.returncode != 0:
        import pytest

        pytest.skip("python3-gi with the IBus typelib is not installed (dev.sh installs it)")
    before = engine_pids(ibus_desktop, "ime_frontend.ibus")
    done = subprocess.run([system_python, "-c", LIBIBUS_FLOOD, "2500"], env=ibus_desktop.env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    print(f"\nlibibus flood: {out}")
    assert out["left"] == 0 and out["errors"] == 0 and out["ok"] + out["timeouts"] == 5000, out
    pids = engine_pids(ibus_desktop, "ime_frontend.ibus")
    assert len(pids) == 1 and (not before or pids == before)
