"""Quality of the fused pipeline vs the dictionary alone vs the model alone, and weight fitting.

Every dev set is sampled (every k-th item) and split in two: even rows fit the fusion weights,
odd rows are held out and every system is scored on them. AJIMEE-Bench is never used here.

    python examples/fused_quality.py --model karukan-bundled --limit 700 --fit --json quality.json

Dev sets: the three in karukan_engine/data/eval/ (Mozc's evaluation set, the Anthy corpus, Anthy
with left context) and, where the training pipeline has built them locally (never committed),
its held-out sets: the documentation split (`pairs/test.jsonl`), the annotated Wikipedia test
split and the held-out chat dialogues (`pairs/heldout/`); a set not built is skipped with a
note. Every set with left context is also scored without it ("(no context)"); those copies are
never fitted on.

Systems: dictionary (lattice N-best), model (beam search alone), fused-rerank (one score over
lattice cost, model NLL and learning: karukan_engine.conversion.ranking) and fused-verify
(Zenzai-style verification). Besides Acc@1 (with a 95 % Wilson interval), Recall@5 and MinCER,
every system is compared with the dictionary item by item: items it fixes (+), items it breaks
(-) and the two-sided sign-test p of that split.

--fit: the model's evidence (candidate pool, path costs, NLLs) is gathered once per fit row and a
grid search over the weights maximises pooled Acc@1 (NFKC) on the fit rows, Recall@5 breaking
ties. The model gets a say only if the best grid point fixes significantly more fit rows than it
breaks (one-sided sign test, p < 0.05); otherwise the fitted weights give it none (fused ranks
exactly like the dictionary), so noise on the fit rows is not mistaken for a gain.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable, Sequence

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from karukan_engine.conversion.fused import FusedConverter  # noqa: E402
from karukan_engine.conversion.model_slot import ModelSlot  # noqa: E402
from karukan_engine.conversion.ranking import Evidence, rank  # noqa: E402
from karukan_engine.conversion.settings import ConversionSettings, FusionWeights  # noqa: E402
from karukan_engine.core.types import ConversionRequest  # noqa: E402
from karukan_engine.kana import nfkc, to_hiragana  # noqa: E402
from karukan_engine.evaluation.metrics import EvalItem, Scores, load_items  # noqa: E402

EVAL_DIR = ROOT / "karukan_engine" / "data" / "eval"
DEV_SETS = ("mozc_evaluation.tsv", "anthy_corpus.tsv", "anthy_context.jsonl")
DOCS_SET = "docs_heldout"
HELDOUT_SETS = ("wac_test", "chat_heldout")
NO_CONTEXT = " (no context)"
GRID = {
    "lattice": (0.0, 0.25, 0.5, 1.0, 2.0, 4.0),
    "nll": (0.0, 0.25, 0.5, 1.0, 2.0),
    "nll_total": (0.0, 0.05, 0.1, 0.2, 0.4),
    "unaligned": (0.0, 0.5, 1.0, 2.0, 4.0, 8.0),
}
# No say for the model: every candidate scores the same, so the pool keeps the dictionary's order.
NO_MODEL_SAY = FusionWeights(lattice=0.0, nll=0.0, learning=1.0, unaligned=0.0)
SIGNIFICANCE = 0.05
N_CANDIDATES = 5


def sample(items: list[EvalItem], limit: int) -> list[EvalItem]:
    step = max(1, len(items) // max(1, limit))
    return items[::step][:limit]


def pair_items(path: Path) -> list[EvalItem]:
    """Training-pipeline pairs ({"context", "reading" (katakana), "surface"}) as EvalItems."""
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [EvalItem(to_hiragana(r["reading"]), (r["surface"],), r.get("context", "")) for r in rows]


def work_sets(limit: int, docs: bool = True) -> dict[str, list[EvalItem]]:
    """The training pipeline's held-out sets, when built here (never committed): the docs
    hold-out, the annotated Wikipedia test split and the held-out chat dialogues."""
    from karukan_engine.training.paths import work_dir

    paths = {name: work_dir() / "pairs" / "heldout" / f"{name}.jsonl" for name in HELDOUT_SETS}
    if docs:
        paths = {DOCS_SET: work_dir() / "pairs" / "test.jsonl", **paths}
    sets = {}
    for name, path in paths.items():
        if path.is_file():
            sets[name] = sample(pair_items(path), limit)
        else:
            print(f"note: {name} skipped (the training pipeline has not built it here)")
    return sets


def with_no_context(sets: dict[str, list[EvalItem]]) -> dict[str, list[EvalItem]]:
    """Every set, plus a copy without the left context of every set that has one."""
    out = {}
    for name, items in sets.items():
        out[name] = items
        if any(it.context for it in items):
            out[name + NO_CONTEXT] = [replace(it, context="") for it in items]
    return out


# --- statistics -------------------------------------------------------------------------------

def wilson(successes: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """95 % Wilson score interval of a proportion."""
    if n == 0:
        return 0.0, 1.0
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    # At 0 and n the bounds are exactly 0 and 1; rounding would leave them a hair inside.
    lower = 0.0 if successes == 0 else max(0.0, centre - half)
    upper = 1.0 if successes == n else min(1.0, centre + half)
    return lower, upper


def sign_test(wins: int, losses: int, two_sided: bool = True) -> float:
    """p of at least this many wins among wins + losses discordant pairs if either side were as
    likely (ties carry no information); two-sided doubles the smaller tail."""
    n = wins + losses
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, k) for k in range(wins, n + 1)) / 2 ** n
    if not two_sided:
        return tail
    lower = sum(math.comb(n, k) for k in range(0, wins + 1)) / 2 ** n
    return min(1.0, 2 * min(tail, lower))


@dataclass(frozen=True)
class Paired:
    """Item-by-item comparison of a system's top candidate with the dictionary's (NFKC)."""
    wins: int
    losses: int

    @property
    def p(self) -> float:
        return sign_test(self.wins, self.losses)


def top_correct(item: EvalItem, candidates: Sequence[str]) -> bool:
    return bool(candidates) and nfkc(candidates[0]) in {nfkc(o) for o in item.outputs}


def paired(items: Sequence[EvalItem], system: Sequence[Sequence[str]], baseline: Sequence[Sequence[str]]) -> Paired:
    wins = losses = 0
    for item, ours, theirs in zip(items, system, baseline):
        a, b = top_correct(item, ours), top_correct(item, theirs)
        wins += a and not b
        losses += b and not a
    return Paired(wins, losses)


# --- fitting ----------------------------------------------------------------------------------

def ranked_surfaces(item: EvalItem, evidence: list[Evidence], weights: FusionWeights) -> list[str]:
    return [c.surface for c in rank(evidence, len(item.reading), weights)][:N_CANDIDATES]


def summary_of(items: Sequence[EvalItem], outputs: Sequence[Sequence[str]]) -> dict:
    scores = Scores()
    for item, candidates in zip(items, outputs):
        scores.add(item, list(candidates), 0.0)
    return scores.summary()


def fit(items: list[EvalItem], evidence: list[list[Evidence]], dictionary: list[list[str]]) -> dict:
    """The best grid point on these rows, and whether it beats the dictionary significantly."""
    best, best_key = NO_MODEL_SAY, (-1.0, -1.0)
    for lattice, nll, nll_total, unaligned in itertools.product(
            GRID["lattice"], GRID["nll"], GRID["nll_total"], GRID["unaligned"]):
        weights = FusionWeights(lattice=lattice, nll=nll, learning=1.0, unaligned=unaligned,
                                nll_total=nll_total)
        summary = summary_of(items, [ranked_surfaces(i, e, weights) for i, e in zip(items, evidence)])
        key = (summary["acc1_nfkc"], summary["recall5"])
        if key > best_key:
            best, best_key = weights, key
    return choose_weights(items, evidence, dictionary, best)


def choose_weights(items: list[EvalItem], evidence: list[list[Evidence]], dictionary: list[list[str]],
                   best: FusionWeights) -> dict:
    """`best` only if it fixes significantly more rows than it breaks; else no model say."""
    outputs = [ranked_surfaces(i, e, best) for i, e in zip(items, evidence)]
    versus = paired(items, outputs, dictionary)
    p = sign_test(versus.wins, versus.losses, two_sided=False)
    significant = versus.wins > versus.losses and p < SIGNIFICANCE
    return {"weights": best if significant else NO_MODEL_SAY, "best_grid_point": best.__dict__,
            "fit_wins": versus.wins, "fit_losses": versus.losses, "fit_p_one_sided": p,
            "significant": significant, "fit_acc1_nfkc": summary_of(items, outputs)["acc1_nfkc"]}


# --- running the systems ----------------------------------------------------------------------

@dataclass
class Run:
    """One system's top-N per item and the seconds each took."""
    outputs: list[list[str]]
    seconds: list[float]


