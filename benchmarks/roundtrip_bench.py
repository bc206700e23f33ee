"""Key round trip through the real desktop frameworks: IBus (engine in-process or forwarding to
the engine service), fcitx5 (our C++ addon → engine service), and the engine service alone.

Each path runs headless on a private bus (see karukan_testing.headless). A "handled" key is a letter
typed into a composition (the engine answers with a new preedit; dictionary only, no model work);
a "pass-through" key is one the engine declines (Left with nothing composed). Concurrent: 16
applications typing at once, every key's latency pooled. "unexpected" counts keys that were
answered otherwise (a handled key passed through because the engine missed the frontend's timeout).

    python benchmarks/roundtrip_bench.py [--keys 400] [--json out.json] [--no-suggest] [--no-anticipate]
                                         [--pace-ms 100]

--no-suggest writes `[suggest] enabled = false` into the private HOME's config first (the
engines then find no completions), to compare the key round trip with and without them;
--no-anticipate likewise `[session] anticipate = false`. --pace-ms pauses after each key as a
person does (the processes then sleep between keys, as on a desktop; back to back they stay
warm and each key costs less).

With 16 clients it also records where the time went: the CPU seconds each daemon (and the bench,
which is the 16 applications) used during that phase, and the signals the applications received
per key, by name (a frontend that redraws more sends more of them).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path
from collections import Counter
from typing import Awaitable, Callable

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from karukan_testing.app_clients import FCITX_CAP_KEY_EVENT_ORDER_FIX, FCITX_CAPS, FcitxApp, IBusApp  # noqa: E402
from ime_frontend.client import EngineClient  # noqa: E402
from karukan_testing.headless import HeadlessDesktop  # noqa: E402
from ime_frontend.ibus.component import component_xml  # noqa: E402
from ime_frontend.install import install, python_command, user_layout  # noqa: E402

LETTERS = "kaminoyamatoumibe"
ESCAPE, LEFT = 0xFF1B, 0xFF51
CONCURRENT = 16
WARMUP = 20
COMPOSE = 8   # letters per composition before Escape clears it (keeps the preedit short)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, int(round(q * len(ordered) + 0.5)) - 1))]


def summary(ms: list[float]) -> dict:
    return {"n": len(ms), "p50_ms": round(statistics.median(ms), 3), "p95_ms": round(percentile(ms, 0.95), 3),
            "max_ms": round(max(ms), 3)}


Press = Callable[[int], Awaitable[bool]]


async def cancel(press: Press) -> None:
    """Drop the composition: one Escape, live conversion or not (as in Mozc)."""
    await press(ESCAPE)


PACE_S = 0.0   # --pace-ms: the pause after each key (0: back to back)


async def time_keys(press: Press, keys: int, handled: bool) -> tuple[list[float], int]:
    """Latencies of `keys` presses (letters into a composition, or declined keys) and how many
    answered otherwise than expected (a key passed through because the engine was too slow)."""
    out: list[float] = []
    unexpected = 0
    for i in range(keys + WARMUP):
        key = ord(LETTERS[i % len(LETTERS)]) if handled else LEFT
        start = time.perf_counter()
        result = await press(key)
        elapsed = (time.perf_counter() - start) * 1000
        if i >= WARMUP:
            out.append(elapsed)
            unexpected += result != handled
        if PACE_S:
            await asyncio.sleep(PACE_S)
        if handled and (i + 1) % COMPOSE == 0:
            await cancel(press)
    if handled:
        await cancel(press)   # leave nothing composed for the next measurement
    return out, unexpected


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of one process so far (0 once it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def desktop_processes(desktop: HeadlessDesktop) -> dict[str, int]:
    """The daemons the desktop started and their direct children (ibus-daemon starts the engine)."""
    named = {name: proc.pid for name, proc in desktop._procs if proc.poll() is None}
    parents = {pid: name for name, pid in named.items()}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            head, tail = stat.read_text().rsplit(")", 1)
        except OSError:
            continue
        ppid = int(tail.split()[1])
        if ppid in parents:
            named[f"{parents[ppid]}/{head.split('(', 1)[1]}"] = int(stat.parent.name)
    return named


class CpuMeter:
    """CPU seconds each process used between start() and stop(); "bench" is this process."""

    def __init__(self, desktop: HeadlessDesktop | None) -> None:
        self.desktop = desktop
        self.before: dict[str, float] = {}

    def _now(self) -> dict[str, float]:
        procs = desktop_processes(self.desktop) if self.desktop is not None else {}
        now = {name: cpu_seconds(pid) for name, pid in procs.items()}
        t = os.times()
        now["bench"] = t.user + t.system
        return now

    def start(self) -> None:
        self.before = self._now()

    def stop(self) -> dict[str, float]:
        return {name: round(after - self.before.get(name, 0.0), 3) for name, after in self._now().items()}


class SignalCounter:
    """Signals an application's bus connection receives for its own input context, by member."""

    def __init__(self, app) -> None:
        self.counts: Counter[str] = Counter()
        self.path = getattr(app, "path", None)   # the engine service's client has no context path
        own = getattr(app, "_on_message", None)   # the engine service's client has none
        if own is not None:
            app.bus.remove_message_handler(own)   # a handler that takes a message ends the chain
        app.bus.add_message_handler(self._count)
        if own is not None:
            app.bus.add_message_handler(own)

    def _count(self, msg) -> bool:
        if msg.message_type.name == "SIGNAL" and self.path in (None, msg.path):
            self.counts[msg.member] += 1
        return False   # the application's own handler still sees it


