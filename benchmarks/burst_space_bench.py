#!/usr/bin/env python3
"""Space right after a burst of keys, in process: the session's own time for that Space.

The default converter (dictionary + bundled model) with a LiveService attached as the engine
runs it: work the session defers starts on timers as the context host starts it, late updates
are applied between keys on the typing thread, and the interpreter switches threads as the
engine service sets it. Each burst types a sentence's romaji with GAP ms between a key's answer
and the next key (about what an application's round trip leaves), then Space SPACE_AFTER ms
after the last key; the Space is timed, then Return commits. Rows: typing (the burst's keys) and
Space, p50 / p95 / max ms. Nothing here needs the network; the learning history is a fresh
temporary one.

    python benchmarks/burst_space_bench.py [--rounds 3] [--gap-ms 3] [--space-after-ms 8]
                                           [--no-warm] [--json out.json]

--no-warm turns off the warm-up of Space's first answer after each key (LiveLink.warm_space).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from private_user_data import private_user_data  # noqa: E402
from session_bench import LiveAttached, fused_converter, percentile  # noqa: E402

from ime_frontend.contexts import favour_waiting_threads  # noqa: E402
from karukan_engine.config import Config  # noqa: E402
from karukan_engine.live.live_service import LiveLink  # noqa: E402
from karukan_engine.session.keys_cli import parse_keys  # noqa: E402

# Typed without a pause, Space right after the last key (35-53 keys each).
BURSTS = [
    "kyouhaiitenkidesuneashitahaamegafurusoudesu",
    "kaiginosiryouwookurimasuatarashiipasokonnwokaimashita",
    "konnshuunoyoteiwokakuninnshitekudasai",
    "toukyouekimademachiawasewoshimashou",
    "shinkansennnokippuwoyoyakushimashita",
]
WARM_UP = "watashinonamaehanakanodesu"


class WithoutWarmUp(LiveLink):
    """A link that asks for no warm-up of Space's first answer (--no-warm)."""

    def warm_space(self, epoch, request) -> None:
        return None


def attached(converter, warm: bool) -> LiveAttached:
    """The default session as the engine runs it, late updates checked every 0.5 ms (a burst's
    keys come 3 ms apart)."""
    return LiveAttached(converter, Config(), LiveLink if warm else WithoutWarmUp, poll_s=0.0005)


def press(engine: LiveAttached, label: str) -> float:
    """One key by its parse_keys label; ms the session took."""
    (_, keysym, mods), = parse_keys(label)
    return engine.key(keysym, mods)


def wait(engine: LiveAttached, seconds: float) -> None:
    engine.wait_until(time.perf_counter() + seconds)


def measure(engine: LiveAttached, rounds: int, gap_s: float, space_after_s: float) -> dict[str, list[float]]:
    for label in [c for c in WARM_UP] + ["<space>", "<Return>"]:
        press(engine, label)
        wait(engine, 0.1)
    times: dict[str, list[float]] = {"typing": [], "space": []}
    for _ in range(rounds):
        for burst in BURSTS:
            for letter in burst:
                times["typing"].append(press(engine, letter))
                wait(engine, gap_s)
            wait(engine, space_after_s)
            times["space"].append(press(engine, "<space>"))
            wait(engine, 0.3)
            press(engine, "<Return>")
            wait(engine, 0.3)
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3, help="passes over the bursts (default 3)")
    parser.add_argument("--gap-ms", type=float, default=3.0, help="between a key's answer and the next key")
    parser.add_argument("--space-after-ms", type=float, default=8.0, help="between the last key and Space")
    parser.add_argument("--no-warm", action="store_true", help="without the warm-up after each key")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    favour_waiting_threads()
    with private_user_data():
        converter = fused_converter()
        if converter is None:
            return 1
        engine = attached(converter, warm=not args.no_warm)
        try:
            times = measure(engine, args.rounds, args.gap_ms / 1000, args.space_after_ms / 1000)
        finally:
            engine.service.shutdown()
    rows = [{"kind": kind, "count": len(values), "p50_ms": round(statistics.median(values), 3),
             "p95_ms": round(percentile(values, 0.95), 3), "max_ms": round(max(values), 3)}
            for kind, values in times.items()]
    print(f"{'kind':<8}{'count':>7}{'p50 ms':>10}{'p95 ms':>10}{'max ms':>10}")
    for r in rows:
        print(f"{r['kind']:<8}{r['count']:>7}{r['p50_ms']:>10.3f}{r['p95_ms']:>10.3f}{r['max_ms']:>10.3f}")
    if args.json:
        info = {"python": platform.python_version(), "cpus": os.cpu_count(), "load_avg": os.getloadavg(),
                "rounds": args.rounds, "gap_ms": args.gap_ms, "space_after_ms": args.space_after_ms,
                "warm": not args.no_warm}
        args.json.write_text(json.dumps({"info": info, "rows": rows}, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
