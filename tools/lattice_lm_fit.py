"""Fit and measure how much the character n-gram says inside the lattice converter.

    python tools/lattice_lm_fit.py [--ngram FILE] [--limit 600] [--json out.json]

For every dev set (karukan_engine/data/eval/ and the training pipeline's held-out sets under
<work>/pairs/heldout/, built by `python -m karukan_engine.training devsets`), each item's first
distinct dictionary paths are collected once with their costs and n-gram scores; then every
weight of the grid is scored from those. Rows are split by position: even rows fit the weight
(the best summed Acc@1 over the sets with no set losing more than one point against the
dictionary alone), odd rows are reported. Acc@1 is after NFKC, as `karukan eval` counts it;
"fixed" and "broken" count the odd rows the weight gets right where the dictionary alone
(weight 0, today's `--no-model`) was wrong, and the other way round.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from karukan_engine.dictionary.system import SystemDictionary  # noqa: E402
from karukan_engine.evaluation.metrics import EvalItem, load_items  # noqa: E402
from karukan_engine.kana import nfkc, to_hiragana  # noqa: E402
from karukan_engine.lattice.converter import LatticeConverter  # noqa: E402
from karukan_engine.lattice.lm_paths import LmWeights, distinct_paths  # noqa: E402
from karukan_engine.lm.char_ngram import BUNDLED, CharNgram  # noqa: E402
from karukan_engine.core.types import ConversionRequest  # noqa: E402

EVAL_DIR = ROOT / "karukan_engine" / "data" / "eval"
GRID = (0.0, 100.0, 150.0, 200.0, 250.0, 300.0, 400.0, 500.0, 650.0, 800.0, 1000.0)
MAX_LOSS = 0.01   # a fitted weight may cost no fit set more than this share of its rows


def dev_sets(limit: int) -> dict[str, list[EvalItem]]:
    from karukan_engine.training.paths import work_dir

    sets = {path.stem: load_items(path) for path in sorted(EVAL_DIR.glob("*")) if path.suffix in (".tsv", ".jsonl")}
    for path in sorted((work_dir() / "pairs" / "heldout").glob("*.jsonl")):
        rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        sets[path.stem] = [EvalItem(to_hiragana(r["reading"]), (r["surface"],), r.get("context", "")) for r in rows]
    out = {}
    for name, items in sets.items():
        step = max(1, len(items) // max(1, limit))
        out[name] = items[::step][:limit]
        if any(it.context for it in out[name]):
            out[name + " (no context)"] = [replace(it, context="") for it in out[name]]
    return out


def gather(converter: LatticeConverter, ngram: CharNgram, items: list[EvalItem], paths: int,
           context_chars: int) -> list[tuple[list[int], list[float], list[bool]]]:
    """Per item: the distinct paths' costs, n-gram log Ps, and which are right."""
    rows = []
    for item in items:
        request = ConversionRequest(item.reading, left_context=item.context)
        analysis = converter._analyse(request)
        found = distinct_paths(analysis.lattice, analysis.space, paths)
        tail = item.context[-context_chars:] if context_chars else ""
        logs = [float(v) for v in ngram.score_many([(s, tail) for _, s, _ in found])] if found else []
        gold = {nfkc(o) for o in item.outputs}
        rows.append(([c for c, _, _ in found], logs, [nfkc(s) in gold for _, s, _ in found]))
    return rows


def top1(rows, weight: float) -> list[bool]:
    right = []
    for costs, logs, ok in rows:
        if not costs:
            right.append(False)
            continue
        best = min(range(len(costs)), key=lambda i: (costs[i] - weight * logs[i], i))
        right.append(ok[best])
    return right


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ngram", type=Path, default=BUNDLED)
    parser.add_argument("--limit", type=int, default=600, help="items per dev set (every k-th)")
    parser.add_argument("--paths", type=int, default=LmWeights().paths)
    parser.add_argument("--context-chars", type=int, default=LmWeights().context_chars)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    started = time.perf_counter()
    ngram = CharNgram.load(args.ngram)
    converter = LatticeConverter(SystemDictionary(), None, None)
    sets = dev_sets(args.limit)
    gathered = {name: gather(converter, ngram, items, args.paths, args.context_chars) for name, items in sets.items()}
    fit_sets = [n for n in gathered if not n.endswith("(no context)")]

    def split(name, parity):
        return gathered[name][parity::2]

    best, best_total = 0.0, -1.0
    for weight in GRID:
        total, ok = 0.0, True
        for name in fit_sets:
            base, tried = top1(split(name, 0), 0.0), top1(split(name, 0), weight)
            n = max(1, len(base))
            if (sum(base) - sum(tried)) / n > MAX_LOSS:
                ok = False
            total += sum(tried) / n
        if ok and total > best_total + 1e-9:
            best, best_total = weight, total
    report = {"weight": best, "paths": args.paths, "context_chars": args.context_chars, "ngram": args.ngram.name,
              "sets": {}, "grid": {}}
    print(f"fitted weight {best} (cost units per nat), {args.paths} paths, {args.context_chars} context chars")
    print(f"{'set':36} {'n':>5} {'dict':>7} {'+lm':>7} {'gain':>6} {'fixed':>5} {'broken':>6} {'in N':>6}")
    for name in gathered:
        rows = split(name, 1)
        base, tried = top1(rows, 0.0), top1(rows, best)
        n = max(1, len(rows))
        fixed = sum(t and not b for b, t in zip(base, tried))
        broken = sum(b and not t for b, t in zip(base, tried))
        reach = sum(any(ok) for _, _, ok in rows)
        report["sets"][name] = {"n": len(rows), "dictionary": sum(base) / n, "lm": sum(tried) / n,
                                "fixed": fixed, "broken": broken, "gold_in_paths": reach / n}
        print(f"{name:36} {len(rows):5} {100 * sum(base) / n:6.1f}% {100 * sum(tried) / n:6.1f}% "
              f"{100 * (sum(tried) - sum(base)) / n:+5.1f} {fixed:5} {broken:6} {100 * reach / n:5.1f}%")
    for weight in GRID:
        report["grid"][str(weight)] = {name: sum(top1(split(name, 1), weight)) / max(1, len(split(name, 1)))
                                       for name in gathered}
    report["seconds"] = round(time.perf_counter() - started, 1)
    if args.json:
        args.json.write_text(json.dumps(report, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
