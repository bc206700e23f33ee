"""Quality of the fused pipeline vs the dictionary alone vs the model alone, and weight fitting.

Items of each dev set are split in two: even rows fit the fusion weights (grid search over the
evidence gathered once per item), odd rows are the held-out rows every system is scored on.
AJIMEE-Bench is never used here.

    python examples/fused_quality.py --model karukan-bundled --json quality.json
    python examples/fused_quality.py --model PATH --limit 200 --fit

Systems: dictionary (lattice N-best), model (beam search alone), fused-rerank (one score over
lattice cost, model NLL and learning) and fused-verify (Zenzai-style verification).
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from karukan_engine.conversion.fused import FusedConverter  # noqa: E402
from karukan_engine.conversion.model_slot import ModelSlot  # noqa: E402
from karukan_engine.conversion.ranking import rank  # noqa: E402
from karukan_engine.conversion.settings import ConversionSettings, FusionWeights  # noqa: E402
from karukan_engine.conversion.types import ConversionRequest  # noqa: E402
from karukan_engine.dictionary.system import SystemDictionary  # noqa: E402
from karukan_engine.evaluation.metrics import EvalItem, Scores, format_summary, load_items  # noqa: E402
from karukan_engine.lattice.converter import LatticeConverter  # noqa: E402
from karukan_engine.neural.converter import NeuralConverter  # noqa: E402
from karukan_engine.neural.model import ModelOptions  # noqa: E402
from karukan_engine.neural.registry import load_model_by_id_or_path  # noqa: E402

EVAL_DIR = ROOT / "karukan_engine" / "data" / "eval"
DEV_SETS = ("mozc_evaluation.tsv", "anthy_corpus.tsv")
GRID = {
    "lattice": (0.0, 0.25, 0.5, 1.0, 2.0, 4.0),
    "nll": (0.0, 0.5, 1.0, 2.0),
    "unaligned": (0.0, 0.5, 1.0, 2.0, 4.0, 8.0),
}


def sample(items: list[EvalItem], limit: int) -> list[EvalItem]:
    step = max(1, len(items) // max(1, limit))
    return items[::step][:limit]


def score(items, convert, n=5) -> dict:
    scores = Scores()
    for item in items:
        started = time.perf_counter()
        scores.add(item, convert(item, n), time.perf_counter() - started)
    return scores.summary()


def fit(evidence_sets: list[list], items: list[EvalItem]) -> tuple[FusionWeights, float]:
    """The grid point with the best Acc@1 (NFKC), Recall@5 breaking ties."""
    best, best_key = FusionWeights(), (-1.0, -1.0)
    for lattice, nll, unaligned in itertools.product(GRID["lattice"], GRID["nll"], GRID["unaligned"]):
        weights = FusionWeights(lattice=lattice, nll=nll, learning=1.0, unaligned=unaligned)
        scores = Scores()
        for item, evidence in zip(items, evidence_sets):
            ranked = [c.surface for c in rank(evidence, len(item.reading), weights)]
            scores.add(item, ranked, 0.0)
        summary = scores.summary()
        key = (summary["acc1_nfkc"], summary["recall5"])
        if key > best_key:
            best, best_key = weights, key
    return best, best_key[0]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", help="models.toml id or GGUF path (default: registry default)")
    parser.add_argument("--dev", type=Path, nargs="*", help="dev sets (default: data/eval/*.tsv)")
    parser.add_argument("--limit", type=int, default=200, help="items per dev set (every k-th)")
    parser.add_argument("--fit", action="store_true", help="fit the weights on the even rows first")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()

    dictionary = SystemDictionary()
    base = LatticeConverter(dictionary, None, None)
    model = load_model_by_id_or_path(args.model, ModelOptions(n_threads=args.threads))
    slot = ModelSlot(model, args.model or "default")
    settings = ConversionSettings()
    paths = args.dev or [EVAL_DIR / name for name in DEV_SETS]
    sets = {p.name: sample(load_items(p), args.limit) for p in paths}

    weights = settings.weights
    fitted = None
    if args.fit:
        fitter = FusedConverter(base, [slot], settings, lexicon=dictionary)
        fit_items = [it for items in sets.values() for it in items[0::2]]
        evidence = []
        for item in fit_items:
            request = ConversionRequest(item.reading, item.context)
            candidates = base.candidates(request, settings.lattice_nbest)
            evidence.append(fitter.evidence(slot, model, request, candidates))
        weights, acc = fit(evidence, fit_items)
        fitted = {"weights": weights.__dict__, "fit_items": len(fit_items), "fit_acc1_nfkc": acc}
        print(f"fitted on {len(fit_items)} even rows: {weights} (Acc@1 NFKC {100 * acc:.1f}%)")

    systems = {
        "dictionary": lambda item, n: [c.surface for c in base.candidates(ConversionRequest(item.reading, item.context), n)],
        "model": lambda item, n: [c.surface for c in NeuralConverter(model).candidates(ConversionRequest(item.reading, item.context), n)],
    }
    for scheme in ("rerank", "verify"):
        fused = FusedConverter(base, [slot], replace(settings, scheme=scheme, weights=weights), lexicon=dictionary)
        systems[f"fused-{scheme}"] = (lambda f: lambda item, n: [
            c.surface for c in f.candidates(ConversionRequest(item.reading, item.context), n)])(fused)

    results = {}
    for set_name, items in sets.items():
        held_out = items[1::2]
        for system, convert in systems.items():
            summary = score(held_out, convert)
            results.setdefault(set_name, {})[system] = summary
            print(format_summary(f"{set_name:<22} {system:<14}", summary), flush=True)
    if args.json:
        args.json.write_text(json.dumps({"model": args.model or "default", "fitted": fitted,
                                         "results": results}, ensure_ascii=False, indent=1) + "\n",
                             encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
