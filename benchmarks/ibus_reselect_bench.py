"""Karukan selected again right after its IBus engine process got SIGTERM (issue 30 item 5).

Each round: select Karukan, wait for its engine process, send it SIGTERM, and the moment
ibus-daemon reports the component's bus name gone run `ibus engine karukan`. Reported per round:
SIGTERM → name gone and → process ended (ms; between the two the daemon takes a re-selection
as "already starting"), how long the re-selection took (s), whether it timed out and whether
Karukan is the engine afterwards. `--engine-root DIR` runs the engine from another checkout (e.g. an older
commit exported with `git archive`) to measure the same rounds before a fix.

    python benchmarks/ibus_reselect_bench.py [--rounds 5] [--engine-root DIR] [--json out.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from dbus_fast import Message  # noqa: E402

from ime_frontend.bus import MessageBus  # noqa: E402
from ime_frontend.ibus.component import COMPONENT_NAME, component_xml  # noqa: E402
from karukan_testing.headless import HeadlessDesktop  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def ibus(desktop: HeadlessDesktop, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["ibus", *args], env=desktop.env, capture_output=True, text=True, timeout=120)


def engine_pid(desktop: HeadlessDesktop) -> int | None:
    ours = {p.pid for _n, p in desktop._procs}
    for entry in Path("/proc").iterdir():
        try:
            if (entry.name.isdigit() and b"ime_frontend.ibus" in (entry / "cmdline").read_bytes()
                    and os.getpgid(int(entry.name)) in ours and _state(int(entry.name)) not in ("Z", None)):
                return int(entry.name)
        except (OSError, ProcessLookupError):
            continue
    return None


def _state(pid: int) -> str | None:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return None


async def owned(bus: MessageBus) -> bool:
    reply = await bus.call(Message(destination="org.freedesktop.DBus", path="/org/freedesktop/DBus",
                                   interface="org.freedesktop.DBus", member="NameHasOwner", signature="s",
                                   body=[COMPONENT_NAME]))
    return bool(reply.body[0])


async def rounds(desktop: HeadlessDesktop, count: int) -> list[dict]:
    bus = await MessageBus(bus_address=desktop.ibus_address).connect()
    rows = []
    for _ in range(count):
        deadline = time.monotonic() + 120
        while not (engine_pid(desktop) and await owned(bus)):
            if time.monotonic() > deadline:
                raise RuntimeError("the engine never started")
            ibus(desktop, "engine", "karukan")
            await asyncio.sleep(0.2)
        await asyncio.sleep(1.0)   # settled: the converter is built
        pid = engine_pid(desktop)
        killed = time.monotonic()
        os.kill(pid, signal.SIGTERM)
        ended = asyncio.ensure_future(_ended(pid))
        while await owned(bus):
            await asyncio.sleep(0.001)
        released = time.monotonic()
        proc = await asyncio.create_subprocess_exec("ibus", "engine", "karukan", env=desktop.env,
                                                    stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE)
        _out, err = await proc.communicate()
        took = time.monotonic() - released
        end = await ended
        rows.append({"name_gone_ms": round((released - killed) * 1000, 1),
                     "process_ended_ms": round((end - killed) * 1000, 1),
                     "reselect_s": round(took, 3), "timeout": b"Timeout was reached" in err,
                     "karukan_after": ibus(desktop, "engine").stdout.strip() == "karukan"})
    bus.disconnect()
    return rows


async def _ended(pid: int) -> float:
    while _state(pid) not in ("Z", None):
        await asyncio.sleep(0.001)
    return time.monotonic()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--engine-root", type=Path, default=ROOT)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    with HeadlessDesktop() as desktop:
        desktop.start_session_bus()
        components = desktop.root / "components"
        components.mkdir()
        exec_line = (f"/usr/bin/env PYTHONPATH={args.engine_root.resolve()} {sys.executable} -P -m ime_frontend.ibus "
                     "--ibus --no-model")
        (components / "karukan.xml").write_text(component_xml(exec_line))
        desktop.start_ibus([components])
        rows = asyncio.run(rounds(desktop, args.rounds))
    print(f"{'round':>5} {'name gone ms':>13} {'process ended ms':>17} {'re-select s':>12} {'timeout':>8} "
          f"{'karukan after':>14}")
    for i, row in enumerate(rows):
        print(f"{i:>5} {row['name_gone_ms']:>13.1f} {row['process_ended_ms']:>17.1f} {row['reselect_s']:>12.3f} "
              f"{str(row['timeout']):>8} {str(row['karukan_after']):>14}")
    if args.json:
        args.json.write_text(json.dumps({"cpus": os.cpu_count(), "engine_root": "old" if args.engine_root != ROOT
                                         else "this", "rows": rows}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