def measured(runs: list[tuple[list[float], int]]) -> dict:
    result = summary([ms for run, _ in runs for ms in run])
    result["unexpected_answers"] = sum(bad for _, bad in runs)
    return result


async def bench_app(make_app: Callable[[], Awaitable], keys: int, desktop: HeadlessDesktop | None = None) -> dict:
    app = await make_app()
    press = lambda k: app.key(k)  # noqa: E731
    result = {"handled": measured([await time_keys(press, keys, True)]),
              "pass_through": measured([await time_keys(press, keys, False)])}
    app.disconnect()
    apps = [await make_app() for _ in range(CONCURRENT)]
    counters = [SignalCounter(a) for a in apps]
    per_app = max(20, keys // 4)
    meter = CpuMeter(desktop)
    meter.start()
    runs = await asyncio.gather(*(time_keys(lambda k, a=a: a.key(k), per_app, True) for a in apps))
    cpu = meter.stop()
    concurrent = measured(runs)
    result[f"handled_{CONCURRENT}_clients"] = concurrent
    signals = sum((c.counts for c in counters), Counter())
    pressed = CONCURRENT * (per_app + WARMUP)   # letters typed in that phase (plus the Escapes)
    result[f"where_{CONCURRENT}_clients"] = {
        "cpu_s": cpu,
        "signals_per_letter": {name: round(n / pressed, 2) for name, n in sorted(signals.items())},
    }
    for a in apps:
        a.disconnect()
    return result


async def bench_service(address: str, keys: int, desktop: HeadlessDesktop) -> dict:
    async def make():
        client = await EngineClient.connect(address)
        ctx = await client.create_context("bench")
        await ctx.focus_in()
        ctx.key = lambda k: _view_handled(ctx, k)
        ctx.disconnect = client.disconnect
        ctx.bus = client.bus
        return ctx

    return await bench_app(make, keys, desktop)


async def _view_handled(ctx, keysym: int) -> bool:
    return (await ctx.process_key(keysym, 0, False)).handled


async def ibus_app(desktop: HeadlessDesktop) -> IBusApp:
    app = await IBusApp.connect(desktop.ibus_address)
    await app.set_engine("karukan")
    for _ in range(600):
        if await app.engine_name() == "karukan" and await app.tap(ord("a")):
            await app.tap(ESCAPE)
            return app
        await asyncio.sleep(0.05)
    raise RuntimeError("the IBus engine did not come up")


async def fcitx_app(desktop: HeadlessDesktop) -> FcitxApp:
    # Without KeyEventOrderFix fcitx5 answers "not handled" for declined keys instead of
    # forwarding them back, so both kinds of key are one plain round trip.
    app = await FcitxApp.connect(desktop.session_address, caps=FCITX_CAPS & ~FCITX_CAP_KEY_EVENT_ORDER_FIX)
    await app.set_im("karukan")
    # Until the engine answers a key (a first call that misses the addon's timeout on a busy
    # machine makes it pass keys through for 2 s, which would time pass-through keys instead).
    for _ in range(600):
        if await app.tap(ord("a")):
            await app.tap(ESCAPE)
            return app
        await asyncio.sleep(0.05)
    raise RuntimeError("the fcitx5 addon does not reach the engine service")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keys", type=int, default=400, help="timed key presses per measurement")
    parser.add_argument("--json", type=Path, default=None, help="write the results here")
    parser.add_argument("--paths", default="service,fcitx5,ibus-inprocess,ibus-service",
                        help="comma-separated subset of: service, fcitx5, ibus-inprocess, ibus-service")
    parser.add_argument("--no-suggest", action="store_true", help="measure with suggestions turned off")
    parser.add_argument("--no-anticipate", action="store_true",
                        help="measure without working out the next letter's readings between keys")
    parser.add_argument("--pace-ms", type=float, default=0.0,
                        help="pause after each key, as a person types (default 0: back to back)")
    args = parser.parse_args()
    global PACE_S
    PACE_S = args.pace_ms / 1000.0
    paths = set(args.paths.split(","))
    results: dict = {
        "keys": args.keys, "pace_ms": args.pace_ms, "machine": {"cpus": os.cpu_count(), "load_1min": os.getloadavg()[0],
                                       "python": platform.python_version()},
        "note": "dictionary only (--no-model): no model work per key; suggestions "
                + ("off" if args.no_suggest else "on") + "; anticipation " + ("off" if args.no_anticipate else "on"),
    }
    with HeadlessDesktop() as desktop:
        settings = (["[suggest]", "enabled = false"] if args.no_suggest else []) + (
            ["[session]", "anticipate = false"] if args.no_anticipate else [])
        if settings:
            config = Path(desktop.env["XDG_CONFIG_HOME"]) / "karukan" / "config.toml"
            config.parent.mkdir(parents=True, exist_ok=True)
            config.write_text("\n".join(settings) + "\n", encoding="utf-8")
        desktop.start_session_bus()
        old_env = dict(os.environ)
        os.environ.update(desktop.env)
        try:
            # Builds the fcitx5 addon into this HOME (when measuring fcitx5).
            install(user_layout(desktop.env), model=False, fcitx5="fcitx5" in paths)
        finally:
            os.environ.clear()
            os.environ.update(old_env)
        desktop.start_service(["--no-model"])
        if "service" in paths:
            results["service_direct"] = asyncio.run(bench_service(desktop.session_address, args.keys, desktop))
        if "fcitx5" in paths:
            desktop.start_fcitx5(["keyboard-us", "karukan"], ["dbus", "dbusfrontend", "keyboard", "karukan"])
            results["fcitx5_addon_to_service"] = asyncio.run(bench_app(lambda: fcitx_app(desktop), args.keys, desktop))

        with tempfile.TemporaryDirectory() as components:
            for backend in ("inprocess", "service"):
                if f"ibus-{backend}" not in paths:
                    continue
                comp_dir = Path(components) / backend
                comp_dir.mkdir()
                exec_line = " ".join(python_command("ime_frontend.ibus", "--ibus", "--no-model", "--backend", backend))
                (comp_dir / "karukan.xml").write_text(component_xml(exec_line))
                desktop.start_ibus([comp_dir])
                results[f"ibus_engine_{backend}"] = asyncio.run(bench_app(lambda: ibus_app(desktop), args.keys, desktop))
                ibus = next(p for n, p in desktop._procs if n == "ibus-daemon")
                desktop.stop(ibus)
        if any(m.get("unexpected_answers") for r in results.values() if isinstance(r, dict)
               for m in r.values() if isinstance(m, dict)):
            for name in ("engine-service", "fcitx5"):   # why keys were not handled
                print(f"--- {name} log:\n{desktop.log_tail(name, 15)}", file=sys.stderr)
    results["machine"]["load_1min_after"] = os.getloadavg()[0]
    print_table(results)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2, ensure_ascii=False) + "\n")
    return 0