def timed(items: Sequence[EvalItem], convert: Callable[[EvalItem], list[str]]) -> Run:
    run = Run([], [])
    for item in items:
        started = time.perf_counter()
        run.outputs.append(convert(item))
        run.seconds.append(time.perf_counter() - started)
    return run


def request_of(item: EvalItem) -> ConversionRequest:
    return ConversionRequest(item.reading, item.context)


def gather_evidence(fused: FusedConverter, slot: ModelSlot, items: Sequence[EvalItem]) -> list[list[Evidence]]:
    """What FusedConverter.candidates ranks, per item: the same base N-best, pool and evidence
    (tests/test_conversion_fused_quality.py checks that ranking it gives exactly its answer)."""
    model = slot.get()
    evidence = []
    for item in items:
        request = request_of(item)
        base = fused.base.candidates(request, max(N_CANDIDATES, fused.settings.lattice_nbest))
        evidence.append(fused.evidence(slot, model, request, base))
    return evidence


def row(items: Sequence[EvalItem], run: Run, dictionary: Run | None) -> dict:
    summary = summary_of(items, run.outputs)
    summary["ms_per_item"] = 1000 * sum(run.seconds) / max(1, len(items))
    correct = round(summary["acc1_nfkc"] * len(items))
    summary["acc1_nfkc_ci95"] = wilson(correct, len(items))
    if dictionary is not None:
        versus = paired(items, run.outputs, dictionary.outputs)
        summary.update(wins_vs_dictionary=versus.wins, losses_vs_dictionary=versus.losses,
                       sign_test_p=versus.p)
    return summary


