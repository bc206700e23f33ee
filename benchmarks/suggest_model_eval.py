"""Does the model make prediction better? An offline check of the suggestion list the engine
shows, from the dictionary alone and with the model's ranking, given the left context.

For each held-out item of the eval set (reading, output, left context), the first word is the
longest dictionary reading (3+ characters) that starts the item's reading and has an entry
spelling the start of the output. Its first `--typed` characters are "typed"; a hit@k is the
word's spelling among the first k entries of the list (3 dictionary completions: what
`[suggest]` shows with an empty learning history), from:

  dictionary   FusedConverter.suggestions: cost + 500·ln(50·remaining characters)
  model        FusedConverter.refined_suggestions: the best suggest.MODEL_POOL completions
               ranked again by cost + 500 × the model's NLL of each spelling (nats, given its
               own reading and the left context), only completions within
               suggest.MODEL_MARGIN of the best one's cost reordered — what the engine shows
               once the model's ranking arrives
  margin M     (--margins) the same pool and scores with a margin of M instead (inf: the whole
               pool reordered, the rule before issue 30; 0: ties only)

    python benchmarks/suggest_model_eval.py [--items 1000] [--typed 2] [--model ID] [--margins 0,500,inf] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from karukan_engine.dictionary.system import SystemDictionary  # noqa: E402

EVAL = Path(__file__).resolve().parent.parent / "karukan_engine/data/eval/anthy_context.jsonl"
KS = (1, 2, 3)


def first_word(dictionary: SystemDictionary, reading: str, output: str) -> tuple[str, str] | None:
    """(reading, spelling) of the longest dictionary word that starts both reading and output."""
    for end in range(len(reading), 2, -1):
        for entry in dictionary.lookup(reading[:end]):
            if output.startswith(entry.surface) and entry.surface != reading[:end]:
                return reading[:end], entry.surface
    return None


def items(dictionary: SystemDictionary, limit: int, typed: int) -> list[dict]:
    out = []
    with EVAL.open(encoding="utf-8") as stream:
        for line in stream:
            item = json.loads(line)
            word = first_word(dictionary, item["reading"], item["outputs"][0])
            if word is None or len(word[0]) <= typed:
                continue
            out.append({"typed": word[0][:typed], "reading": word[0], "surface": word[1],
                        "context": item.get("context", "")})
            if len(out) >= limit:
                break
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=1000)
    parser.add_argument("--typed", type=int, default=2, help="characters of the word's reading typed")
    parser.add_argument("--model", default="karukan-bundled", help="a models.toml id or a GGUF path")
    parser.add_argument("--margins", default="", help="comma-separated margins to compare (cost units; inf)")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    margins = [float(m) for m in args.margins.split(",") if m.strip()]

    from karukan_engine.conversion.fused import FusedConverter
    from karukan_engine.conversion.model_slot import ModelSlot
    from karukan_engine.conversion.suggest import DICTIONARY_LIMIT, blended
    from karukan_engine.core.types import ConversionRequest
    from karukan_engine.dictionary.learning import LearningStore
    from karukan_engine.lattice.converter import LatticeConverter
    from karukan_engine.neural.model import ModelOptions
    from karukan_engine.neural.registry import load_model_by_id_or_path

    dictionary = SystemDictionary()
    model = load_model_by_id_or_path(args.model, ModelOptions(n_threads=1))
    with tempfile.TemporaryDirectory() as tmp:   # an empty learning history: dictionary completions only
        base = LatticeConverter(dictionary, None, LearningStore(Path(tmp) / "learning.json"))
        fused = FusedConverter(base, [ModelSlot(model, args.model)], lexicon=dictionary)
        cases = items(dictionary, args.items, args.typed)
        names = ["dictionary", "model"] + [f"margin {m:g}" for m in margins]
        hits = {name: {k: 0 for k in KS} for name in names}
        ms = {name: 0.0 for name in ("dictionary", "model")}
        changed = 0
        gained = {k: 0 for k in KS}   # the word in the model's first k, not in the dictionary's
        lost = {k: 0 for k in KS}
        for case in cases:
            request = ConversionRequest(case["typed"], case["context"])
            start = time.perf_counter()
            plain = [c.surface for c in fused.suggestions(request)]
            ms["dictionary"] += (time.perf_counter() - start) * 1000
            start = time.perf_counter()
            refined = fused.refined_suggestions(request)
            ms["model"] += (time.perf_counter() - start) * 1000
            ranked = [c.surface for c in refined] if refined is not None else plain
            changed += ranked != plain
            orders = [("dictionary", plain), ("model", ranked)]
            if margins:
                view = fused.suggesting.model_view(request, [])
                pool, nats = view if view is not None else ([], None)
                for m in margins:
                    order = ([c.surface for c in blended(pool, nats, m)][:DICTIONARY_LIMIT]
                             if nats is not None else plain)
                    orders.append((f"margin {m:g}", order))
            for name, order in orders:
                for k in KS:
                    hits[name][k] += case["surface"] in order[:k]
            for k in KS:
                before, after = case["surface"] in plain[:k], case["surface"] in ranked[:k]
                gained[k] += after and not before
                lost[k] += before and not after
    n = max(1, len(cases))
    results = {
        "items": len(cases), "typed": args.typed, "model": args.model, "lists_changed": changed,
        "hit_rate": {name: {f"@{k}": round(v / n, 4) for k, v in by_k.items()} for name, by_k in hits.items()},
        "gained": {f"@{k}": v for k, v in gained.items()}, "lost": {f"@{k}": v for k, v in lost.items()},
        "ms_per_item": {name: round(v / n, 3) for name, v in ms.items()},
        "machine": {"cpus": os.cpu_count(), "load_1min": os.getloadavg()[0], "python": platform.python_version()},
    }
    print(f"{len(cases)} items, {args.typed} characters typed; the model changed {changed} lists")
    print(f"{'ranking':12} " + " ".join(f"{'hit@' + str(k):>7}" for k in KS) + f" {'ms/item':>8}")
    for name, by_k in results["hit_rate"].items():
        print(f"{name:12} " + " ".join(f"{by_k['@' + str(k)]:7.3f}" for k in KS)
              + (f" {results['ms_per_item'][name]:8.2f}" if name in results["ms_per_item"] else ""))
    print("model vs dictionary, items gained / lost: "
          + ", ".join(f"@{k} +{gained[k]} / -{lost[k]}" for k in KS))
    print(f"# load {results['machine']['load_1min']:.2f}, {results['machine']['cpus']} CPUs")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2, ensure_ascii=False) + "\n")
    model.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
