"""A burst of asynchronous key events through the real ibus-daemon (what libibus sends when an
application's key events pile up): the in-process engine keeps running and answers every key.

Before ime_frontend.bus, 2,000-3,000 pipelined keys made the engine's socket to ibus-daemon
momentarily full; dbus-fast dropped the connection and the engine process died.
"""

from __future__ import annotations

import asyncio
import time

from e2e_support import engine_pids, run
from ime_frontend.app_clients import RELEASE_MASK
from ime_frontend.flood import percentile
from test_e2e_ibus import ready_app, type_text

from dbus_fast import Message, MessageType

KEY_A, ESCAPE = 0x61, 0xFF1B
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
        # The engine answered every key itself: no error, no daemon timeout, no lost connection.
        assert kinds == ["ok"] * len(messages), {k: kinds.count(k) for k in set(kinds)}
        handled = [r.body[0] for r in replies[::2]]
        assert all(handled)
        assert engine_pids(ibus_desktop, "ime_frontend.ibus") == [pid]
        # And it still types normally afterwards.
        await app.ic("Reset")
        latencies = []
        for _ in range(5):
            t = time.monotonic()
            await type_text(app, "a")
            latencies.append((time.monotonic() - t) * 1000)
        assert app.shown.preedit.endswith("ああああ")
        print(f"\nibus flood: {len(messages)} key events in {seconds:.1f} s; "
              f"a key afterwards p50 {percentile(latencies, 0.5):.1f} ms")
        app.disconnect()

    run(body())


def test_the_engine_exits_non_zero_when_it_loses_ibus_daemon():
    """A lost connection is a failure, not a clean stop (a supervisor restarts on failure)."""
    import signal
    import sys

    from e2e_support import need
    from ime_frontend.headless import HeadlessDesktop, read_line

    need("ibus-daemon", "dbus-daemon")
    with HeadlessDesktop() as desktop:
        desktop.start_session_bus()
        address = desktop.start_ibus()
        (daemon,) = [p for name, p in desktop._procs if name == "ibus-daemon"]
        engine = desktop.spawn("engine", [sys.executable, "-m", "ime_frontend.ibus", "--no-model",
                                          "--address", address], stdout_pipe=True)
        assert read_line(engine.stdout, "ibus engine").strip() == "READY"

        async def flood_then_kill() -> None:
            from ime_frontend.app_clients import IBusApp

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
