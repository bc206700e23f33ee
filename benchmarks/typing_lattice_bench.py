#!/usr/bin/env python3
"""Live conversion per typed kana, with the incremental lattice and without.

Each reading is typed kana by kana: the dictionary converter (what `--no-model` converts with:
the lattice, the word and character n-grams) gives the live text of every prefix, as the
session asks on each key. With `incremental` on (the default) a prefix is analysed from the
previous one (LatticeBuilder.extend, the forward costs and predecessor lists of the search, the
word n-gram's terms); off, from scratch. The two alternate reading by reading in one process, so
both see the same machine; this process's CPU time is timed (fairer than wall-clock when other
work loads the machine). Readings: the first --readings of Mozc's evaluation set with at least
10 kana. Nothing here needs the network or the user's data (a fresh learning history).

    python benchmarks/typing_lattice_bench.py [--readings 60] [--repeats 3] [--compare topic] [--json OUT]

--compare topic alternates the shipped converter with the same without the topic vectors'
term (WordLmWeights.topic = 0; lattice/topic_paths.py) instead of incremental / full.

Rows: mode, prefix length bucket, keys, mean / p50 / p95 ms.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from private_user_data import private_user_data  # noqa: E402
from session_bench import percentile  # noqa: E402

from karukan_engine.core.types import ConversionRequest  # noqa: E402
from karukan_engine.evaluation.metrics import load_items  # noqa: E402

EVAL = REPO / "karukan_engine" / "data" / "eval" / "mozc_evaluation.tsv"
BUCKETS = ((1, 5), (6, 10), (11, 20), (21, 40), (41, 10_000))


def readings(count: int) -> list[str]:
    return [item.reading for item in load_items(EVAL) if len(item.reading) >= 10][:count]


def type_reading(converter, reading: str) -> list[tuple[int, float]]:
    """(prefix length, CPU ms) of each key's live conversion."""
    converter.clear_cache()
    out = []
    for i in range(1, len(reading) + 1):
        start = time.process_time()
        converter.live(ConversionRequest(reading[:i]))
        out.append((i, (time.process_time() - start) * 1000))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--readings", type=int, default=60)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--compare", choices=("incremental", "topic"), default="incremental")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    with private_user_data():
        from karukan_engine.conversion.factory import ConverterOptions, build_converter

        converter = build_converter(ConverterOptions(use_model=False))
        texts = readings(args.readings)
        modes = {"incremental": ("incremental", "full"), "topic": ("topic", "no topic")}[args.compare]
        shipped = converter.word_weights
        times: dict[tuple[str, int], list[float]] = {}
        same = True
        for text in texts[:3]:   # warm-up: lazy tables, the n-grams' first lookups
            type_reading(converter, text)
        for _ in range(args.repeats):
            for text in texts:
                shown = {}
                for mode in modes:
                    converter.incremental = mode != "full"
                    converter.word_weights = shipped if mode != "no topic" else replace(shipped, topic=0.0)
                    for length, ms in type_reading(converter, text):
                        bucket = next(k for k, (lo, hi) in enumerate(BUCKETS) if lo <= length <= hi)
                        times.setdefault((mode, bucket), []).append(ms)
                        times.setdefault((mode, -1), []).append(ms)
                    shown[mode] = converter.live(ConversionRequest(text))
                same = same and (args.compare == "topic" or shown["incremental"] == shown["full"])
        converter.incremental, converter.word_weights = True, shipped
    rows = []
    for (mode, bucket), values in sorted(times.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        label = "all" if bucket < 0 else "%d-%s" % (BUCKETS[bucket][0], BUCKETS[bucket][1] if bucket < len(BUCKETS) - 1 else "")
        rows.append({"mode": mode, "length": label, "keys": len(values), "mean_ms": round(statistics.mean(values), 3),
                     "p50_ms": round(statistics.median(values), 3), "p95_ms": round(percentile(values, 0.95), 3)})
    print(f"{'mode':<13}{'kana':<8}{'keys':>6}{'mean ms':>10}{'p50 ms':>10}{'p95 ms':>10}")
    for r in rows:
        print(f"{r['mode']:<13}{r['length']:<8}{r['keys']:>6}{r['mean_ms']:>10.3f}{r['p50_ms']:>10.3f}{r['p95_ms']:>10.3f}")
    if args.compare == "incremental":
        print("same final live text in both modes:", same)
    if args.json:
        info = {"python": platform.python_version(), "machine": platform.machine(), "cpus": os.cpu_count(),
                "load_avg": os.getloadavg(), "readings": len(texts), "repeats": args.repeats, "same_text": same}
        args.json.write_text(json.dumps({"info": info, "rows": rows}, ensure_ascii=False, indent=2) + "\n",
                             encoding="utf-8")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