def format_row(set_name: str, system: str, s: dict) -> str:
    lo, hi = s["acc1_nfkc_ci95"]
    versus = (f"  +{s['wins_vs_dictionary']} -{s['losses_vs_dictionary']} (p {s['sign_test_p']:.2f})"
              if "wins_vs_dictionary" in s else "")
    return (f"{set_name:<20} {system:<14} n={s['items']:<4} Acc@1 {100 * s['acc1_exact']:5.1f}%  "
            f"NFKC {100 * s['acc1_nfkc']:5.1f}% [{100 * lo:.1f}-{100 * hi:.1f}]  "
            f"R@5 {100 * s['recall5']:5.1f}%  MinCER {s['mean_min_cer']:.3f}  "
            f"{s['ms_per_item']:6.1f} ms{versus}")


def load_sets(paths: Sequence[Path] | None, limit: int, docs: bool) -> dict[str, list[EvalItem]]:
    """The named sets, else the package's dev sets plus the pipeline's held-out ones."""
    if paths:
        return {p.name: sample(load_items(p), limit) for p in paths}
    sets = {n: sample(load_items(EVAL_DIR / n), limit) for n in DEV_SETS}
    return {**sets, **work_sets(limit, docs)}


def add_common_arguments(parser: argparse.ArgumentParser) -> None:
    """The model, dev-set and output options this script shares with fusion_features.py."""
    parser.add_argument("--model", help="models.toml id or GGUF path (default: registry default)")
    parser.add_argument("--dev", type=Path, nargs="*", help="dev sets (default: data/eval/ sets)")
    parser.add_argument("--no-docs", action="store_true", help="skip the documentation held-out set")
    parser.add_argument("--limit", type=int, default=700, help="items per dev set (every k-th)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--json", type=Path)


