"""Floods of pipelined calls against the engine service (dictionary only) on a private bus with
Debian's session-bus limits, while a quiet client types one key at a time.

For each scenario: calls sent, calls answered (a return or a D-Bus error), the flood's wall time,
the quiet client's key latency (p50 / p95 / max) and whether the service is still running.
`--service-root DIR` runs the service from another checkout (e.g. an older commit exported with
`git archive`) to measure the same floods before a fix.

    python benchmarks/flood_bench.py [--service-root DIR] [--json out.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from ime_frontend.flood import FloodResult, QuietResult, info_flood, key_flood, percentile, quiet_typist  # noqa: E402
from karukan_testing.headless import HeadlessDesktop, read_line  # noqa: E402

SCENARIOS = {
    "2,000 GetInfo, 1 client": lambda a: [info_flood(a, 2000)],
    "40,000 GetInfo, 4 clients": lambda a: [info_flood(a, 10000) for _ in range(4)],
    "50,000 GetInfo, 4 clients": lambda a: [info_flood(a, 12500) for _ in range(4)],
    "20,000 GetInfo + 1,024 keys, 12 clients": lambda a: ([info_flood(a, 5000) for _ in range(4)]
                                                          + [key_flood(a, 16, 8) for _ in range(8)]),
    "20,000 ProcessKey, 1 client x 16 contexts": lambda a: [key_flood(a, 16, 1250)],
    "4,096 ProcessKey, 16 clients x 16 contexts": lambda a: [key_flood(a, 16, 16) for _ in range(16)],
}
QUIET_KEYS = 20
LIMIT_S = 300.0


def start_service(desktop: HeadlessDesktop, root: Path | None):
    if root is None:
        return desktop.start_service(["--no-model"])
    # (not -m: that would put the current directory, this checkout, first on the path)
    code = f"import sys; sys.path.insert(0, {str(root)!r}); from ime_frontend.service import main; sys.exit(main())"
    env = dict(desktop.env, PYTHONPATH=str(root))
    proc = desktop.spawn("engine-service", [sys.executable, "-c", code, "--no-model"], env=env, stdout_pipe=True)
    line = read_line(proc.stdout, "engine service")
    if line.strip() != "READY":
        raise RuntimeError(f"engine service said {line!r}")
    return proc


QUIET_CODE = (
    "import asyncio, json, sys; sys.path.insert(0, sys.argv[1]); from ime_frontend.flood import quiet_typist; "
    "r = asyncio.run(quiet_typist(sys.argv[2], int(sys.argv[3]))); "
    "print(json.dumps([r.latencies_ms, r.failures, r.preedits_right]))"
)


async def quiet_elsewhere(address: str, keys: int) -> QuietResult:
    """The quiet typist in a process of its own, as an application is: in the floods' process
    it would wait for its own event loop, busy sending and reading their calls."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", QUIET_CODE, str(ROOT), address, str(keys), stdout=asyncio.subprocess.PIPE)
    out, _ = await proc.communicate()
    if proc.returncode != 0:
        raise RuntimeError(f"the quiet typist exited {proc.returncode}")
    latencies, failures, right = json.loads(out)
    return QuietResult(latencies, failures, right)


async def scenario(address: str, floods, quiet_in_process: bool) -> tuple[FloodResult, object]:
    tasks = [asyncio.ensure_future(f) for f in floods]
    quiet = asyncio.ensure_future(quiet_typist(address, QUIET_KEYS) if quiet_in_process
                                  else quiet_elsewhere(address, QUIET_KEYS))
    done, pending = await asyncio.wait([*tasks, quiet], timeout=LIMIT_S)
    for task in pending:
        task.cancel()
    total = FloodResult()
    for task in tasks:
        if task in done and task.exception() is None:
            total = total.merge(task.result())
    q = quiet.result() if quiet in done and quiet.exception() is None else None
    return total, q


def run_once(name: str, make, root: Path | None, quiet_in_process: bool = False) -> dict:
    with HeadlessDesktop() as desktop:
        config = Path(desktop.env["XDG_CONFIG_HOME"]) / "karukan/config.toml"
        config.parent.mkdir(parents=True, exist_ok=True)
        config.write_text("[session]\nlive_conversion = false\n", encoding="utf-8")
        address = desktop.start_session_bus()
        service = start_service(desktop, root)
        start = time.monotonic()
        total, quiet = asyncio.run(scenario(address, make(address), quiet_in_process))
        seconds = time.monotonic() - start
        time.sleep(0.5)
        alive = service.poll() is None
        return {"scenario": name, "calls": total.sent, "answered": total.answered,
                "ok": total.outcomes.get("ok", 0), "seconds": round(seconds, 2),
                "quiet_ms": quiet.latencies_ms if quiet is not None else [],
                "service_running": alive, "exit_status": None if alive else service.returncode}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--service-root", type=Path, default=None)
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--rounds", type=int, default=3, help="runs of each scenario, each on a fresh bus")
    parser.add_argument("--scenario", default="", help="only the scenarios whose name holds this text")
    parser.add_argument("--quiet-in-process", action="store_true",
                        help="the quiet typist on the floods' event loop (how figures before 2026-12-03 were taken)")
    args = parser.parse_args()
    rows = []
    print(f"{'scenario':44s} {'rounds up':>9s} {'calls':>7s} {'ok':>7s} {'s (max)':>8s} | quiet key ms p50 / p95 / max")
    for name, make in SCENARIOS.items():
        if args.scenario not in name:
            continue
        runs = [run_once(name, make, args.service_root, args.quiet_in_process) for _ in range(args.rounds)]
        lat = [ms for r in runs for ms in r["quiet_ms"]]
        row = {"scenario": name, "rounds": len(runs), "survived": sum(r["service_running"] for r in runs),
               "exit_statuses": [r["exit_status"] for r in runs if not r["service_running"]],
               "calls": sum(r["calls"] for r in runs), "ok": sum(r["ok"] for r in runs),
               "seconds_max": max(r["seconds"] for r in runs), "quiet_keys": len(lat),
               "quiet_p50_ms": round(percentile(lat, 0.5), 1), "quiet_p95_ms": round(percentile(lat, 0.95), 1),
               "quiet_max_ms": round(max(lat), 1) if lat else None}
        rows.append(row)
        print(f"{name:44s} {row['survived']:>4d} / {row['rounds']:<2d} {row['calls']:7d} {row['ok']:7d} "
              f"{row['seconds_max']:8.1f} | {row['quiet_p50_ms']} / {row['quiet_p95_ms']} / {row['quiet_max_ms']}"
              + (f"  exits {row['exit_statuses']}" if row["exit_statuses"] else ""), flush=True)
    if args.json:
        args.json.write_text(json.dumps({"cpus": os.cpu_count(), "rows": rows}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
