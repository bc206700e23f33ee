"""Which fusion features could let a model improve on the dictionary's first candidate?

Gathers, for every sampled dev item, the fused converter's candidate pool with its evidence (as
benchmarks/fused_quality.py does) plus whether the model's greedy output and beam proposed each
candidate, then compares score families on Acc@1 (NFKC) of the top candidate. Each family is
fitted by grid search on the even rows (pooled over the sets) and scored on the odd rows, item by
item against the dictionary: rows it fixes (+) and rows it breaks (-). Features are relative to
the dictionary's best candidate d:

    dc      (path cost(x) - cost(d)) / 1000 per reading character (the lattice margin)
    dnll    NLL per character of x minus that of d;  dnll_total: the same over the whole surface
    switch  1 for every x other than d (a fixed price for overruling the dictionary)
    nopath  1 when the dictionary cannot write x;  notgreedy: 1 unless x is the model's greedy output

Families: linear (the shipped formula), linear + switch (per character and total NLL, with
greedy agreement), and a hard gate (x replaces d only when dc <= G, dnll <= -D, d's NLL >= A and
x is the greedy output). Also printed: the oracle (a correct candidate anywhere in the pool).

    python benchmarks/fusion_features.py --model karukan-bundled --limit 700 --json features.json
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from fused_quality import add_common_arguments, load_pipeline, load_sets  # noqa: E402
from tools.fusion_fit import gather_evidence, request_of  # noqa: E402

from karukan_engine.conversion.fused import FusedConverter  # noqa: E402
from karukan_engine.conversion.settings import ConversionSettings  # noqa: E402
from karukan_engine.conversion.ranking import Evidence  # noqa: E402
from karukan_engine.core.types import Source  # noqa: E402
from karukan_engine.evaluation.metrics import EvalItem  # noqa: E402
from karukan_engine.kana import nfkc  # noqa: E402

COLUMNS = ("dc", "dnll", "dnll_total", "switch", "nopath", "notgreedy")
CAPPED_DC = 2.0   # candidates the dictionary cannot write sit at the far end of the margin


@dataclass
class Row:
    """One item: the features of every rankable candidate (row 0 is d) and which are correct."""
    features: np.ndarray
    correct: np.ndarray
    d_nll: float


def row_of(item: EvalItem, evidence: list[Evidence], greedy: str | None) -> Row | None:
    ranked = [e for e in evidence if e.candidate.source != Source.VARIANT and e.nll is not None]
    if not ranked:
        return None
    d = ranked[0]   # the pool starts with the base converter's N-best: d is the dictionary's best
    gold = {nfkc(o) for o in item.outputs}
    chars = max(1, len(item.reading))
    rows = []
    for e in ranked:
        n, dn = len(nfkc(e.candidate.surface)), len(nfkc(d.candidate.surface))
        dc = (CAPPED_DC if e.lattice_cost is None or d.lattice_cost is None
              else min(CAPPED_DC, (e.lattice_cost - d.lattice_cost) / 1000 / chars))
        rows.append([dc, e.nll - d.nll, e.nll * n - d.nll * dn, float(e is not d),
                     float(e.lattice_cost is None), float(e.candidate.surface != greedy)])
    return Row(np.array(rows), np.array([nfkc(e.candidate.surface) in gold for e in ranked]), d.nll)


RowsBySet = dict[str, list[Row]]


def linear_tops(rows: list[Row], grid: np.ndarray) -> list[np.ndarray]:
    """Per row, the index of its top candidate at every grid point; ties keep pool order."""
    return [np.argmin(r.features @ grid.T, axis=0) for r in rows]


def gate_top(row: Row, gate: tuple[float, float, float]) -> int:
    most_dc, least_gain, least_d_nll = gate
    f = row.features
    ok = (f[:, 0] <= most_dc) & (-f[:, 1] >= least_gain) & (f[:, 5] == 0) & (f[:, 3] == 1)
    if row.d_nll < least_d_nll or not ok.any():
        return 0
    candidates = np.flatnonzero(ok)
    return int(candidates[np.argmin(f[candidates, 1])])


def versus_dictionary(rows: list[Row], tops: Sequence[int]) -> tuple[int, int]:
    wins = sum(bool(r.correct[t]) and not r.correct[0] for r, t in zip(rows, tops))
    losses = sum(bool(r.correct[0]) and not r.correct[t] for r, t in zip(rows, tops))
    return wins, losses


def grid_of(spec: dict[str, tuple[float, ...]]) -> np.ndarray:
    combos = list(itertools.product(*spec.values()))
    grid = np.zeros((len(combos), len(COLUMNS)))
    for j, name in enumerate(spec):
        grid[:, COLUMNS.index(name)] = [c[j] for c in combos]
    return grid


FAMILIES = {
    "linear (shipped formula)": {"dc": (0, .25, .5, 1, 2, 4), "dnll": (0, .5, 1, 2), "nopath": (0, .5, 1, 2, 4, 8)},
    "linear + switch": {"dc": (0, .5, 1, 2, 4), "dnll": (1,), "switch": (0, .5, 1, 2, 3, 5),
                        "nopath": (0, 1, 2, 4, 8)},
    "linear + switch + greedy": {"dc": (0, .5, 1, 2, 4), "dnll": (1,), "switch": (0, .5, 1, 2, 3, 5),
                                 "nopath": (0, 1, 2, 4, 8), "notgreedy": (0, .5, 1, 2)},
    "total NLL + switch + greedy": {"dc": (0, .5, 1, 2, 4), "dnll_total": (.1, .2, .5, 1), "switch": (0, 1, 2, 3, 5, 8),
                                    "nopath": (0, 1, 2, 4, 8), "notgreedy": (0, .5, 1, 2)},
}
GATES = list(itertools.product((0.05, 0.1, 0.2, 0.4, CAPPED_DC), (0.5, 1.0, 1.5, 2.0, 3.0), (0.0, 1.0, 2.0, 3.0)))


def best_on_fit(fit: RowsBySet, per_set: dict[str, tuple[Sequence[int], Sequence[int]]]) -> int:
    """The grid point with the most fit rows fixed minus broken, pooled over the sets."""
    net = sum(np.array(per_set[name][0]) - np.array(per_set[name][1]) for name in fit)
    return int(np.argmax(net))


def evaluate_linear(fit: RowsBySet, held: RowsBySet, spec: dict[str, tuple[float, ...]]) -> dict:
    grid = grid_of(spec)
    per_set = {}
    for name, rows in fit.items():
        wins, losses = np.zeros(len(grid), int), np.zeros(len(grid), int)
        for r, tops in zip(rows, linear_tops(rows, grid)):
            right = r.correct[tops]
            wins += right & ~r.correct[0]
            losses += ~right & r.correct[0]
        per_set[name] = (wins, losses)
    best = best_on_fit(fit, per_set)
    weights = {k: float(grid[best, COLUMNS.index(k)]) for k in spec}
    return {"weights": weights, **report(fit, held, lambda rows: [int(t[0]) for t in linear_tops(rows, grid[best:best + 1])])}


def evaluate_gate(fit: RowsBySet, held: RowsBySet) -> dict:
    per_set = {name: ([], []) for name in fit}
    for gate in GATES:
        for name, rows in fit.items():
            w, l_ = versus_dictionary(rows, [gate_top(r, gate) for r in rows])
            per_set[name][0].append(w)
            per_set[name][1].append(l_)
    gate = GATES[best_on_fit(fit, per_set)]
    params = dict(zip(("max_dc", "min_nll_gain", "min_d_nll"), gate))
    return {"weights": params, **report(fit, held, lambda rows: [gate_top(r, gate) for r in rows])}


def report(fit: RowsBySet, held: RowsBySet, tops_of: Callable[[list[Row]], Sequence[int]]) -> dict:
    return {part: {name: dict(zip(("wins", "losses"), versus_dictionary(rows, tops_of(rows))))
                   for name, rows in rows_by_set.items()}
            for part, rows_by_set in (("fit", fit), ("held_out", held))}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_common_arguments(parser)
    args = parser.parse_args()

    pipeline = load_pipeline(args)
    slot = pipeline.slot
    fused = FusedConverter(pipeline.base, [slot], ConversionSettings(), lexicon=pipeline.dictionary)
    sets = load_sets(args.dev, args.limit, docs=not args.no_docs)

    fit: RowsBySet = {}
    held: RowsBySet = {}
    oracle = {}
    for name, items in sets.items():
        evidence = gather_evidence(fused, slot, items)
        rows = []
        for item, found in zip(items, evidence):
            proposals = fused.ranking.model_candidates(slot, request_of(item))
            rows.append(row_of(item, found, proposals[0].surface if proposals else None))
        fit[name] = [r for r in rows[0::2] if r is not None]
        held[name] = [r for r in rows[1::2] if r is not None]
        oracle[name] = {"dictionary": sum(bool(r.correct[0]) for r in held[name]),
                        "any_candidate": sum(bool(r.correct.any()) for r in held[name]), "rows": len(held[name])}
        print(f"{name}: held-out {oracle[name]}", flush=True)

    results = {label: evaluate_linear(fit, held, spec) for label, spec in FAMILIES.items()}
    results["gate"] = evaluate_gate(fit, held)
    for label, result in results.items():
        print(f"{label}: {result['weights']}")
        for part in ("fit", "held_out"):
            cells = "  ".join(f"{n} +{v['wins']} -{v['losses']}" for n, v in result[part].items())
            print(f"  {part:<8} {cells}")
    if args.json:
        args.json.write_text(json.dumps({"model": args.model or "default", "limit": args.limit, "oracle": oracle,
                                         "families": results}, ensure_ascii=False, indent=1) + "\n",
                             encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
