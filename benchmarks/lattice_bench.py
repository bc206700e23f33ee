"""Benchmark the dictionary lattice converter: load time, memory, conversion time by length.

    python benchmarks/lattice_bench.py [--repeats 3] [--per-length 20] [--history N] [--json OUT]

Readings of 5, 10, 20 and 40 kana are cut from Mozc's evaluation sentences. For each we time
  live        best path only (what live conversion needs per key)
  full        best path + 10-best whole-reading candidates + segments (each with its best; the
              per-segment alternatives are lazy and not read)
  focused     full + the first segment's alternatives read (what Space shows in a session)
  all         full + every segment's alternatives read (what an eager converter would compute)
with the converter's cache cleared before every call, as wall-clock time and as this process's
CPU time (the fairer figure when other jobs load the machine). Load is measured in a fresh
process: import + dictionary load + first conversion, and its peak RSS. Last, the cost of
learning a commit (record(), on the Return key) and of the file write the background saver does.
--history N: time with a learning history (every segment of N evaluation sentences, as converted).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

LENGTHS = (5, 10, 20, 40)
PER_LENGTH = 20

_LOAD_PROBE = """
import json, resource, sys, time
started = time.perf_counter()
from karukan_engine.lattice.converter import LatticeConverter
from karukan_engine.core.types import ConversionRequest
converter = LatticeConverter.load_default()
loaded = time.perf_counter()
converter.live(ConversionRequest("きょうはいいてんきですね"))
first = time.perf_counter()
print(json.dumps({"load_s": loaded - started, "first_conversion_s": first - started,
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def _live(converter, request) -> None:
    converter.live(request)


def _full(converter, request) -> list:
    converter.candidates(request, 10)
    segments = converter.convert(request)
    for segment in segments:
        segment.best
    return segments


def _focused(converter, request) -> None:
    segments = _full(converter, request)
    len(segments[0].candidates)


def _all(converter, request) -> None:
    for segment in _full(converter, request):
        len(segment.candidates)


MEASURES = {"live": _live, "full": _full, "focused": _focused, "all": _all}


def readings_by_length(per_length: int = PER_LENGTH) -> dict[int, list[str]]:
    from karukan_engine.evaluation.metrics import load_items
    from karukan_engine.kana import is_hiragana

    text = "".join(item.reading for item in load_items(REPO / "karukan_engine/data/eval/mozc_evaluation.tsv")
                   if is_hiragana(item.reading))
    out = {}
    for length in LENGTHS:
        step = max(1, (len(text) - length) // per_length)
        out[length] = [text[i:i + length] for i in range(0, step * per_length, step)]
    return out


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--per-length", type=int, default=PER_LENGTH, help="readings per length")
    parser.add_argument("--history", type=int, default=0,
                        help="learn the segments of this many evaluation sentences first")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as home:   # no learning history or user words
        env = {**os.environ, "XDG_DATA_HOME": home, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
        probe = subprocess.run([sys.executable, "-c", _LOAD_PROBE], env=env, capture_output=True,
                               text=True, check=True)
        load = json.loads(probe.stdout)

        os.environ["XDG_DATA_HOME"] = home
        from karukan_engine.core.types import ConversionRequest
        from karukan_engine.lattice.converter import LatticeConverter

        converter = LatticeConverter.load_default()
        converter.live(ConversionRequest("あ"))   # warm caches (segmenter bits)
        if args.history:
            from karukan_engine.evaluation.metrics import load_items

            items = load_items(REPO / "karukan_engine/data/eval/mozc_evaluation.tsv")[: args.history]
            for item in items:
                converter.record([(s.reading, s.best.surface) for s in converter.convert(ConversionRequest(item.reading))])
            print(f"learning history: {len(converter.learning)} pairs from {len(items)} sentences")
        rows = []
        for length, readings in readings_by_length(args.per_length).items():
            wall: dict[str, list[float]] = {name: [] for name in MEASURES}
            cpu: dict[str, list[float]] = {name: [] for name in MEASURES}
            for _ in range(args.repeats):
                for reading in readings:
                    for name, work in MEASURES.items():
                        converter.clear_cache()
                        t0, c0 = time.perf_counter(), time.process_time()
                        work(converter, ConversionRequest(reading))
                        wall[name].append(time.perf_counter() - t0)
                        cpu[name].append(time.process_time() - c0)
            row = {"kana": length, "n": len(wall["live"])}
            for name in MEASURES:
                row[f"{name}_median_ms"] = 1000 * statistics.median(wall[name])
                row[f"{name}_p95_ms"] = 1000 * percentile(wall[name], 0.95)
                row[f"{name}_cpu_median_ms"] = 1000 * statistics.median(cpu[name])
            rows.append(row)

        # Return: learning a commit (memory only) vs the file write the background saver does
        record, save = [], []
        for reading in readings_by_length(args.per_length)[10]:
            pair = (reading, converter.live(ConversionRequest(reading)))
            t0 = time.perf_counter()
            converter.record([pair])
            record.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            converter.save()
            save.append(time.perf_counter() - t0)
        learning = {"record_median_ms": 1000 * statistics.median(record),
                    "save_median_ms": 1000 * statistics.median(save),
                    "files_written": converter.learning.saves}
        converter.close()

    print(f"load: {load['load_s'] * 1000:.0f} ms to loaded, {load['first_conversion_s'] * 1000:.0f} ms "
          f"to first conversion, peak RSS {load['peak_rss_mb']:.0f} MB")
    print(f"{'kana':>5} {'n':>4} " + " ".join(f"{name + ' ' + stat:>13}" for name in MEASURES
                                               for stat in ("med", "p95", "cpu")))
    for row in rows:
        print(f"{row['kana']:>5} {row['n']:>4} " + " ".join(
            f"{row[f'{name}_{key}_ms']:>13.2f}" for name in MEASURES
            for key in ("median", "p95", "cpu_median")))
    print("(ms; med/p95 = wall clock, cpu = median CPU time of this process)")
    print(f"learning: record() {learning['record_median_ms']:.3f} ms median (memory only); "
          f"the file write it no longer waits for {learning['save_median_ms']:.1f} ms median")
    if args.json:
        args.json.write_text(json.dumps({"load": load, "conversion": rows, "learning": learning}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
