#!/usr/bin/env python3
"""Start-up of the engine: a fresh process, from its first line to the first key answered, and
its peak RSS once every model and language model has loaded.

Each run is a new Python process that builds the engine service's core (ime_frontend.contexts:
build_core, as the service does), opens one input context and types `ka`; the time counts
imports too, as a user's first key after login pays them. Then it waits for the background
loads (model, n-grams) and reports the process's peak RSS.

    python benchmarks/startup_bench.py --runs 3 [--no-model] --json out.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# One run, in its own process: prints a JSON line {"first_key_ms", "max_rss_mb"}.
RUN = r"""
import time
start = time.perf_counter()
import asyncio, json, resource, sys
sys.path.insert(0, sys.argv[1])
from ime_frontend.contexts import build_core

async def main():
    core = build_core(use_model=sys.argv[2] == "model")
    host = core.new_context(asyncio.get_running_loop())
    for key in (ord("k"), ord("a")):
        await host.process_key(key, 0, False)
        await host.process_key(key, 0, True)
    first = (time.perf_counter() - start) * 1000
    if hasattr(core.converter, "wait_for_model"):
        core.converter.wait_for_model()
    lattice = getattr(core.converter, "base", core.converter)
    for handle in (getattr(getattr(lattice, "lm", None), "handle", None),
                   getattr(getattr(lattice, "word_lm", None), "handle", None)):
        if handle is not None:
            handle.settle()
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    core.close()
    print(json.dumps({"first_key_ms": first, "max_rss_mb": rss}))

asyncio.run(main())
"""


def one_run(use_model: bool) -> dict:
    with tempfile.TemporaryDirectory() as home:
        env = dict(os.environ, XDG_DATA_HOME=home, XDG_CONFIG_HOME=home)
        done = subprocess.run([sys.executable, "-c", RUN, str(ROOT), "model" if use_model else "dictionary"],
                              capture_output=True, text=True, env=env, timeout=300)
    if done.returncode != 0:
        raise SystemExit(f"start-up run failed: {done.stderr.strip().splitlines()[-1:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--no-model", action="store_true", help="dictionary and language models only")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    runs = [one_run(not args.no_model) for _ in range(args.runs)]
    first = [r["first_key_ms"] for r in runs]
    rss = [r["max_rss_mb"] for r in runs]
    print("converter   runs  first key ms (median / max)  peak RSS MB (max)")
    print(f"{'dictionary' if args.no_model else 'default':<10}  {len(runs):>4}  "
          f"{statistics.median(first):>12.0f} / {max(first):<8.0f}     {max(rss):>8.1f}")
    if args.json:
        args.json.write_text(json.dumps({"runs": runs, "model": not args.no_model,
                                         "machine": {"cpus": os.cpu_count(), "python": platform.python_version()}},
                                        indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
