#!/usr/bin/env python3
"""Rewriters and accuracy: each dev set's readings converted once, the list compared without and
with the rewriter stage (as `karukan convert -n` builds it). Top-1 must be the same item for
item (the stage never takes a word's first place); Recall@N may move (rewriters take places in
the top N); the stage's own time per list is timed.

    python benchmarks/rewriter_top1.py karukan_engine/data/eval/mozc_evaluation.tsv --json out.json
    python benchmarks/rewriter_top1.py FILE... [--limit N] [-n 5] [--model ID]   # default: dictionary only

Rows: set, items, Acc@1 without / with, first candidates that differ, Recall@N without / with,
rewrite p50 / p95 ms. The clock is fixed (dates do not depend on the day it runs).
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Callable, Sequence

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from karukan_engine.core.types import Candidate, ConversionRequest, Converter  # noqa: E402
from karukan_engine.evaluation.metrics import EvalItem, load_items  # noqa: E402
from karukan_engine.rewriters import RewriterStage  # noqa: E402
from karukan_engine.rewriters.choice_memory import ChoiceMemory  # noqa: E402

FIXED_CLOCK = datetime(2026, 12, 2, 14, 5)


def compare(converter: Converter, items: Sequence[EvalItem], stage: RewriterStage, n: int,
            clock: Callable[[], float] = time.perf_counter) -> dict:
    hits = [0, 0]
    recall = [0, 0]
    differ = 0
    times = []
    for item in items:
        found: list[Candidate] = list(converter.candidates(ConversionRequest(item.reading, item.context, learn=False), n))
        start = clock()
        rewritten = stage.rewrite(item.reading, found)[:n]
        times.append((clock() - start) * 1000)
        for i, cands in enumerate((found, rewritten)):
            surfaces = [c.surface for c in cands]
            hits[i] += bool(surfaces) and surfaces[0] in item.outputs
            recall[i] += any(s in item.outputs for s in surfaces)
        differ += (found[:1] and found[0].surface) != (rewritten[:1] and rewritten[0].surface)
    count = max(1, len(items))
    return {"items": len(items), "acc1_without": hits[0] / count, "acc1_with": hits[1] / count,
            "first_differs": differ, "recall_without": recall[0] / count, "recall_with": recall[1] / count,
            "rewrite_p50_ms": statistics.median(times) if times else 0.0,
            "rewrite_p95_ms": sorted(times)[math.ceil(0.95 * len(times)) - 1] if times else 0.0}   # nearest rank


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("file", nargs="+", type=Path)
    parser.add_argument("-n", type=int, default=5, help="candidates per item (default 5)")
    parser.add_argument("--limit", type=int, default=0, help="only the first N items of each file")
    parser.add_argument("--model", default=None, help="use the fused pipeline with this model (default: dictionary only)")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    from karukan_engine.conversion.factory import ConverterOptions, build_converter

    converter = build_converter(ConverterOptions(use_model=args.model is not None, model_id=args.model,
                                                 require_model=args.model is not None, batch=True))
    stage = RewriterStage(clock=lambda: FIXED_CLOCK, memory=ChoiceMemory())
    stage.rewrite("ねこ", [])   # the tables' one-time read is not a list's time
    rows = []
    for path in args.file:
        items = load_items(path)
        rows.append({"set": path.name, **compare(converter, items[: args.limit] if args.limit else items, stage, args.n)})
    print(f"{'set':24} {'items':>6} {'acc1 w/o':>9} {'acc1 with':>9} {'differ':>6} {'R@N w/o':>8} {'R@N with':>8} "
          f"{'p50 ms':>7} {'p95 ms':>7}")
    for r in rows:
        print(f"{r['set']:24} {r['items']:6} {r['acc1_without']:9.4f} {r['acc1_with']:9.4f} {r['first_differs']:6} "
              f"{r['recall_without']:8.4f} {r['recall_with']:8.4f} {r['rewrite_p50_ms']:7.3f} {r['rewrite_p95_ms']:7.3f}")
    if args.json:
        args.json.write_text(json.dumps({"n": args.n, "model": args.model, "rows": rows}, indent=1))
    converter.close()
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from private_user_data import private_user_data

    with private_user_data():   # the user's learning is neither read nor written
        sys.exit(main())
