"""Greedy conversions of many input contexts at once: batched in one GreedyPool vs one by one.

N sessions (1, 4, 16) each type a different dev-set reading, one kana per round, all ready
together (a burst of keys across input contexts). Every round converts every session's reading:

  switching  one GreedyDecoder (one sequence) serving all sessions in turn, saving and restoring
             each session's sequence state (what one worker thread does today)
  one by one a GreedyPool with a sequence id per session, one job per call
  batched    the same pool, all sessions' jobs in one generate_many call: one llama_decode for
             every prompt tail, then one per output step for all unfinished jobs

Random weights in a real shape (or --model); every call generates exactly --tokens tokens (stop
tokens ignored), so every method does the same work; results are checked equal across methods.
--drafts none (default) measures batching alone; --drafts auto adds each session's previous
output as the draft (flattering with random weights, which repeat themselves).

    python benchmarks/greedy_pool_bench.py --json pool.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from karukan_engine.evaluation.metrics import load_items  # noqa: E402
from karukan_engine.neural.greedy import GreedyDecoder  # noqa: E402
from karukan_engine.neural.greedy_pool import GreedyJob, GreedyPool  # noqa: E402
from karukan_engine.neural.model import ModelOptions, load_model  # noqa: E402
from karukan_testing.tiny_models import real_shape, write_model_dir  # noqa: E402

DEV_SET = ROOT / "karukan_engine" / "data" / "eval" / "mozc_evaluation.tsv"
NO_STOP: frozenset[int] = frozenset()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shape", default="gpt2-26m", help="real model shape (random weights)")
    parser.add_argument("--model", type=Path, help="a GGUF file or model directory instead")
    parser.add_argument("--sessions", default="1,4,16")
    parser.add_argument("--kana", type=int, default=8, help="kana typed per session (rounds)")
    parser.add_argument("--tokens", type=int, default=12, help="tokens generated per conversion")
    parser.add_argument("--drafts", choices=("none", "auto"), default="none")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    counts = [int(n) for n in args.sessions.split(",")]
    readings = [it.reading for it in load_items(DEV_SET) if len(it.reading) >= args.kana][::5][: max(counts)]
    draft = [] if args.drafts == "none" else None
    if args.model:
        model, name = load_model(args.model, ModelOptions(n_threads=args.threads)), str(args.model.name)
    else:
        with tempfile.TemporaryDirectory(prefix="karukan-pool-") as tmp:
            write_model_dir(Path(tmp), real_shape(args.shape))
            model = load_model(Path(tmp), ModelOptions(n_threads=args.threads))
        name = f"{args.shape} (random weights)"
    print(f"{name}, {args.tokens} tokens per conversion, stop tokens ignored, drafts "
          f"{args.drafts}, {args.threads} thread(s), {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}")
    print(f"{'sessions':>8} {'method':<11} {'ms/round':>9} {'ms/key':>8} {'speed-up':>8}")
    rows = []
    try:
        for n in counts:
            owners = list(range(n))
            rounds = [[GreedyJob(o, model.prompt_ids(readings[o][:k]), args.tokens, NO_STOP, draft) for o in owners]
                      for k in range(1, args.kana + 1)]
            session = GreedyDecoder(model.llama, args.threads)
            single = GreedyPool(model.llama, args.threads, slots=n)
            batched = GreedyPool(model.llama, args.threads, slots=n)

            def switching(jobs):
                out = []
                for job in jobs:
                    session.switch_to(job.owner)
                    out.append(session.generate(job.prompt, job.max_new, job.stop_ids, job.draft))
                return out

            methods = {"switching": switching,
                       "one by one": lambda jobs: [single.generate_many([job])[0] for job in jobs],
                       "batched": batched.generate_many}
            times: dict[str, list[float]] = {name: [] for name in methods}
            for k, jobs in enumerate(rounds):
                results = []
                for name, run in methods.items():  # round-robin: load swings hit every method alike
                    started = time.perf_counter()
                    results.append([r[0] for r in run(jobs)])
                    if k > 0:  # the first round prefills every prompt from nothing
                        times[name].append(time.perf_counter() - started)
                assert all(r == results[0] for r in results), "every method must give plain greedy"
            session.close()
            single.close()
            batched.close()
            base = statistics.median(times["switching"])
            for name, values in times.items():
                per_round = statistics.median(values)
                row = {"sessions": n, "method": name, "median_ms_per_round": round(1000 * per_round, 2),
                       "median_ms_per_key": round(1000 * per_round / n, 2), "speedup": round(base / per_round, 2)}
                rows.append(row)
                print(f"{n:>8} {name:<11} {row['median_ms_per_round']:>9.1f} {row['median_ms_per_key']:>8.1f} {row['speedup']:>7.2f}x")
    finally:
        model.close()
    if args.json:
        args.json.write_text(json.dumps({"model": name, "tokens": args.tokens,
                                         "drafts": args.drafts, "threads": args.threads, "rounds": args.kana - 1,
                                         "rows": rows}, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
