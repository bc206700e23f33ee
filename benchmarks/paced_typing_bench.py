#!/usr/bin/env python3
"""A key's round trip to the engine service while its model works between keys, at a typist's pace.

On a private session bus (karukan_testing.headless) the engine service runs as installed (the
bundled model unless --no-model); one client types the real-app benchmark's sentences
(gtk_latency.SENTENCES) letter by letter, each letter PACE ms after the previous reply, then
Space and Return after a pause, and times every letter's ProcessKey round trip. Work the
service does between keys (suggestions, the next letter's live text, Space prepared in a pause)
shares the interpreter and the cores with the next key: this is where it shows, without a
desktop's other processes. Rows by pace and by the letter's place in its word (the first letter
of a sentence follows a long pause).

    python benchmarks/paced_typing_bench.py [--paces 60,100,150] [--repeats 6] [--no-model] [--json out.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from ime_frontend.bus import MessageBus  # noqa: E402
from ime_frontend.client import EngineClient  # noqa: E402
from karukan_engine.session.keysyms import NAME_TO_KEYSYM  # noqa: E402
from karukan_testing.headless import HeadlessDesktop  # noqa: E402
from gtk_latency import SENTENCES  # noqa: E402
from roundtrip_bench import summary  # noqa: E402

SPACE, RETURN = NAME_TO_KEYSYM["space"], NAME_TO_KEYSYM["Return"]
SETTLE_S = 8.0            # the service loads its models on threads after READY
PAUSE_BEFORE_SPACE_S = 0.15
AFTER_SPACE_S = 0.4


async def typed(address: str, paces_s: list[float], repeats: int) -> dict[str, list[float]]:
    """Letter round trips (ms) per pace; the first letter of each sentence apart."""
    bus = await MessageBus(bus_address=address).connect()
    client = EngineClient(bus, auto_start=False)
    rows: dict[str, list[float]] = {}
    try:
        context = await client.create_context("paced-typing")
        for pace_s in paces_s:
            name = f"{pace_s * 1000:g} ms"
            first, rest = rows.setdefault(f"{name}, first letter", []), rows.setdefault(f"{name}, other letters", [])
            for _ in range(repeats):
                for sentence in SENTENCES:
                    for i, letter in enumerate(sentence):
                        started = time.perf_counter()
                        view = await context.process_key(ord(letter), 0, False)
                        (first if i == 0 else rest).append((time.perf_counter() - started) * 1000)
                        assert view.handled
                        await asyncio.sleep(pace_s)
                    await asyncio.sleep(PAUSE_BEFORE_SPACE_S)
                    await context.process_key(SPACE, 0, False)
                    await asyncio.sleep(AFTER_SPACE_S)
                    await context.process_key(RETURN, 0, False)
                    await asyncio.sleep(AFTER_SPACE_S)
    finally:
        bus.disconnect()
    return rows


def run(paces_ms: list[float], repeats: int, use_model: bool) -> dict:
    with HeadlessDesktop() as desktop:
        address = desktop.start_session_bus()
        desktop.start_service([] if use_model else ["--no-model"])
        time.sleep(SETTLE_S)
        rows = asyncio.run(typed(address, [p / 1000 for p in paces_ms], repeats))
    return {name: summary(ms) for name, ms in rows.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--paces", default="60,100,150", help="ms from a reply to the next letter (comma-separated)")
    parser.add_argument("--repeats", type=int, default=6, help="times the three sentences are typed per pace")
    parser.add_argument("--no-model", action="store_true", help="the service without the model")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    paces = [float(p) for p in args.paces.split(",")]
    results = run(paces, args.repeats, not args.no_model)
    print(f"{'pace, letters':28} {'n':>5} {'p50 ms':>8} {'p95 ms':>8} {'max ms':>8}")
    for name, row in results.items():
        print(f"{name:28} {row['n']:5d} {row['p50_ms']:8.3f} {row['p95_ms']:8.3f} {row['max_ms']:8.3f}")
    if args.json:
        args.json.write_text(json.dumps({"paces_ms": paces, "repeats": args.repeats, "model": not args.no_model,
                                         "results": results,
                                         "machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                                                     "load": os.getloadavg()}}, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
