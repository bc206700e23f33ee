#!/usr/bin/env python3
"""Neural backend benchmark: greedy, persistent greedy decoder, shared-prompt beam search and the
full re-evaluation reference, on GGUF models in the real shapes with random weights.

Random weights are fine for timing (speed does not depend on weight values) but then every
method must do the same work: each call generates exactly --tokens tokens and EOS is ignored.
The default, 15, is what a real model generates for the reading: its 14-character conversion
(私は明日東京へ行く予定でした) and EOS; `--tokens 20` is a long-output stress variant.

    python benchmarks/beam_bench.py --quick --json bench.json      # < 60 s: smallest model
    python benchmarks/beam_bench.py --json bench.json              # all shapes, threads 1 and 2

Rows: model, threads, method (greedy | beam | full_eval | greedy_incremental), beam, median_ms,
p95_ms. `greedy` is a from-scratch greedy call (empty KV cache); `greedy_incremental` is one
typed kana through the persistent session (the previous prompt is in its KV cache).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Callable

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from karukan_engine.neural.beam import BeamSearcher  # noqa: E402
from karukan_engine.neural.greedy import GreedyDecoder  # noqa: E402
from karukan_engine.neural.model import ModelOptions, NeuralModel, find_gguf, load_model  # noqa: E402
from karukan_testing.tiny_models import REAL_SHAPES, real_shape, reference_beam, write_model_dir  # noqa: E402

READING = "わたしはあしたとうきょうへいくよていでした"  # 21 kana
CONVERSION = "私は明日東京へ行く予定でした"  # what a real model writes for READING
CONTEXT = "昨日の会議で決まったとおり、"
QUANT = {"q8_0": 7, "q5_k_m": 17}  # llama_ftype values
NO_STOP: frozenset[int] = frozenset()  # EOS ignored: every call generates exactly --tokens


def build_model(shape: str, quant: str, cache: Path) -> Path:
    """<cache>/<shape>-<quant>/ with the quantized GGUF and tokenizer.json (built once)."""
    from karukan_engine.neural.runtime import llama

    llama_cpp = llama()  # initialised with llama.cpp's log silenced
    out_dir = cache / f"{shape}-{quant}"
    target = out_dir / f"{shape}-{quant}.gguf"
    if target.exists():
        return out_dir
    src_dir = write_model_dir(cache / f"{shape}-f32", real_shape(shape))
    src = src_dir / f"{shape}.gguf"
    out_dir.mkdir(parents=True, exist_ok=True)
    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = QUANT[quant]
    params.nthread = 2
    partial = target.with_suffix(".partial")
    if llama_cpp.llama_model_quantize(str(src).encode(), str(partial).encode(), params) != 0:
        raise SystemExit(f"quantizing {shape} failed")
    partial.rename(target)
    (out_dir / "tokenizer.json").write_bytes((src_dir / "tokenizer.json").read_bytes())
    src.unlink()
    return out_dir


def timed(fn: Callable[[], object], repeats: int, warmup: int = 1) -> list[float]:
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    return times


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


class Bench:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.rows: list[dict] = []
        self.overhead: list[dict] = []
        self.first_token: list[dict] = []

    def add(self, model: str, threads: int, method: str, beam: int, times: list[float], context: bool) -> None:
        # Runs with left context are told apart by a "+ctx" suffix on the model name.
        label = model + ("+ctx" if context else "")
        row = {"model": label, "threads": threads, "method": method, "beam": beam, "median_ms": round(statistics.median(times), 3), "p95_ms": round(p95(times), 3)}
        self.rows.append(row)
        print(f"{label:22} t={threads} {method:18} beam={beam:<3} median {row['median_ms']:9.2f} ms   p95 {row['p95_ms']:9.2f} ms", flush=True)

    def ratios(self) -> list[dict]:
        """Issue #4's targets per (model, threads), from the medians: beam 5 vs the full
        re-evaluation (>= 5x), beam 3 / greedy (<= 1.6), typed kana / greedy (<= 1/3)."""
        median = {(r["model"], r["threads"], r["method"], r["beam"]): r["median_ms"] for r in self.rows}
        out = []
        for model, threads in dict.fromkeys((r["model"], r["threads"]) for r in self.rows):
            def get(method: str, beam: int) -> float | None:
                return median.get((model, threads, method, beam))
            greedy, beam3, beam5 = get("greedy", 1), get("beam", 3), get("beam", 5)
            full5, typed = get("full_eval", 5), get("greedy_incremental", 1)
            row = {"model": model, "threads": threads}
            if beam5 and full5:
                row["full_eval5_over_beam5"] = round(full5 / beam5, 2)
            if greedy and beam3:
                row["beam3_over_greedy"] = round(beam3 / greedy, 3)
            if greedy and typed:
                row["typed_kana_over_greedy"] = round(typed / greedy, 3)
            out.append(row)
        return out

    def run_model(self, name: str, model: NeuralModel, threads: int) -> None:
        """Methods run round-robin (one call each per round) so that the load of a shared machine
        hits them alike."""
        args = self.args
        T = args.tokens
        llama = model.llama
        for context in (False, True) if not args.no_context_sweep else (False,):
            left = CONTEXT if context else ""
            prompt = model.prompt_ids(READING, left)
            kana_prompts = [model.prompt_ids(READING[:k], left) for k in range(1, len(READING) + 1)]
            session = GreedyDecoder(llama, threads)
            searcher = BeamSearcher(llama, threads)

            def scratch() -> None:
                session.reset()
                session.generate(prompt, T, NO_STOP)

            def first_token_typing() -> tuple[list[float], list[float]]:
                """Time to the first output token per typed kana: from scratch vs the session."""
                fresh, kept = [], []
                for p in kana_prompts[1:]:
                    session.reset()
                    start = time.perf_counter()
                    session.generate(p, 1, NO_STOP)
                    fresh.append((time.perf_counter() - start) * 1000)
                session.reset()
                session.generate(kana_prompts[0], 1, NO_STOP)
                for p in kana_prompts[1:]:
                    start = time.perf_counter()
                    session.generate(p, 1, NO_STOP)
                    kept.append((time.perf_counter() - start) * 1000)
                return fresh, kept

            def typing() -> list[float]:
                session.reset()
                session.generate(kana_prompts[0], T, NO_STOP)
                times = []
                for p in kana_prompts[1:]:
                    start = time.perf_counter()
                    session.generate(p, T, NO_STOP)
                    times.append((time.perf_counter() - start) * 1000)
                return times

            methods: list[tuple[str, int, Callable[[], object], int]] = [("greedy", 1, scratch, args.repeats)]
            for beam in args.beams:
                methods.append(("beam", beam, lambda beam=beam: searcher.search(prompt, T, beam, NO_STOP), args.repeats))
                if beam in args.full_eval_beams:
                    full = lambda beam=beam: reference_beam(llama, prompt, T, beam, NO_STOP, threads)  # noqa: E731
                    methods.append(("full_eval", beam, full, args.full_eval_repeats))
            results: dict[tuple[str, int], list[float]] = {(m, b): [] for m, b, _, _ in methods}
            results[("greedy_incremental", 1)] = []
            try:
                scratch()  # warm-up: first contexts, graph allocation
                for beam in args.beams:
                    searcher.search(prompt, T, beam, NO_STOP)
                for round_no in range(args.repeats):
                    for method, beam, fn, repeats in methods:
                        if round_no < repeats:
                            start = time.perf_counter()
                            fn()
                            results[(method, beam)].append((time.perf_counter() - start) * 1000)
                    if round_no < max(1, args.repeats // 5):
                        results[("greedy_incremental", 1)] += typing()
                for (method, beam), times in results.items():
                    self.add(name, threads, method, beam, times, context)
                fresh, kept = first_token_typing()
                self.first_token.append({"model": name + ("+ctx" if context else ""), "threads": threads, "from_scratch_median_ms": round(statistics.median(fresh), 3), "session_median_ms": round(statistics.median(kept), 3)})
                print(f"  time to first token per typed kana: from scratch {statistics.median(fresh):.2f} ms, persistent session {statistics.median(kept):.2f} ms")
                if not context:
                    self._overhead(name, threads, "greedy", 1, session.context, scratch, args.repeats)
                    for beam in args.beams:
                        self._overhead(name, threads, "beam", beam, None, lambda beam=beam: searcher.search(prompt, T, beam, NO_STOP), args.repeats, searcher)
            finally:
                session.close()
                searcher.close()

    def _overhead(self, name, threads, method, beam, ctx, fn, repeats, searcher=None) -> None:
        """Share of wall time spent outside llama_decode (our Python + ctypes)."""
        fn()  # the beam context may be re-created for this width
        target = ctx if searcher is None else searcher.context
        if target is None:
            return
        target.decode_seconds = 0.0
        start = time.perf_counter()
        for _ in range(repeats):
            fn()
        wall = time.perf_counter() - start
        inside = target.decode_seconds
        self.overhead.append({"model": name, "threads": threads, "method": method, "beam": beam, "python_overhead_pct": round(100 * (wall - inside) / max(inside, 1e-9), 2)})


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="smallest model, few repeats (< 60 s)")
    parser.add_argument("--json", metavar="FILE", help="write {'rows': [...]} here")
    parser.add_argument("--shapes", default=",".join(REAL_SHAPES), help="comma list of " + ", ".join(REAL_SHAPES))
    parser.add_argument("--quant", default="q5_k_m", choices=sorted(QUANT))
    parser.add_argument("--model", action="append", default=[], help="benchmark this GGUF / model dir instead of generated shapes (repeatable)")
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--beams", default="1,3,5,8,16")
    parser.add_argument("--full-eval-beams", default="1,3,5,8,16")
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--full-eval-repeats", type=int, default=3)
    parser.add_argument("--tokens", type=int, default=len(CONVERSION) + 1,
                        help="generated tokens per call, EOS ignored (default: the reading's conversion + EOS)")
    parser.add_argument("--cache", type=Path, default=REPO / "tools" / "cache" / "bench_models")
    parser.add_argument("--no-context-sweep", action="store_true", help="only without left context")
    args = parser.parse_args()
    if args.quick:
        args.shapes = "gpt2-26m"
        args.threads = "1"
        args.beams = "1,3,5"
        args.full_eval_beams = "5"
        args.repeats = 3
        args.full_eval_repeats = 1
        args.no_context_sweep = True
    args.threads = [int(x) for x in args.threads.split(",")]
    args.beams = [int(x) for x in args.beams.split(",")]
    args.full_eval_beams = {int(x) for x in args.full_eval_beams.split(",") if x}

    started = time.perf_counter()
    load_start = round(os.getloadavg()[0], 2)
    print(f"reading: {len(READING)} kana; context: {len(CONTEXT)} chars; {args.tokens} generated tokens per call, EOS ignored; random weights")
    print(f"machine: {platform.machine()} {os.cpu_count()} cpus, load average {os.getloadavg()[0]:.2f} at start")
    sources = [(find_gguf(m).stem, Path(m)) for m in args.model] or [(f"{s}-{args.quant}", build_model(s, args.quant, args.cache)) for s in args.shapes.split(",")]
    bench = Bench(args)
    for name, source in sources:
        for threads in args.threads:
            model = load_model(source, ModelOptions(n_threads=threads))
            try:
                bench.run_model(name, model, threads)
            finally:
                model.close()
    elapsed = time.perf_counter() - started
    print("\nPython overhead over time inside llama_decode:")
    for o in bench.overhead:
        print(f"  {o['model']:18} t={o['threads']} {o['method']:6} beam={o['beam']:<3} {o['python_overhead_pct']:6.2f} %")
    ratios = bench.ratios()
    print("\nTargets: full_eval 5 / beam 5 >= 5, beam 3 / greedy <= 1.6, typed kana / greedy <= 0.333")
    for r in ratios:
        values = "  ".join(f"{k} {v}" for k, v in r.items() if k not in ("model", "threads"))
        print(f"  {r['model']:22} t={r['threads']}  {values}")
    print(f"load average at end {os.getloadavg()[0]:.2f}; total {elapsed:.1f} s")
    if args.json:
        payload = {
            "rows": bench.rows,
            "python_overhead": bench.overhead,
            "first_token_per_typed_kana": bench.first_token,
            "target_ratios": ratios,
            "notes": {
                "reading_kana": len(READING),
                "context_chars": len(CONTEXT),
                "generated_tokens": args.tokens,
                "eos": "ignored (fixed number of generated tokens)",
                "weights": "random, real shapes",
                "quant": args.quant,
                "load_average_start_end": [load_start, round(os.getloadavg()[0], 2)],
                "seconds": round(elapsed, 1),
            },
        }
        Path(args.json).write_text(json.dumps(payload, indent=1), encoding="utf-8")
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
