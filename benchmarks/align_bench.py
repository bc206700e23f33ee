#!/usr/bin/env python3
"""Alignment benchmark: what Space pays to align the lattice's candidates to dictionary words.

A fused Space weighs every candidate by its dictionary path cost, which the aligner finds
(karukan_engine/conversion/align.py). The candidates of one reading are the lattice's N-best,
which mostly share their beginnings. For each dev reading (karukan_engine/data/eval/
mozc_evaluation.tsv, 8–30 kana) this aligns its first --candidates lattice candidates two
ways, each with its own long-lived aligner as the engine keeps one (so each reading's index
starts cold, as after typing a new reading): one surface at a time (each its own search) and
all together (Aligner.align_many: one search over their shared prefixes). It checks that both
give the same alignments (exit status 1 if not) and reports thread CPU ms per reading, and the
prefix-trie nodes searched against the surfaces' characters.

    python benchmarks/align_bench.py [--readings 120] [--candidates 10] [--json align.json]
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

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from karukan_engine.conversion.align import Aligner, _PrefixTrie  # noqa: E402
from karukan_engine.core.types import ConversionRequest  # noqa: E402
from karukan_engine.dictionary.system import SystemDictionary  # noqa: E402
from karukan_engine.evaluation.metrics import load_items  # noqa: E402
from karukan_engine.lattice.converter import LatticeConverter  # noqa: E402

DEV_SET = ROOT / "karukan_engine" / "data" / "eval" / "mozc_evaluation.tsv"


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def timed(work) -> tuple[float, object]:
    started = time.thread_time()
    result = work()
    return (time.thread_time() - started) * 1000, result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--readings", type=int, default=120)
    parser.add_argument("--candidates", type=int, default=10)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    dictionary = SystemDictionary()
    lattice = LatticeConverter(dictionary)
    readings = [it.reading for it in load_items(DEV_SET) if 8 <= len(it.reading) <= 30][: args.readings]
    # one aligner per way, as the engine keeps one: each reading's index starts cold in both
    one_by_one, all_at_once = Aligner(dictionary), Aligner(dictionary)
    alone_ms, together_ms, nodes, chars, differ = [], [], 0, 0, 0
    for reading in readings:
        surfaces = [c.surface for c in lattice.candidates(ConversionRequest(reading), args.candidates)]
        ms, alone = timed(lambda: [one_by_one.align(reading, s) for s in surfaces])
        alone_ms.append(ms)
        ms, together = timed(lambda: all_at_once.align_many(reading, surfaces))
        together_ms.append(ms)
        differ += alone != together
        nodes += len(_PrefixTrie(surfaces).prefixes) - 1
        chars += sum(map(len, surfaces))
    rows = {name: {"mean_ms": round(statistics.mean(ms), 3), "p50_ms": round(statistics.median(ms), 3),
                   "p95_ms": round(percentile(ms, 0.95), 3)}
            for name, ms in (("one at a time", alone_ms), ("together", together_ms))}
    print(f"{len(readings)} readings, {args.candidates} candidates each; alignment CPU ms per reading")
    print(f"{'aligned':<14} {'mean':>7} {'p50':>7} {'p95':>7}")
    for name, r in rows.items():
        print(f"{name:<14} {r['mean_ms']:>7} {r['p50_ms']:>7} {r['p95_ms']:>7}")
    print(f"trie nodes {nodes} for {chars} surface characters; readings whose alignments differ: {differ}")
    if args.json:
        args.json.write_text(json.dumps({
            "benchmark": "align_bench", "readings": len(readings), "candidates": args.candidates,
            "results": rows, "trie_nodes": nodes, "surface_chars": chars, "differ": differ,
            "load": os.getloadavg(), "cpus": os.cpu_count(), "python": platform.python_version(),
        }, indent=2))
    return 1 if differ else 0


if __name__ == "__main__":
    raise SystemExit(main())
