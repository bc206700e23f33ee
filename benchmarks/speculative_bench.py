"""Cost per key of greedy live conversion: with and without the previous output as a draft.

Dev-set readings are typed kana by kana, with a backspace and retype now and then; each new
sentence has the previous one as left context (a change the draft cannot follow). For every key
the model converts the reading. Every method runs in its own GreedyDecoder (so each sees the KV
cache a live session would) and must return plain greedy's tokens. Methods:

  plain        no draft: KV reuse of the common prefix, one llama_decode per output token
  auto         the session's automatic draft (what live conversion does): the previous output,
               only when the prompt is a near continuation of the previous one
  always       the previous output as the draft on every key, whatever changed
  right draft  the draft is exactly the output (best case: one batched llama_decode)
  wrong draft  every draft token is wrong (worst case: the batch is wasted)

The second table is the measurement behind the automatic rule (greedy.AUTO_DRAFT_MAX_CHANGED):
keys grouped by how many prompt tokens changed since the previous key, with the draft tokens
accepted and the cost of `always` against `plain` in each group.

Random weights (the default, a real shape) need --tokens N > 0: every call generates exactly N
tokens, stop tokens ignored, so the work is the same. With --model (real weights) --tokens 0
stops where the model stops (every method produces the same tokens, so the work stays equal).

    python benchmarks/speculative_bench.py --shape gpt2-26m --json spec.json
    python benchmarks/speculative_bench.py --model karukan-bundled --tokens 0
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

from karukan_engine.evaluation.metrics import load_items  # noqa: E402
from karukan_engine.neural.greedy import GreedyDecoder  # noqa: E402
from karukan_engine.neural.greedy_pool import common_prefix_len  # noqa: E402
from karukan_engine.neural.model import ModelOptions, load_model  # noqa: E402
from karukan_testing.tiny_models import real_shape, write_model_dir  # noqa: E402

DEV_SET = ROOT / "karukan_engine" / "data" / "eval" / "mozc_evaluation.tsv"
METHODS = ("plain", "auto", "always", "right draft", "wrong draft")
CHANGE_GROUPS = ((0, 0), (1, 1), (2, 2), (3, 3), (4, 4), (5, 8), (9, 10_000))


def percentile(values, q):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q / 100 * (len(ordered) - 1))))]


def typing_keys(readings: list[str], rng: random.Random) -> list[tuple[str, str]]:
    """(reading so far, left context) per key: kana by kana, sometimes one kana deleted and
    retyped; the previous sentence is the next one's left context."""
    keys: list[tuple[str, str]] = []
    context = ""
    for reading in readings:
        for k in range(1, len(reading) + 1):
            keys.append((reading[:k], context))
            if k >= 3 and rng.random() < 0.2:
                keys.append((reading[: k - 1], context))  # backspace
                keys.append((reading[:k], context))  # retype
        context = reading
    return keys


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shape", default="gpt2-26m", help="real model shape (random weights)")
    parser.add_argument("--model", help="a models.toml id or GGUF path instead (real weights)")
    parser.add_argument("--sentences", type=int, default=4)
    parser.add_argument("--tokens", type=int, default=12,
                        help="tokens generated per key, stop tokens ignored; 0 with --model: stop "
                             "where the model stops")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    natural = bool(args.model) and args.tokens == 0
    if args.tokens <= 0 and not natural:
        parser.error("--tokens 0 needs --model (random weights never stop sensibly)")

    rng = random.Random(0)
    readings = [it.reading for it in load_items(DEV_SET) if 8 <= len(it.reading) <= 24][::7][: args.sentences]
    keys = typing_keys(readings, rng)
    if args.model:
        from karukan_engine.neural.registry import load_model_by_id_or_path

        model = load_model_by_id_or_path(args.model, ModelOptions(n_threads=args.threads))
        name = f"{args.model} (real weights)"
    else:
        with tempfile.TemporaryDirectory(prefix="karukan-spec-") as tmp:
            write_model_dir(Path(tmp), real_shape(args.shape))
            model = load_model(Path(tmp), ModelOptions(n_threads=args.threads))
        name = f"{args.shape} (random weights)"
    stop = model.stop_ids if natural else frozenset()
    sessions = {method: GreedyDecoder(model.llama, args.threads) for method in METHODS}
    times: dict[str, list[float]] = {method: [] for method in METHODS}
    accepted: dict[str, list[int]] = {"auto": [], "always": []}
    by_change: list[tuple[int, int, float, float]] = []  # changed tokens, accepted, always s, plain s
    previous_prompt: list[int] = []
    previous_out: list[int] = []
    try:
        for reading, context in keys:
            prompt = model.prompt_ids(reading, context)
            budget = len(reading) + 8 if natural else args.tokens
            expected = None
            for method in METHODS:
                draft = {"plain": [], "auto": None, "always": previous_out,
                         "right draft": expected,
                         "wrong draft": [(t + 1 + rng.randrange(50)) % model.llama.n_vocab for t in expected or []]}[method]
                session = sessions[method]
                started = time.perf_counter()
                out, _, _ = session.generate(prompt, budget, stop, draft=draft)
                times[method].append(time.perf_counter() - started)
                if expected is None:
                    expected = out
                assert out == expected, f"{method} must equal plain greedy"
                if method in accepted:
                    accepted[method].append(session.accepted_tokens)
            if previous_prompt:  # the first key has nothing to draft from
                changed = len(prompt) - common_prefix_len(previous_prompt, prompt)
                by_change.append((changed, accepted["always"][-1], times["always"][-1], times["plain"][-1]))
            previous_prompt, previous_out = prompt, expected
    finally:
        for session in sessions.values():
            session.close()
        model.close()

    tokens = "tokens until the model stops" if natural else f"{args.tokens} tokens per key, stop tokens ignored"
    print(f"{name}, {tokens}, {args.threads} thread(s), {os.cpu_count()} CPUs, {len(keys)} keys; "
          f"mean accepted draft tokens: auto {statistics.mean(accepted['auto']):.1f}, "
          f"always {statistics.mean(accepted['always']):.1f}")
    print(f"{'method':<12} {'p50 ms':>8} {'p95 ms':>8} {'mean ms':>8}")
    rows = {}
    for method, values in times.items():
        rows[method] = {"p50_ms": round(1000 * percentile(values, 50), 2),
                        "p95_ms": round(1000 * percentile(values, 95), 2),
                        "mean_ms": round(1000 * statistics.mean(values), 2)}
        print(f"{method:<12} {rows[method]['p50_ms']:>8.1f} {rows[method]['p95_ms']:>8.1f} {rows[method]['mean_ms']:>8.1f}")

    print("\nprevious output as the draft, by prompt tokens changed since the previous key:")
    print(f"{'changed':<8} {'keys':>5} {'accepted':>9} {'always ms':>10} {'plain ms':>9} {'ratio':>6}")
    groups = []
    for low, high in CHANGE_GROUPS:
        members = [m for m in by_change if low <= m[0] <= high]
        if not members:
            continue
        always_ms = 1000 * statistics.mean(m[2] for m in members)
        plain_ms = 1000 * statistics.mean(m[3] for m in members)
        group = {"changed": f"{low}" if low == high else f"{low}-{high}" if high < 10_000 else f">={low}",
                 "keys": len(members), "mean_accepted": round(statistics.mean(m[1] for m in members), 2),
                 "always_ms": round(always_ms, 2), "plain_ms": round(plain_ms, 2)}
        groups.append(group)
        print(f"{group['changed']:<8} {len(members):>5} {group['mean_accepted']:>9.1f} {always_ms:>10.1f} "
              f"{plain_ms:>9.1f} {always_ms / plain_ms:>6.2f}")
    if args.json:
        args.json.write_text(json.dumps({"model": name, "random_weights": not args.model, "tokens": args.tokens,
                                         "threads": args.threads, "keys": len(keys),
                                         "mean_accepted": {k: statistics.mean(v) for k, v in accepted.items()},
                                         "methods": rows, "by_change": groups}, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
