"""The floor to beat (issue #12): a character 5-gram LM (stupid backoff) reranking the lattice.

A plain character n-gram model (n = 1..5, stupid backoff with alpha = 0.4) is counted over the
training parts of the general-domain corpus, and used for one thing only: to rerank the
dictionary lattice's 5-best, the very list fused_quality.py's "dictionary" system answers with,

    score(candidate) = -rank_weight * rank + lambda * log S(candidate | left context)

(rank 0 = the dictionary's best; rank_weight is fixed at 1; ties keep the dictionary's order).
lambda is chosen on a small grid on the fit rows (the even rows of every sampled dev set, pooled,
each item once, with its context) maximising Acc@1 after NFKC; every set is then reported on its
held-out (odd) rows: the dictionary vs the reranked list, with the items fixed and broken and the
two-sided sign-test p (fused_quality.py's sampling, statistics and dictionary system, imported).

    python benchmarks/ngram_baseline.py --limit 700 --json ngram_baseline.json

Training text (read in place from --corpus, never committed; held-out documents never read):
every source's training part as the language models read it (karukan_engine/training/lm_text.py),
at most --max-chars characters in all (each source cut to the same share when there is more).
Text is NFKC-normalised; every sentence starts (and ends) with a boundary symbol, so the start of
a text is a context of its own.

Dev sets: the three in karukan_engine/data/eval/ and every held-out set the devsets stage wrote
(pairs/heldout/: the docs hold-out, the Wikipedia test split, chat dialogues ...). Every set
whose items carry a left context is also reported without it ("... (no context)": the same
items, context dropped for the lattice and the LM).

The model is karukan_engine/lm/char_ngram.py's with its stupid smoothing, counted exactly (no
pruning) for this baseline; what ships beside the bundled model is smoothed with Kneser-Ney.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import time
from pathlib import Path
from typing import Sequence

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from karukan_engine.lm.char_ngram import ALPHA, ORDER, STUPID  # noqa: E402
from karukan_engine.training.ngram import build  # noqa: E402
from karukan_engine.training.sources import default_corpus_dir  # noqa: E402
from tools import fusion_fit  # noqa: E402  (the dictionary-vs-system statistics)

LAMBDA_GRID = (0.0, 0.02, 0.05, 0.1, 0.15, 0.2, 0.3, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 5.0, 10.0)
RANK_WEIGHT = 1.0


# --- evaluation -------------------------------------------------------------------------------

def fused_quality():
    """benchmarks/fused_quality.py as a module (its sampling, statistics and dictionary system)."""
    if "fused_quality" in sys.modules:
        return sys.modules["fused_quality"]
    spec = importlib.util.spec_from_file_location("fused_quality", ROOT / "benchmarks" / "fused_quality.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module   # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def rerank(candidates: Sequence[str], log_s: Sequence[float], lam: float,
           rank_weight: float = RANK_WEIGHT) -> list[str]:
    """Candidates by -rank_weight * rank + lam * log S, best first; ties keep the given order."""
    order = sorted(range(len(candidates)), key=lambda r: (-(-rank_weight * r + lam * log_s[r]), r))
    return [candidates[r] for r in order]


def acc1(items: Sequence, outputs: Sequence[Sequence[str]]) -> float:
    return sum(fusion_fit.top_correct(i, o) for i, o in zip(items, outputs)) / max(1, len(items))


def fit_lambda(items: Sequence, candidates: Sequence[Sequence[str]], scores: Sequence[Sequence[float]],
               grid: Sequence[float] = LAMBDA_GRID) -> tuple[float, dict[float, float]]:
    """The grid's lambda with the best Acc@1 (NFKC) on these rows; the smallest on a tie."""
    by_lambda = {lam: acc1(items, [rerank(c, s, lam) for c, s in zip(candidates, scores)]) for lam in grid}
    best = max(grid, key=lambda lam: (by_lambda[lam], -lam))
    return best, by_lambda


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--limit", type=int, default=700, help="items per dev set (every k-th)")
    parser.add_argument("--max-chars", type=int, default=30_000_000, help="training characters at most")
    parser.add_argument("--order", type=int, default=ORDER)
    parser.add_argument("--alpha", type=float, default=ALPHA)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--corpus", type=Path, default=default_corpus_dir(),
                        help="the corpus directory (default: $KARUKAN_CORPUS or ../shared/corpus)")
    args = parser.parse_args()

    from karukan_engine.dictionary.system import SystemDictionary
    from karukan_engine.lattice.converter import LatticeConverter
    fq = fused_quality()
    model, stats, used = build(args.corpus, args.max_chars, args.order, smoothing=STUPID, alpha=args.alpha)
    print(f"{args.order}-gram counted over {stats.characters:,} characters, {stats.sentences:,} sentences "
          f"({', '.join(f'{k} {v:,}' for k, v in used.items())}), {stats.vocabulary:,} distinct characters; "
          f"distinct n-grams {', '.join(f'{k}: {v:,}' for k, v in stats.ngrams.items())}; "
          f"{stats.seconds:.1f} s, peak RSS {stats.peak_rss_mb:.0f} MB", flush=True)

    # fused_quality.py's "dictionary" system: the lattice over the system dictionary alone.
    base = LatticeConverter(SystemDictionary(), None, None)

    def dictionary_top(item) -> list[str]:
        return [c.surface for c in base.candidates(fusion_fit.request_of(item), fusion_fit.N_CANDIDATES)]

    sets = fq.with_no_context(fq.load_sets(None, args.limit, docs=True))
    lists, scores, seconds = {}, {}, {}
    for name, items in sets.items():
        started = time.perf_counter()
        lists[name] = [dictionary_top(it) for it in items]
        dictionary_s = time.perf_counter() - started
        started = time.perf_counter()
        flat = [(c, it.context) for it, cands in zip(items, lists[name]) for c in cands]
        flat_scores = model.score_many(flat)
        scores[name], at = [], 0
        for cands in lists[name]:
            scores[name].append(list(flat_scores[at:at + len(cands)]))
            at += len(cands)
        seconds[name] = (dictionary_s, time.perf_counter() - started)

    fit_names = [n for n in sets if not n.endswith(fq.NO_CONTEXT)]
    fit_items = [it for n in fit_names for it in sets[n][0::2]]
    fit_lists = [c for n in fit_names for c in lists[n][0::2]]
    fit_scores = [s for n in fit_names for s in scores[n][0::2]]
    lam, by_lambda = fit_lambda(fit_items, fit_lists, fit_scores)
    fit_out = [rerank(c, s, lam) for c, s in zip(fit_lists, fit_scores)]
    fit_versus = fusion_fit.paired(fit_items, fit_out, fit_lists)
    fit_p = fusion_fit.sign_test(fit_versus.wins, fit_versus.losses, two_sided=False)
    print(f"fit on {len(fit_items)} even rows of {len(fit_names)} sets: lambda {lam} "
          f"(Acc@1 NFKC {100 * by_lambda[lam]:.1f} % vs dictionary {100 * by_lambda[0.0]:.1f} %, "
          f"+{fit_versus.wins} -{fit_versus.losses}, one-sided p {fit_p:.4f}); grid "
          + ", ".join(f"{g}: {100 * a:.1f}" for g, a in by_lambda.items()), flush=True)

    results = {}
    header = (f"{'dev set (held-out rows)':<34} {'n':>4}  {'dictionary':>10}  {'5-gram':>7}  "
              f"{'fixed':>5} {'broken':>6}  {'p':>6}  {'dict R@5':>8}")
    print(header)
    for name, items in sets.items():
        held = items[1::2]
        dictionary_out = lists[name][1::2]
        reranked = [rerank(c, s, lam) for c, s in zip(lists[name][1::2], scores[name][1::2])]
        dict_run = fq.Run(dictionary_out, [seconds[name][0] / max(1, len(items))] * len(held))
        lm_run = fq.Run(reranked, [(seconds[name][0] + seconds[name][1]) / max(1, len(items))] * len(held))
        dict_row, lm_row = fq.row(held, dict_run, None), fq.row(held, lm_run, dict_run)
        results[name] = {"items": len(held), "dictionary": dict_row, "ngram_rerank": lm_row}
        print(f"{name:<34} {len(held):>4}  {100 * dict_row['acc1_nfkc']:9.1f}%  {100 * lm_row['acc1_nfkc']:6.1f}%  "
              f"{lm_row['wins_vs_dictionary']:>5} {lm_row['losses_vs_dictionary']:>6}  "
              f"{lm_row['sign_test_p']:6.3f}  {100 * dict_row['recall5']:7.1f}%", flush=True)
    if args.json:
        args.json.write_text(json.dumps({
            "order": args.order, "alpha": args.alpha, "rank_weight": RANK_WEIGHT, "limit": args.limit,
            "build": {**stats.__dict__, "characters_per_part": used},
            "fit": {"items": len(fit_items), "sets": fit_names, "lambda": lam,
                    "acc1_nfkc_by_lambda": {str(k): v for k, v in by_lambda.items()},
                    "fit_wins": fit_versus.wins, "fit_losses": fit_versus.losses,
                    "fit_p_one_sided": fit_p},
            "results": results}, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
