#!/usr/bin/env python3
"""Space benchmark: what one explicit conversion costs in the Session, with and without the model.

Types sentences of the dev set (karukan_engine/data/eval/mozc_evaluation.tsv) key by key in
romaji through a Session, presses Space and times that call: the converter's segments and the
view with the first segment's candidate page, as an engine computes them before it answers the
key. Each sentence is converted once, as a user converts a new sentence, so per-reading caches
(alignments, lattices) start cold; typing it first warms what live conversion warms. Converters:
the dictionary alone, and the fused pipeline with the bundled model and its fitted weights
(settings.FITTED_WEIGHTS). Live conversion on, learning off (a temporary history; the user's
files are never read or written).

    python examples/space_bench.py                         # table on stdout
    python examples/space_bench.py --sentences 80 --json space.json
    python examples/space_bench.py --profile space.prof    # cProfile of the model's Space calls

Wall time includes whatever else the machine runs; thread CPU time is the session thread's own
work, steadier on a busy machine. --profile prints the 25 costliest calls (cumulative) and writes
the pstats file.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import platform
import pstats
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from karukan_engine.config import Config, LearningSettings  # noqa: E402
from karukan_engine.conversion.factory import ConverterOptions  # noqa: E402
from karukan_engine.conversion.fused import build_fused_converter  # noqa: E402
from karukan_engine.conversion.settings import ConversionSettings  # noqa: E402
from karukan_engine.dictionary.learning import LearningStore  # noqa: E402
from karukan_engine.dictionary.system import SystemDictionary  # noqa: E402
from karukan_engine.evaluation.metrics import load_items  # noqa: E402
from karukan_engine.lattice.converter import LatticeConverter  # noqa: E402
from karukan_engine.romaji.table import RomajiTable  # noqa: E402
from karukan_engine.session import Session, State  # noqa: E402
from karukan_engine.session.keys_cli import parse_keys  # noqa: E402

DEV_SET = ROOT / "karukan_engine" / "data" / "eval" / "mozc_evaluation.tsv"
SPACE, RETURN = 0x20, 0xFF0D


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def pick_sentences(count: int) -> list[tuple[str, str]]:
    """(reading, romaji) of `count` dev readings of 8–30 kana, spread over the set."""
    table = RomajiTable.default()
    items = [it for it in load_items(DEV_SET) if 8 <= len(it.reading) <= 30]
    step = max(1, len(items) // max(1, count * 2))
    chosen = []
    for item in items[::step]:
        keys = table.romaji_for(item.reading)
        if keys and "<" not in keys:
            chosen.append((item.reading, keys))
        if len(chosen) >= count:
            break
    return chosen


def converters(history: Path, use_model: bool):
    """(name, converter) for the dictionary alone and, unless told not to, the bundled model."""
    system = SystemDictionary()
    yield "dictionary", LatticeConverter(system, None, LearningStore(history / "dictionary.json"))
    if use_model:
        base = LatticeConverter(system, None, LearningStore(history / "model.json"))
        options = ConverterOptions(conversion=ConversionSettings())   # fitted weights, not the user's config
        fused = build_fused_converter(base, options)
        if fused is base:
            print("no bundled model: dictionary only", file=sys.stderr)
            return
        yield "bundled model", fused


def run(converter, sentences: list[tuple[str, str]], profiler: cProfile.Profile | None) -> dict:
    session = Session(converter, Config(learning=LearningSettings(enabled=False)))
    wall, cpu, converted = [], [], 0
    for _reading, keys in sentences:
        for _, keysym, mods in parse_keys(keys):
            session.process_key(keysym, mods)
        started, started_cpu = time.perf_counter(), time.thread_time()
        if profiler is not None:
            profiler.enable()
        view = session.process_key(SPACE)
        if profiler is not None:
            profiler.disable()
        cpu.append((time.thread_time() - started_cpu) * 1000)
        wall.append((time.perf_counter() - started) * 1000)
        converted += session.state is State.CONVERSION and view.candidates is not None
        session.process_key(RETURN)
    return {"n": len(wall), "converted": converted,
            "wall_p50_ms": round(statistics.median(wall), 2), "wall_p95_ms": round(percentile(wall, 0.95), 2),
            "cpu_p50_ms": round(statistics.median(cpu), 2), "cpu_p95_ms": round(percentile(cpu, 0.95), 2),
            "cpu_mean_ms": round(statistics.mean(cpu), 2)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sentences", type=int, default=60)
    parser.add_argument("--no-model", action="store_true", help="the dictionary converter only")
    parser.add_argument("--profile", type=Path, help="cProfile the model's Space calls into this file")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    sentences = pick_sentences(args.sentences)
    results = {}
    with tempfile.TemporaryDirectory(prefix="space-bench-") as history:
        for name, converter in converters(Path(history), not args.no_model):
            if name != "dictionary":
                converter.wait_for_model()
            profiler = cProfile.Profile() if args.profile and name != "dictionary" else None
            try:
                results[name] = run(converter, sentences, profiler)
            finally:
                converter.close()
            if profiler is not None:
                profiler.dump_stats(str(args.profile))
                out = io.StringIO()
                pstats.Stats(profiler, stream=out).sort_stats("cumulative").print_stats(25)
                print(out.getvalue(), file=sys.stderr)
    kana = statistics.mean(len(reading) for reading, _ in sentences)
    print(f"{len(sentences)} sentences, {kana:.1f} kana on average; Space, ms")
    print(f"{'converter':<14} {'n':>4} {'wall p50':>9} {'p95':>7} {'cpu p50':>8} {'p95':>7} {'mean':>7}")
    for name, r in results.items():
        print(f"{name:<14} {r['n']:>4} {r['wall_p50_ms']:>9} {r['wall_p95_ms']:>7} "
              f"{r['cpu_p50_ms']:>8} {r['cpu_p95_ms']:>7} {r['cpu_mean_ms']:>7}")
    if args.json:
        args.json.write_text(json.dumps({
            "benchmark": "space_bench", "sentences": len(sentences), "kana_mean": round(kana, 2),
            "load": os.getloadavg(),
            "cpus": os.cpu_count(), "python": platform.python_version(), "results": results,
        }, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
