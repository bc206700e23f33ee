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

    python benchmarks/space_bench.py                         # table on stdout
    python benchmarks/space_bench.py --sentences 80 --json space.json
    python benchmarks/space_bench.py --profile space.prof    # cProfile of the model's Space calls
    python benchmarks/space_bench.py --pause-ms 0,150,300    # as the engine runs it, pausing before Space
    python benchmarks/space_bench.py --pause-ms 150 --no-prepare   # the same pause, nothing prepared
    python benchmarks/space_bench.py --pause-ms 0 --no-quick       # Space waits for the model

With --pause-ms the session is attached to a LiveService as in the engine (live refinement,
suggestions and the preparation of Space's conversion on its scheduler), and Space comes that
long after the last key; with several pauses the sentences take them in turn (each sentence
is still converted once). "prepared" counts the Spaces answered from a preparation. Space is
then quick (docs/conversion.md "Quick Space"): unprepared, it shows the lattice and n-gram's
conversion, and the model's follows. "model" gives how many came, how many changed what was
shown (the candidate list or the text) and the text itself, and when they came (ms after
Space, p50 / p95); --no-quick makes Space wait for the model instead.

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
from karukan_engine.live.live_service import LateUpdate, LiveLink, LiveService, UpdateKind  # noqa: E402
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


def converters(history: Path, use_model: bool, prepare: bool = True, quick: bool = True):
    """(name, converter) for the dictionary alone and, unless told not to, the bundled model."""
    system = SystemDictionary()
    yield "dictionary", LatticeConverter(system, None, LearningStore(history / "dictionary.json"))
    if use_model:
        base = LatticeConverter(system, None, LearningStore(history / "model.json"))
        # fitted weights, not the user's config
        options = ConverterOptions(conversion=ConversionSettings(prepare_space=prepare, quick_space=quick))
        fused = build_fused_converter(base, options)
        if fused is base:
            print("no bundled model: dictionary only", file=sys.stderr)
            return
        yield "bundled model", fused


def run(converter, sentences: list[tuple[str, str]], profiler: cProfile.Profile | None,
        pauses: list[float | None]) -> dict:
    """{pause: figures}; sentence i is converted after pauses[i % len(pauses)]."""
    session = Session(converter, Config(learning=LearningSettings(enabled=False)))
    service = None
    arrived: list[tuple[float, LateUpdate]] = []   # quick Spaces' model conversions
    if pauses != [None]:
        service = LiveService(converter)
        session.attach_live(LiveLink(service, 1, lambda update: update.kind is UpdateKind.CONVERSION
                                     and arrived.append((time.perf_counter(), update))))
    preparing = service is not None and service.converter is converter   # the fused converter
    # wall, cpu, converted, prepared, model conversion's arrival (ms after Space), changed
    # (what was shown: the text, or only the candidate list), changed the text
    samples = {pause: ([], [], [0], [0], [], [0, 0]) for pause in pauses}
    for index, (_reading, keys) in enumerate(sentences):
        pause = pauses[index % len(pauses)]
        wall, cpu, converted, prepared, refined, changed = samples[pause]
        for _, keysym, mods in parse_keys(keys):
            session.process_key(keysym, mods)
        if pause:
            time.sleep(pause)
        hits = converter.prepared.hits if preparing else 0
        started, started_cpu = time.perf_counter(), time.thread_time()
        if profiler is not None:
            profiler.enable()
        view = session.process_key(SPACE)
        if profiler is not None:
            profiler.disable()
        cpu.append((time.thread_time() - started_cpu) * 1000)
        wall.append((time.perf_counter() - started) * 1000)
        converted[0] += session.state is State.CONVERSION and view.candidates is not None
        if preparing:
            prepared[0] += converter.prepared.hits - hits
        if service is not None:
            service.scheduler.idle(30)   # the next sentence starts with no work left over
            for at, update in arrived:
                refined.append((at - started) * 1000)
                later = session.apply_live_update(update)
                changed[0] += later is not None
                changed[1] += later is not None and later.preedit != view.preedit
            arrived.clear()
        session.process_key(RETURN)
    if service is not None:
        service.shutdown()
    return {pause: {"n": len(wall), "converted": converted[0],
                    "pause_ms": None if pause is None else round(pause * 1000),
                    "prepared": prepared[0] if preparing else None,
                    "wall_p50_ms": round(statistics.median(wall), 2), "wall_p95_ms": round(percentile(wall, 0.95), 2),
                    "cpu_p50_ms": round(statistics.median(cpu), 2), "cpu_p95_ms": round(percentile(cpu, 0.95), 2),
                    "cpu_mean_ms": round(statistics.mean(cpu), 2),
                    "model_conversions": len(refined), "model_changed": changed[0],
                    "model_changed_text": changed[1],
                    "model_p50_ms": round(statistics.median(refined), 2) if refined else None,
                    "model_p95_ms": round(percentile(refined, 0.95), 2) if refined else None}
            for pause, (wall, cpu, converted, prepared, refined, changed) in samples.items() if wall}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sentences", type=int, default=60)
    parser.add_argument("--no-model", action="store_true", help="the dictionary converter only")
    parser.add_argument("--profile", type=Path, help="cProfile the model's Space calls into this file")
    parser.add_argument("--pause-ms", help="comma-separated pauses before Space, through a LiveService")
    parser.add_argument("--no-prepare", action="store_true", help="[conversion] prepare_space = false")
    parser.add_argument("--no-quick", action="store_true", help="[conversion] quick_space = false")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    sentences = pick_sentences(args.sentences)
    pauses = [None] if args.pause_ms is None else [float(p) / 1000.0 for p in args.pause_ms.split(",")]
    results = {}
    with tempfile.TemporaryDirectory(prefix="space-bench-") as history:
        for name, converter in converters(Path(history), not args.no_model, not args.no_prepare,
                                          not args.no_quick):
            if name != "dictionary":
                converter.wait_for_model()
                if converter.ngram is not None:
                    converter.ngram.settle()
            profiler = cProfile.Profile() if args.profile and name != "dictionary" else None
            try:
                for pause, figures in run(converter, sentences, profiler, pauses).items():
                    results[name if pause is None else f"{name}, pause {pause * 1000:g} ms"] = figures
            finally:
                converter.close()
            if profiler is not None:
                profiler.dump_stats(str(args.profile))
                out = io.StringIO()
                pstats.Stats(profiler, stream=out).sort_stats("cumulative").print_stats(25)
                print(out.getvalue(), file=sys.stderr)
    kana = statistics.mean(len(reading) for reading, _ in sentences)
    print(f"{len(sentences)} sentences, {kana:.1f} kana on average; Space, ms")
    print(f"{'converter':<24} {'n':>4} {'wall p50':>9} {'p95':>7} {'cpu p50':>8} {'p95':>7} {'mean':>7} "
          f"{'prepared':>8}  model: {'n':>3} {'changed':>7} {'text':>4} {'p50':>6} {'p95':>6}")
    for name, r in results.items():
        model = (f"{r['model_conversions']:>3} {r['model_changed']:>7} {r['model_changed_text']:>4} "
                 f"{r['model_p50_ms']:>6} {r['model_p95_ms']:>6}"
                 if r["model_conversions"] else "  -")
        print(f"{name:<24} {r['n']:>4} {r['wall_p50_ms']:>9} {r['wall_p95_ms']:>7} "
              f"{r['cpu_p50_ms']:>8} {r['cpu_p95_ms']:>7} {r['cpu_mean_ms']:>7} "
              f"{'-' if r['prepared'] is None else r['prepared']:>8}         {model}")
    if args.json:
        args.json.write_text(json.dumps({
            "benchmark": "space_bench", "sentences": len(sentences), "kana_mean": round(kana, 2),
            "prepare_space": not args.no_prepare, "quick_space": not args.no_quick,
            "load": os.getloadavg(),
            "cpus": os.cpu_count(), "python": platform.python_version(), "results": results,
        }, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
