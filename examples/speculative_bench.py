"""Cost per key of greedy live conversion: plain vs speculative (previous output as the draft).

Readings from the dev set are typed kana by kana; for every prefix the model converts the
reading. Every method generates exactly --tokens tokens (stop tokens ignored), so the work is
the same and the timings compare. The model has random weights in a real model's shape (speed
does not depend on the weights), or is a real one (--model), whose drafts agree as real ones do.
Methods:

  plain        GreedySession: KV reuse of the common prefix, one llama_decode per output token
  speculative  the previous key's output as the draft (what live conversion does)
  right draft  the draft is exactly the output (best case: one batched llama_decode)
  wrong draft  every draft token is wrong (worst case: the batch is wasted)

    python examples/speculative_bench.py --shape gpt2-26m --json spec.json
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from karukan_engine.conversion.speculative import SpeculativeGreedy  # noqa: E402
from karukan_engine.evaluation.metrics import load_items  # noqa: E402
from karukan_engine.neural.greedy import GreedySession  # noqa: E402
from karukan_engine.neural.model import ModelOptions, load_model  # noqa: E402
from karukan_engine.neural.testing import real_shape, write_model_dir  # noqa: E402

DEV_SET = ROOT / "karukan_engine" / "data" / "eval" / "mozc_evaluation.tsv"


def percentile(values, q):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q / 100 * (len(ordered) - 1))))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shape", default="gpt2-26m", help="real model shape (random weights)")
    parser.add_argument("--model", help="a models.toml id or GGUF path instead (real weights)")
    parser.add_argument("--sentences", type=int, default=8)
    parser.add_argument("--tokens", type=int, default=12,
                        help="tokens generated per key, stop tokens ignored (random weights); "
                             "0 with --model: stop where the model stops (both methods produce the "
                             "same tokens, so the work stays equal)")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()

    readings = [it.reading for it in load_items(DEV_SET) if 8 <= len(it.reading) <= 24][:: 7][: args.sentences]
    if args.model:
        from karukan_engine.neural.registry import load_model_by_id_or_path

        model = load_model_by_id_or_path(args.model, ModelOptions(n_threads=args.threads))
        name = f"{args.model} (real weights)"
    else:
        with tempfile.TemporaryDirectory(prefix="karukan-spec-") as tmp:
            write_model_dir(Path(tmp), real_shape(args.shape))
            model = load_model(Path(tmp), ModelOptions(n_threads=args.threads))
        name = f"{args.shape} (random weights)"
    rng = random.Random(0)
    natural = bool(args.model) and args.tokens == 0
    none: frozenset[int] = model.stop_ids if natural else frozenset()
    plain = GreedySession(model.llama, args.threads)
    spec = SpeculativeGreedy(model.llama, args.threads)
    times: dict[str, list[float]] = {"plain": [], "speculative": [], "right draft": [], "wrong draft": []}
    accepted: list[int] = []
    try:
        for reading in readings:
            previous: list[int] = []
            for k in range(2, len(reading) + 1):
                prompt = model.prompt_ids(reading[:k])
                budget = k + 8 if natural else args.tokens
                t0 = time.perf_counter()
                expected, _, _ = plain.generate(prompt, budget, none)
                times["plain"].append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                out, _, _ = spec.generate(prompt, previous, budget, none)
                times["speculative"].append(time.perf_counter() - t0)
                accepted.append(spec.accepted)
                assert out == expected, "speculative greedy must equal plain greedy"
                t0 = time.perf_counter()
                spec.generate(prompt, expected, budget, none)
                times["right draft"].append(time.perf_counter() - t0)
                wrong = [(t + 1 + rng.randrange(50)) % model.llama.n_vocab for t in expected]
                t0 = time.perf_counter()
                spec.generate(prompt, wrong, budget, none)
                times["wrong draft"].append(time.perf_counter() - t0)
                previous = out
    finally:
        plain.close()
        spec.close()
        model.close()

    tokens = "tokens until the model stops" if natural else f"{args.tokens} tokens per key"
    print(f"{name}, {tokens}, {args.threads} thread(s), "
          f"{os.cpu_count()} CPUs, {len(times['plain'])} keys; mean accepted draft tokens "
          f"{statistics.mean(accepted):.1f}")
    print(f"{'method':<12} {'p50 ms':>8} {'p95 ms':>8} {'mean ms':>8}")
    rows = {}
    for name, values in times.items():
        rows[name] = {"p50_ms": round(1000 * percentile(values, 50), 2),
                      "p95_ms": round(1000 * percentile(values, 95), 2),
                      "mean_ms": round(1000 * statistics.mean(values), 2)}
        print(f"{name:<12} {rows[name]['p50_ms']:>8.1f} {rows[name]['p95_ms']:>8.1f} {rows[name]['mean_ms']:>8.1f}")
    if args.json:
        args.json.write_text(json.dumps({"model": name, "random_weights": not args.model, "tokens": args.tokens,
                                         "threads": args.threads, "keys": len(times["plain"]),
                                         "mean_accepted": statistics.mean(accepted), "methods": rows},
                                        indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