def print_table(results: dict) -> None:
    print(f"{'path':26} {'measure':20} {'n':>5} {'p50 ms':>8} {'p95 ms':>8} {'max ms':>8} {'unexpected':>10}")
    for path, measures in results.items():
        if not isinstance(measures, dict) or "handled" not in measures:
            continue
        for name, s in measures.items():
            if name.startswith("where_"):
                continue
            print(f"{path:26} {name:20} {s['n']:5d} {s['p50_ms']:8.3f} {s['p95_ms']:8.3f} {s['max_ms']:8.3f}"
                  f" {s['unexpected_answers']:10d}")
    for path, measures in results.items():
        where = measures.get(f"where_{CONCURRENT}_clients") if isinstance(measures, dict) else None
        if where:
            cpu = ", ".join(f"{name} {sec:.2f}" for name, sec in where["cpu_s"].items() if sec >= 0.01)
            sigs = ", ".join(f"{name} {n}" for name, n in where["signals_per_letter"].items())
            print(f"# {path}, {CONCURRENT} clients: CPU s: {cpu}; signals per letter: {sigs}")
    m = results["machine"]
    print(f"# {m['cpus']} CPUs, load {m['load_1min']:.2f} → {m['load_1min_after']:.2f}; {results['note']}")


if __name__ == "__main__":
    sys.exit(main())
