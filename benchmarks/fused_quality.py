"""Quality of the fused pipeline vs the dictionary alone vs the model alone, and weight fitting.

Every dev set is sampled (every k-th item) and split in two: even rows fit the fusion weights,
odd rows are held out and every system is scored on them. AJIMEE-Bench is never used here.

    python benchmarks/fused_quality.py --model karukan-bundled --limit 700 --fit --json quality.json

Dev sets: the three in karukan_engine/data/eval/ (Mozc's evaluation set, the Anthy corpus, Anthy
with left context) and, where the training pipeline has built them locally (never committed),
its held-out sets: every set in `pairs/heldout/` (the docs hold-out among them); a set not
built is skipped with a note. Every set with left context is also scored without it
("(no context)"); those copies are never fitted on.

Systems: dictionary (lattice N-best), model (beam search alone), fused-rerank (one score over
lattice cost, model NLL and learning: karukan_engine.conversion.ranking), fused-verify
(Zenzai-style verification) and fused-live (live conversion's text: the model's refinement where
the weights let it come first, else the dictionary's). Besides Acc@1 (with a 95 % Wilson
interval), Recall@5 and MinCER, every system is compared with the dictionary item by item: items
it fixes (+), items it breaks (-) and the two-sided sign-test p of that split; --pairs FILE
writes those items.

--weights K=V,...: rank with these weights instead of the model's fitted ones.
--fit: fits the weights on the fit rows first (tools/fusion_fit.py: a grid search over the weights
that gives the model a say only when it fixes significantly more fit rows than it breaks).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable, Sequence

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from karukan_engine.conversion.fused import FusedConverter, bundled_ngram  # noqa: E402
from karukan_engine.lm.char_ngram import BUNDLED as BUNDLED_NGRAM  # noqa: E402
from karukan_engine.conversion.model_slot import ModelSlot  # noqa: E402
from karukan_engine.conversion.settings import ConversionSettings, FusionWeights  # noqa: E402
from karukan_engine.kana import to_hiragana  # noqa: E402
from karukan_engine.evaluation.metrics import EvalItem, load_items  # noqa: E402
# The weight fit, and the statistics this comparison shares with it, belong to the build tool.
from tools.fusion_fit import (N_CANDIDATES, fit, gather_evidence, paired, request_of, summary_of,  # noqa: E402
                              top_correct)

EVAL_DIR = ROOT / "karukan_engine" / "data" / "eval"
DEV_SETS = ("mozc_evaluation.tsv", "anthy_corpus.tsv", "anthy_context.jsonl")
DOCS_SET = "docs_heldout"
NO_CONTEXT = " (no context)"
# each compared with the dictionary; fused-live: the live text (the model's refinement where the
# weights let it come first, else the dictionary's), one candidate
SYSTEMS = ("model", "fused-rerank", "fused-verify", "fused-live")
def sample(items: list[EvalItem], limit: int) -> list[EvalItem]:
    step = max(1, len(items) // max(1, limit))
    return items[::step][:limit]


def pair_items(path: Path) -> list[EvalItem]:
    """Training-pipeline pairs ({"context", "reading" (katakana), "surface"}) as EvalItems."""
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [EvalItem(to_hiragana(r["reading"]), (r["surface"],), r.get("context", "")) for r in rows]


def work_sets(limit: int, docs: bool = True) -> dict[str, list[EvalItem]]:
    """The training pipeline's held-out sets, when built here (never committed): every set
    `python -m karukan_engine.training devsets` writes (the docs hold-out first, then the
    annotated Wikipedia splits, chat, the white paper, Wikinews, laws ...)."""
    from karukan_engine.training.paths import work_dir

    paths = {path.stem: path for path in sorted((work_dir() / "pairs" / "heldout").glob("*.jsonl"))}
    if not paths:
        print("note: no held-out sets (the training pipeline has not built pairs/heldout/ here)")
    docs_path = paths.pop(DOCS_SET, None)
    if docs and docs_path is None:
        print(f"note: {DOCS_SET} skipped (the devsets stage has not built it here)")
    if docs and docs_path is not None:
        paths = {DOCS_SET: docs_path, **paths}
    return {name: sample(pair_items(path), limit) for name, path in paths.items()}


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


def changed_rows(items: Sequence[EvalItem], run: Run, dictionary: Run) -> dict[str, list[dict]]:
    """The rows a system fixes and breaks against the dictionary: reading, the end of the left
    context, both first candidates and the gold text."""
    out: dict[str, list[dict]] = {"fixed": [], "broken": []}
    for item, ours, theirs in zip(items, run.outputs, dictionary.outputs):
        a, b = top_correct(item, ours), top_correct(item, theirs)
        if a != b:
            out["fixed" if a else "broken"].append({
                "reading": item.reading, "context": (item.context or "")[-20:],
                "dictionary": theirs[0] if theirs else "", "system": ours[0] if ours else "",
                "gold": item.outputs[0]})
    return out


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
    ngram: object        # LoadHandle of the bundled character n-gram (None: no file)
    judged: object = None   # --lm: the LatticeConverter with both bundled n-grams and the corpus nouns (the product's)


def load_pipeline(args: argparse.Namespace, lm: bool = False) -> Pipeline:
    from karukan_engine.dictionary.system import SystemDictionary
    from karukan_engine.lattice.converter import LatticeConverter
    from karukan_engine.neural.model import ModelOptions
    from karukan_engine.neural.registry import load_model_by_id_or_path

    dictionary = SystemDictionary()
    model = load_model_by_id_or_path(args.model, ModelOptions(n_threads=args.threads))
    model_id = args.model or "default"
    ngram = None
    if BUNDLED_NGRAM.is_file():   # the fit weighs it whatever the weights it starts from
        ngram = bundled_ngram()
        ngram.wait()
    # lm: also the product's lattice, with both bundled n-grams and the corpus nouns
    judged = LatticeConverter.judged(dictionary) if lm else None
    return Pipeline(dictionary, LatticeConverter(dictionary, None, None), model, model_id,
                    ModelSlot(model, model_id), ngram, judged)


def parse_weights(text: str) -> FusionWeights:
    """`lattice=1,nll=0.5,...` as FusionWeights (learning 1 unless given)."""
    values = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        key, _, value = part.partition("=")
        key, value = key.strip(), value.strip()
        if key == "keep_base_order":
            values[key] = value.lower() in ("1", "true", "yes")
        else:
            values[key] = None if value == "none" else float(value)
    return FusionWeights(**{"learning": 1.0, **values})


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_common_arguments(parser)
    parser.add_argument("--fit", action="store_true", help="fit the weights on the even rows first")
    parser.add_argument("--lm", action="store_true",
                        help="as the product converts: the lattice judges with the bundled character and word "
                             "n-grams (row lattice-lm, `--no-model`) and the fused systems use it; every row "
                             "is still compared with the dictionary alone")
    parser.add_argument("--try-weights", action="append", default=[], metavar="K=V,...",
                        help="a point the fit tries besides its grid, e.g. "
                             "lattice=1.2,nll=0.6,nll_total=0.07,unaligned=2 (repeatable)")
    parser.add_argument("--sets", nargs="*", metavar="NAME",
                        help="score only these sets (and their no-context copies); not with --fit, "
                             "which fits on every set")
    parser.add_argument("--systems", nargs="*", choices=SYSTEMS, default=list(SYSTEMS),
                        help="systems to score besides the dictionary (default: all)")
    parser.add_argument("--weights", type=parse_weights, metavar="K=V,...",
                        help="rank with these weights instead of the model's fitted ones "
                             "(e.g. the fit's before a change: ...,margin=0.5,keep_base_order=true)")
    parser.add_argument("--pairs", type=Path,
                        help="write every row each system fixes or breaks against the dictionary here "
                             "(held-out rows are corpus text: keep the file out of the repository)")
    parser.add_argument("--space-budget-ms", type=float, default=math.inf,
                        help="the fused systems' Space budget (default: none, all of the model work); "
                             "a finite one makes the figures depend on this machine's speed")
    args = parser.parse_args()
    if args.fit and args.weights:
        parser.error("--fit chooses the weights: no --weights with it")
    if args.fit and not math.isinf(args.space_budget_ms):
        parser.error("--fit weighs all of the model work: no --space-budget-ms with it")
    if args.sets and args.fit:
        parser.error("--sets leaves dev sets out, and the fit must see every set")

    from karukan_engine.neural.converter import NeuralConverter

    pipeline = load_pipeline(args, lm=args.lm)
    dictionary, base, model, model_id, slot = (pipeline.dictionary, pipeline.base, pipeline.model,
                                               pipeline.model_id, pipeline.slot)
    # the fused systems build on the product's lattice with --lm, on the dictionary alone without
    fused_base = pipeline.judged if pipeline.judged is not None else base
    # Every item gets the whole model pass (figures must not depend on this machine's speed),
    # unless --space-budget-ms asks what an unprepared Space within that budget answers.
    settings = replace(ConversionSettings().for_model(model_id), space_budget_ms=args.space_budget_ms)
    sets = with_no_context(load_sets(args.dev, args.limit, docs=not args.no_docs))
    if args.sets:
        unknown = set(args.sets) - set(sets)
        if unknown:
            parser.error(f"no such set: {', '.join(sorted(unknown))} (have: {', '.join(sets)})")
        sets = {name: items for name, items in sets.items() if name.removesuffix(NO_CONTEXT) in args.sets}

    def dictionary_top(item: EvalItem) -> list[str]:
        return [c.surface for c in base.candidates(request_of(item), N_CANDIDATES)]

    weights, fitted = args.weights or settings.weights, None
    if args.fit:
        # The no-context copies repeat rows already fitted with their context.
        fit_sets = [(name, it) for name, items in sets.items() if not name.endswith(NO_CONTEXT)
                    for it in items[0::2]]
        fit_items = [it for _name, it in fit_sets]
        fitter = FusedConverter(fused_base, [slot], settings, lexicon=fused_base.lexicon, ngram=pipeline.ngram)
        evidence = gather_evidence(fitter, slot, fit_items)
        fitted = fit(fit_items, evidence, [dictionary_top(it) for it in fit_items],
                     groups=[name for name, _it in fit_sets],
                     extra=[parse_weights(text) for text in args.try_weights])
        weights = fitted["weights"]
        fitted["weights"] = weights.__dict__
        fitted["fit_items"] = len(fit_items)
        print(f"fit on {len(fit_items)} even rows: best grid point {fitted['best_grid_point']} "
              f"+{fitted['fit_wins']} -{fitted['fit_losses']} vs dictionary "
              f"(one-sided p {fitted['fit_p_one_sided']:.3f}) -> weights {weights}")

    # the lexicon as the product builds it (build_fused_converter): the base's, with its corpus words
    rerank = FusedConverter(fused_base, [slot], replace(settings, weights=weights), lexicon=fused_base.lexicon,
                            ngram=pipeline.ngram if weights.ngram else None)
    verify = FusedConverter(fused_base, [slot], replace(settings, scheme="verify", weights=weights),
                            lexicon=fused_base.lexicon)
    neural = NeuralConverter(model)
    results: dict = {}
    pairs: dict = {}
    for set_name, items in sets.items():
        held_out = items[1::2]
        runs = {"dictionary": timed(held_out, dictionary_top)}
        if pipeline.judged is not None:
            runs["lattice-lm"] = timed(held_out, lambda it: [c.surface for c in pipeline.judged.candidates(
                request_of(it), N_CANDIDATES)])
        if "model" in args.systems:
            runs["model"] = timed(held_out, lambda it: [c.surface for c in neural.candidates(request_of(it), N_CANDIDATES)])
        for system, fused in (("fused-rerank", rerank), ("fused-verify", verify)):
            if system in args.systems:
                runs[system] = timed(held_out, lambda it, f=fused: [c.surface for c in f.candidates(request_of(it), N_CANDIDATES)])
        if "fused-live" in args.systems:
            runs["fused-live"] = timed(held_out, lambda it: [rerank.live_refined(request_of(it))
                                                             or rerank.live(request_of(it))])
        for system, run in runs.items():
            summary = row(held_out, run, runs["dictionary"] if system != "dictionary" else None)
            results.setdefault(set_name, {})[system] = summary
            print(format_row(set_name, system, summary), flush=True)
            if system != "dictionary":
                pairs.setdefault(set_name, {})[system] = changed_rows(held_out, run, runs["dictionary"])
    if args.pairs:
        args.pairs.write_text(json.dumps(pairs, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    if args.json:
        args.json.write_text(json.dumps({"model": model_id, "limit": args.limit, "fitted": fitted,
                                         "weights": weights.__dict__, "results": results},
                                        ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
