"""What each half of the bundled model adds to the fused ranking: the neural model, the character
n-gram, and both (issue #12).

The sets are sampled as benchmarks/fused_quality.py samples them (with the no-context copies), and
every item's candidate pool and evidence (path costs, model NLLs, n-gram scores) is gathered once,
as FusedConverter ranks it. Then, per variant, tools/fusion_fit.fit searches its grid on the even
rows (pooled; no dev set may lose) and the chosen weights rank the odd rows, which are reported per
set against the dictionary: Acc@1 after NFKC, rows fixed (+) and broken (-), the two-sided sign
test. Variants: both terms (the shipped grid), the neural model only (n-gram weight 0), the n-gram
only (NLL weights 0).

    python benchmarks/fusion_ablation.py --model karukan-bundled --limit 400 --threads 1 --json ablation.json
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from fused_quality import NO_CONTEXT, add_common_arguments, load_pipeline, load_sets, with_no_context  # noqa: E402
from tools import fusion_fit  # noqa: E402

from karukan_engine.conversion.fused import FusedConverter  # noqa: E402
from karukan_engine.conversion.settings import ConversionSettings  # noqa: E402

VARIANTS = {
    "model + n-gram": fusion_fit.GRID,
    "model only": {**fusion_fit.GRID, "ngram": (0.0,)},
    "n-gram only": {**fusion_fit.GRID, "nll": (0.0,), "nll_total": (0.0,)},
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_common_arguments(parser)
    args = parser.parse_args()

    pipeline = load_pipeline(args)
    if pipeline.ngram is None:
        parser.error("no bundled n-gram file: run `python -m karukan_engine.training ngram` first")
    fused = FusedConverter(pipeline.base, [pipeline.slot], ConversionSettings(), lexicon=pipeline.dictionary,
                           ngram=pipeline.ngram)
    sets = with_no_context(load_sets(args.dev, args.limit, docs=not args.no_docs))
    gathered = {}
    for name, items in sets.items():
        evidence = fusion_fit.gather_evidence(fused, pipeline.slot, items)
        dictionary = [[c.surface for c in pipeline.base.candidates(fusion_fit.request_of(it), fusion_fit.N_CANDIDATES)]
                      for it in items]
        gathered[name] = (items, evidence, dictionary)
        print(f"gathered {name}: {len(items)} items", flush=True)

    # The no-context copies repeat rows already fitted with their context.
    fit_names = [n for n in sets if not n.endswith(NO_CONTEXT)]
    fit_rows = [(n, i, e, d) for n in fit_names for i, e, d in zip(*(part[0::2] for part in gathered[n]))]
    results = {}
    for variant, grid in VARIANTS.items():
        fitted = fusion_fit.fit([r[1] for r in fit_rows], [r[2] for r in fit_rows], [r[3] for r in fit_rows],
                                groups=[r[0] for r in fit_rows], grid=grid)
        weights = fitted["weights"]
        held = {}
        for name, (items, evidence, dictionary) in gathered.items():
            items, evidence, dictionary = items[1::2], evidence[1::2], dictionary[1::2]
            ours = [fusion_fit.ranked_surfaces(i, e, weights) for i, e in zip(items, evidence)]
            versus = fusion_fit.paired(items, ours, dictionary)
            held[name] = {"rows": len(items), "dictionary": fusion_fit.summary_of(items, dictionary)["acc1_nfkc"],
                          "fused": fusion_fit.summary_of(items, ours)["acc1_nfkc"],
                          "wins": versus.wins, "losses": versus.losses, "p": versus.p}
        results[variant] = {"fit": {**fitted, "weights": weights.__dict__}, "held_out": held}
        print(f"== {variant}: weights {weights.__dict__}; fit +{fitted['fit_wins']} -{fitted['fit_losses']} "
              f"(one-sided p {fitted['fit_p_one_sided']:.4f}, significant {fitted['significant']})")
        for name, h in held.items():
            print(f"   {name:<34} {h['rows']:>4}  dictionary {100 * h['dictionary']:5.1f} %  fused "
                  f"{100 * h['fused']:5.1f} %  +{h['wins']} -{h['losses']} (p {h['p']:.3f})", flush=True)
    if args.json:
        args.json.write_text(json.dumps({"model": args.model or "default", "limit": args.limit, "variants": results},
                                        ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
