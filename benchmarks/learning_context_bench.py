"""Benchmark per-context learning: what a left context costs a lookup, a conversion and a load.

    python benchmarks/learning_context_bench.py [--repeats 5] [--history 60] [--conversion-only] [--json OUT]

1. The store alone, full (10,000 pairs, and 10,000 of them under a context too): lookup() of a
   learned reading without a left context and with one that was learned, record(), and the load
   time (best of --repeats) and size of its file, beside a file of the same pairs without contexts.
2. The lattice converter with a history: the segments of --history evaluation sentences learned
   after the end of the sentence before (as a session commits them). Live and full conversion
   (best path + 10 candidates + segments) of those sentences' readings, cache cleared before
   each call, with no left context and with the one each was learned after (alternating which
   goes first).
All times are CPU time of this process (fairer than wall clock when other jobs load the
machine): medians, the load best of --repeats; the load average is printed with them.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

PAIRS = 10000


def median_us(samples: list[float]) -> float:
    return 1e6 * statistics.median(samples)


def synthetic_store(path: Path, with_contexts: bool):
    from karukan_engine.dictionary.learning import LearningStore

    store = LearningStore(path, save_delay=None)
    for i in range(PAIRS):
        reading = "よみ" + "".join("あいうえおかきくけこ"[int(d)] for d in str(i))
        store.record(reading, f"語{i}", f"前{i % 97}の" if with_contexts else "")
    store.save()
    return store


def store_figures(directory: Path, repeats: int) -> dict:
    from karukan_engine.dictionary.learning import LearningStore

    store = synthetic_store(directory / "contexts.json", with_contexts=True)
    plain = synthetic_store(directory / "plain.json", with_contexts=False)
    readings = sorted({r for r, _ in store.prefix_lookup("よみ", PAIRS)})[:1000]
    figures = {"pairs": len(store), "context_entries": store.context_entries}
    for name, context in (("lookup_no_context_us", ""), ("lookup_learned_context_us", "前5の")):
        samples = []
        for _ in range(repeats):
            for reading in readings:
                t0 = time.process_time()
                store.lookup(reading, context)
                samples.append(time.process_time() - t0)
        figures[name] = median_us(samples)
    samples = []
    for i in range(1000):
        t0 = time.process_time()
        store.record(readings[i % len(readings)], "新", "前5の")
        samples.append(time.process_time() - t0)
    figures["record_us"] = median_us(samples)
    for name, path in (("with_contexts", store.path), ("without_contexts", plain.path)):
        loads = []
        for _ in range(repeats):
            t0 = time.process_time()
            LearningStore(path, save_delay=None)
            loads.append(time.process_time() - t0)
        figures[f"load_{name}_ms"] = 1000 * min(loads)
        figures[f"file_{name}_kb"] = path.stat().st_size / 1024
    return figures


def converter_figures(history: int, repeats: int) -> dict:
    from karukan_engine.core.types import ConversionRequest
    from karukan_engine.dictionary.learning import LearningStore
    from karukan_engine.dictionary.system import SystemDictionary
    from karukan_engine.evaluation.metrics import load_items
    from karukan_engine.kana import is_hiragana
    from karukan_engine.lattice.converter import LatticeConverter

    with tempfile.TemporaryDirectory() as home:
        converter = LatticeConverter(SystemDictionary(), None, LearningStore(Path(home) / "l.json", save_delay=None))
        converter.live(ConversionRequest("あ"))   # warm caches (segmenter bits)
        items = [item for item in load_items(REPO / "karukan_engine/data/eval/mozc_evaluation.tsv")
                 if is_hiragana(item.reading)][:history]
        cases, before = [], ""
        for item in items:
            segments = converter.convert(ConversionRequest(item.reading, before))
            converter.record([(s.reading, s.best.surface) for s in segments], before)
            cases.append((item.reading, before))
            before = (before + "".join(s.best.surface for s in segments))[-20:]
        # getattr: --conversion-only also runs on code from before per-context learning
        figures = {"sentences": len(items), "pairs": len(converter.learning),
                   "context_entries": getattr(converter.learning, "context_entries", 0)}
        labels = ("no_context", "learned_context")
        live = {label: [] for label in labels}
        full = {label: [] for label in labels}
        for repeat in range(repeats):
            for reading, context in cases:
                # alternate which goes first, so neither gets the warmer caches
                for label in (labels if repeat % 2 == 0 else labels[::-1]):
                    request = ConversionRequest(reading, context if label == "learned_context" else "")
                    converter.clear_cache()
                    t0 = time.process_time()
                    converter.live(request)
                    live[label].append(time.process_time() - t0)
                    converter.clear_cache()
                    t0 = time.process_time()
                    converter.candidates(request, 10)
                    for segment in converter.convert(request):
                        segment.best
                    full[label].append(time.process_time() - t0)
        for label in labels:
            figures[f"live_{label}_cpu_ms"] = 1000 * statistics.median(live[label])
            figures[f"full_{label}_cpu_ms"] = 1000 * statistics.median(full[label])
        figures["mean_kana"] = statistics.mean(len(r) for r, _ in cases)
    return figures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--history", type=int, default=60, help="evaluation sentences learned")
    parser.add_argument("--conversion-only", action="store_true",
                        help="skip the store figures (to time code from before contexts existed)")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    load_before = os.getloadavg()[0]
    store = {}
    if not args.conversion_only:
        with tempfile.TemporaryDirectory() as directory:
            store = store_figures(Path(directory), args.repeats)
    conversion = converter_figures(args.history, args.repeats)
    load_after = os.getloadavg()[0]

    if store:
        print(f"store: {store['pairs']} pairs, {store['context_entries']} under a context")
        print(f"{'measure':<36} {'value':>10}")
        for key in ("lookup_no_context_us", "lookup_learned_context_us", "record_us"):
            print(f"{key:<36} {store[key]:>10.2f}")
        for name in ("with_contexts", "without_contexts"):
            print(f"{'load ' + name + ' ms (best)':<36} {store[f'load_{name}_ms']:>10.1f}"
                  f"   file {store[f'file_{name}_kb']:.0f} KiB")
    print(f"converter: {conversion['sentences']} sentences learned ({conversion['pairs']} pairs, "
          f"{conversion['context_entries']} under a context), mean {conversion['mean_kana']:.1f} kana")
    print(f"{'left context':<16} {'live cpu ms':>12} {'full cpu ms':>12}")
    for label in ("no_context", "learned_context"):
        print(f"{label:<16} {conversion[f'live_{label}_cpu_ms']:>12.2f} {conversion[f'full_{label}_cpu_ms']:>12.2f}")
    print(f"(CPU time of this process: medians, load best of {args.repeats}; load average "
          f"{load_before:.1f} before, {load_after:.1f} after; {args.repeats} repeats)")
    if args.json:
        args.json.write_text(json.dumps({"store": store, "conversion": conversion, "repeats": args.repeats,
                                         "load_average": [load_before, load_after]}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