@dataclass
class Pipeline:
    dictionary: object   # SystemDictionary
    base: object         # LatticeConverter over it, without learning or user dictionary
    model: object        # NeuralModel
    model_id: str
    slot: ModelSlot


def load_pipeline(args: argparse.Namespace) -> Pipeline:
    from karukan_engine.dictionary.system import SystemDictionary
    from karukan_engine.lattice.converter import LatticeConverter
    from karukan_engine.neural.model import ModelOptions
    from karukan_engine.neural.registry import load_model_by_id_or_path

    dictionary = SystemDictionary()
    model = load_model_by_id_or_path(args.model, ModelOptions(n_threads=args.threads))
    model_id = args.model or "default"
    return Pipeline(dictionary, LatticeConverter(dictionary, None, None), model, model_id, ModelSlot(model, model_id))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_common_arguments(parser)
    parser.add_argument("--fit", action="store_true", help="fit the weights on the even rows first")
    args = parser.parse_args()

    from karukan_engine.neural.converter import NeuralConverter

    pipeline = load_pipeline(args)
    dictionary, base, model, model_id, slot = (pipeline.dictionary, pipeline.base, pipeline.model,
                                               pipeline.model_id, pipeline.slot)
    settings = ConversionSettings().for_model(model_id)
    sets = with_no_context(load_sets(args.dev, args.limit, docs=not args.no_docs))

    def dictionary_top(item: EvalItem) -> list[str]:
        return [c.surface for c in base.candidates(request_of(item), N_CANDIDATES)]

    weights, fitted = settings.weights, None
    if args.fit:
        # The no-context copies repeat rows already fitted with their context.
        fit_items = [it for name, items in sets.items() if not name.endswith(NO_CONTEXT)
                     for it in items[0::2]]
        fitter = FusedConverter(base, [slot], settings, lexicon=dictionary)
        evidence = gather_evidence(fitter, slot, fit_items)
        fitted = fit(fit_items, evidence, [dictionary_top(it) for it in fit_items])
        weights = fitted["weights"]
        fitted["weights"] = weights.__dict__
        fitted["fit_items"] = len(fit_items)
        print(f"fit on {len(fit_items)} even rows: best grid point {fitted['best_grid_point']} "
              f"+{fitted['fit_wins']} -{fitted['fit_losses']} vs dictionary "
              f"(one-sided p {fitted['fit_p_one_sided']:.3f}) -> weights {weights}")

    rerank = FusedConverter(base, [slot], replace(settings, weights=weights), lexicon=dictionary)
    verify = FusedConverter(base, [slot], replace(settings, scheme="verify", weights=weights), lexicon=dictionary)
    neural = NeuralConverter(model)
    results: dict = {}
    for set_name, items in sets.items():
        held_out = items[1::2]
        runs = {"dictionary": timed(held_out, dictionary_top),
                "model": timed(held_out, lambda it: [c.surface for c in neural.candidates(request_of(it), N_CANDIDATES)])}
        for system, fused in (("fused-rerank", rerank), ("fused-verify", verify)):
            runs[system] = timed(held_out, lambda it, f=fused: [c.surface for c in f.candidates(request_of(it), N_CANDIDATES)])
        for system, run in runs.items():
            summary = row(held_out, run, runs["dictionary"] if system != "dictionary" else None)
            results.setdefault(set_name, {})[system] = summary
            print(format_row(set_name, system, summary), flush=True)
    if args.json:
        args.json.write_text(json.dumps({"model": model_id, "limit": args.limit, "fitted": fitted,
                                         "weights": weights.__dict__, "results": results},
                                        ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
