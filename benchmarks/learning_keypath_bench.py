#!/usr/bin/env python3
"""The first key after a word is learned: does learning put work on the key path?

Through the engine service's own pieces (ime_frontend.contexts: EngineCore, ContextHost with the
live service attached, the fair executor), in process, with the default fused converter and the
bundled model (`--no-model`: the dictionary only). Each round opens a fresh context, types a word
plus one extra vowel, BackSpace, Return (the word is committed and learned), waits `--pause`
seconds (the user reading what was committed; the learning save falls due about 1 s after the
commit), then times the next keys: the first one is the key of issue 30 item 6. The learning
history is a fresh temporary one (XDG_DATA_HOME points into a temporary folder).

    python benchmarks/learning_keypath_bench.py [--rounds 4] [--pause 0.9] [--no-model] [--json out.json]

Rows: the key after the commit (the first with a left context: the committed word), the keys
after it, and a baseline of the same keys typed in a new context (no left context, nothing
learned); p50 / p95 / max ms of key → view (ContextHost.process_key).
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

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

# Words to learn, one per round (romaji; the last vowel is doubled and taken back by BackSpace).
WORDS = ["toukyouu", "kyoutoo", "oosakaa", "sapporoo", "yokohamaa", "nagoyaa", "fukuokaa", "sendaii"]
AFTER = "atarashii"   # typed after the pause: its first key is the one timed as "first key"


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def type_keys(host, keys: str) -> list[float]:
    from karukan_engine.session.keys_cli import parse_keys

    times = []
    for _label, keysym, mods in parse_keys(keys):
        start = time.perf_counter()
        await host.process_key(keysym, mods, False)
        times.append((time.perf_counter() - start) * 1000)
        await host.process_key(keysym, mods, True)
        await asyncio.sleep(0.12)   # paced, as a person types
    return times


async def rounds(core, count: int, pause: float) -> dict[str, list[float]]:
    loop = asyncio.get_running_loop()
    out: dict[str, list[float]] = {"first key after learning": [], "later keys after learning": [],
                                   "first key, nothing learned": [], "later keys, nothing learned": []}
    for i in range(count):
        word = WORDS[i % len(WORDS)]
        host = core.new_context(loop)
        await host.focus_in()
        await type_keys(host, f"{word}<BackSpace><Return>")
        await asyncio.sleep(pause)
        times = await type_keys(host, AFTER)
        out["first key after learning"].append(times[0])
        out["later keys after learning"].extend(times[1:])
        await type_keys(host, "<Escape>")
        host.detach()
        # The same keys where the last commit was learned long ago (no save pending).
        host = core.new_context(loop)
        await host.focus_in()
        await asyncio.sleep(pause)
        times = await type_keys(host, AFTER)
        out["first key, nothing learned"].append(times[0])
        out["later keys, nothing learned"].extend(times[1:])
        await type_keys(host, "<Escape>")
        host.detach()
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--pause", type=float, default=0.9, help="seconds between the commit and the next key")
    parser.add_argument("--no-model", action="store_true")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        os.environ["XDG_DATA_HOME"] = tmp   # a fresh learning history, never the user's
        os.environ["XDG_CONFIG_HOME"] = tmp
        from ime_frontend.contexts import build_core
        from karukan_engine.lm.bundled import shared_ngram

        core = build_core(use_model=not args.no_model)   # as the service builds it: loads on threads
        if hasattr(core.converter, "wait_for_model"):
            core.converter.wait_for_model()
        shared_ngram().settle()
        time.sleep(1.0)   # the service's start-up work on threads ends (warm-ups), as before a user types
        try:
            found = asyncio.run(rounds(core, args.rounds, args.pause))
        finally:
            core.close()
    rows = []
    print(f"{'keys':30} {'n':>4} {'p50_ms':>8} {'p95_ms':>8} {'max_ms':>8}")
    for name, values in found.items():
        row = {"keys": name, "n": len(values), "p50_ms": round(statistics.median(values), 2),
               "p95_ms": round(percentile(values, 0.95), 2), "max_ms": round(max(values), 2)}
        rows.append(row)
        print(f"{name:30} {row['n']:4d} {row['p50_ms']:8.2f} {row['p95_ms']:8.2f} {row['max_ms']:8.2f}")
    first = [round(v, 2) for v in found["first key after learning"]]
    print(f"first key after learning, each round: {first}")
    print(f"# load {os.getloadavg()[0]:.2f}, {os.cpu_count()} CPUs, model: {not args.no_model}")
    if args.json:
        args.json.write_text(json.dumps({
            "rounds": args.rounds, "pause_s": args.pause, "model": not args.no_model, "rows": rows,
            "first_key_after_learning_ms": first,
            "machine": {"cpus": os.cpu_count(), "load_1min": os.getloadavg()[0], "python": platform.python_version()},
        }, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
