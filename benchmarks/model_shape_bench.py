#!/usr/bin/env python3
"""Speed of each published model shape through the session: key -> preedit with the model's live
refinement, and Space -> candidates (greedy + beam + rerank), p50 / p95.

Runs on mimic GGUFs (tools/build_mimic_models.py: random weights in the published shapes,
vocabularies and Q5_K_M quantization). Their output means nothing, so every greedy conversion
generates exactly --fixed-tokens tokens (stop tokens ignored; default 12) and beam search writes
its whole budget (random weights practically never emit a stop token; a trained model stops
sooner, so Space figures are upper bounds). The session converts synchronously, as
`karukan keys` does: every typing key waits for the model, no deadline predictor, no cache
carried over from a warm-up (a fresh converter types the measured sentences).

Rows: typing (every romaji key), model key (the typing keys whose live refinement ran the model:
a key that only adds a pending consonant, or whose chunks are cached, does not), convert
(Space). Per row it reports wall time, process CPU time, and the CPU time inside llama_decode (the
physical cost of the model's tokens; with --threads 1 llama.cpp computes in the calling thread,
so it is exact). Wall time grows with contention for the CPU; CPU time does not, so on a busy
machine the CPU columns are the estimate of an idle machine's wall time.

A second table splits each row's mean CPU time per key into: decode (inside llama_decode), the
dictionary lattice (the fused converter's calls into its DictionaryConverter), alignment
(Aligner.align_many / best_with_prefix: reading-surface alignment of model text against the
dictionary) and the rest, which is Python: session, chunking, prompt building and
tokenization, reranking, and the Python side of the llama.cpp calls.

    python tools/build_mimic_models.py
    python benchmarks/model_shape_bench.py work_data/mimic/jinen-v1-xsmall work_data/mimic/jinen-v2-xsmall --json out.json

--acceptance A [A ...] replays the sentences once per A with simulated drafts
(draft_simulation.py): each greedy job's draft is the model's own greedy output for its first
ceil(A * n) tokens and wrong after that, the outputs computed in an untimed first pass; random
weights otherwise reject nearly every draft, so the plain run is the worst case. The rows then
carry the acceptance.

--busy N keeps N other cores busy (spinning child processes, busy_cores.py) while measuring;
--threads 0 is the product's default, the thread count following the cores other programs leave
free (karukan_engine/neural/threads.py).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from karukan_engine.session import Session  # noqa: E402
from karukan_engine.session.keys_cli import parse_keys  # noqa: E402

from busy_cores import busy_cores  # noqa: E402
from private_user_data import private_user_data  # noqa: E402
from karukan_engine.neural.threads import decodes_by_threads  # noqa: E402
from session_bench import KEY_PATH_CONFIG, SENTENCES as SESSION_SENTENCES, percentile  # noqa: E402

WARM_UP = "korehaundoushitemiruyoteidesu"
# The session benchmark's first six sentences: fewer keys, as each one runs a large model.
SENTENCES = SESSION_SENTENCES[:6]


def load(path: str, threads: int):
    from karukan_engine.neural.model import ModelOptions
    from karukan_engine.neural.registry import load_model_by_id_or_path

    return load_model_by_id_or_path(path, ModelOptions(n_threads=threads))


def converter_for(path: str, threads: int, fixed_tokens: int):
    """(fused converter, model) for a model loaded from path (draft_acceptance_bench.py too)."""
    model = load(path, threads)
    return fresh_converter(model, path, fixed_tokens)[0], model


def fresh_converter(model, path: str, fixed_tokens: int, draft_for=None):
    """A fresh fused converter (empty cache) over the loaded model; returns it and its slot."""
    from karukan_engine.conversion.fused import FusedConverter
    from karukan_engine.conversion.model_slot import ModelSlot
    from karukan_engine.conversion.settings import ConversionSettings
    from karukan_engine.lattice.converter import LatticeConverter

    base = LatticeConverter.load_default()
    slot = ModelSlot(model, path, fixed_tokens=fixed_tokens, draft_for=draft_for)
    return FusedConverter(base, [slot], ConversionSettings(), lexicon=getattr(base, "lexicon", None)), slot


def passes(model, path: str, fixed_tokens: int, acceptances: list[float]):
    """(acceptance or None, converter, slot) per measured pass; with acceptances, an untimed
    recording pass first fills the oracle with the model's own greedy outputs."""
    if not acceptances:
        converter, slot = fresh_converter(model, path, fixed_tokens)
        yield None, converter, slot
        return
    from draft_simulation import DraftOracle

    oracle = DraftOracle()
    converter, slot = fresh_converter(model, path, fixed_tokens, oracle)
    measure(converter)
    slot.release()
    oracle.fill(model, fixed_tokens)
    for acceptance in acceptances:
        oracle.acceptance = acceptance
        converter, slot = fresh_converter(model, path, fixed_tokens, oracle)
        yield acceptance, converter, slot
        print(f"  (acceptance {acceptance}: {oracle.served} simulated drafts, {oracle.missing} prompts unseen)")
        oracle.served = oracle.missing = 0


class CpuMeter:
    """CPU seconds spent inside wrapped callables (outermost call only, so nesting counts once)."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self._depth = 0

    def wrap(self, function):
        def timed(*args, **kwargs):
            self._depth += 1
            started = time.process_time() if self._depth == 1 else None
            try:
                return function(*args, **kwargs)
            finally:
                self._depth -= 1
                if started is not None:
                    self.seconds += time.process_time() - started
        return timed


def instrument(converter) -> dict[str, CpuMeter]:
    """Meters for the lattice and the alignment, wrapped around this converter's own objects."""
    meters = {"lattice": CpuMeter(), "align": CpuMeter()}
    for name in ("live", "candidates", "convert"):
        setattr(converter.base, name, meters["lattice"].wrap(getattr(converter.base, name)))
    if converter.aligner is not None:
        for name in ("align_many", "best_with_prefix"):   # align() goes through align_many
            if hasattr(converter.aligner, name):
                setattr(converter.aligner, name, meters["align"].wrap(getattr(converter.aligner, name)))
    return meters


def measure(converter) -> dict[str, list[tuple[float, ...]]]:
    """Per key: (wall, CPU, decode, lattice, align) in ms."""
    from karukan_engine.neural.runtime import decode_cpu_seconds

    meters = instrument(converter)
    session = Session(converter, KEY_PATH_CONFIG)
    for _, keysym, mods in parse_keys(WARM_UP + "<space><Return>"):
        session.process_key(keysym, mods)
    rows: dict[str, list[tuple[float, float, float]]] = {"typing": [], "model key": [], "convert": []}
    for sentence in SENTENCES:
        for label, keysym, mods in parse_keys(sentence + "<space><Return>"):
            wall, cpu, dec = time.perf_counter(), time.process_time(), decode_cpu_seconds()
            lattice, align = meters["lattice"].seconds, meters["align"].seconds
            session.process_key(keysym, mods)
            sample = ((time.perf_counter() - wall) * 1000, (time.process_time() - cpu) * 1000,
                      (decode_cpu_seconds() - dec) * 1000, (meters["lattice"].seconds - lattice) * 1000,
                      (meters["align"].seconds - align) * 1000)
            kind = {"<space>": "convert", "<Return>": None}.get(label, "typing")
            if kind:
                rows[kind].append(sample)
            if kind == "typing" and sample[2] > 0:  # a key whose refinement ran the model
                rows["model key"].append(sample)
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("models", nargs="+", help="mimic directories or GGUF paths (or models.toml ids)")
    parser.add_argument("--threads", type=int, default=1,
                        help="llama.cpp threads; 0 = follow the free cores, the product's default (default 1)")
    parser.add_argument("--busy", type=int, default=0, help="cores kept busy by other processes while measuring")
    parser.add_argument("--fixed-tokens", type=int, default=12, help="tokens per greedy conversion (default 12)")
    parser.add_argument("--acceptance", type=float, nargs="*", default=[],
                        help="simulated shares of accepted draft tokens, one replay each (e.g. 0 0.655 0.9)")
    parser.add_argument("--json", type=Path, help="write the rows here")
    args = parser.parse_args()

    out = []
    breakdown = []
    print(f"{len(SENTENCES)} sentences, greedy {args.fixed_tokens} tokens per conversion, {args.threads} llama.cpp "
          f"thread(s), {args.busy} core(s) kept busy, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at start")
    print(f"{'model':<34}{'A':>6} {'kind':<9}{'n':>4}{'wall p50':>10}{'p95':>8}{'CPU p50':>9}{'p95':>8}{'decode p50':>11}{'p95':>8}")
    for path in args.models:
        model = load(path, args.threads)
        for acceptance, converter, slot in passes(model, path, args.fixed_tokens, args.acceptance):
            before = decodes_by_threads()
            with busy_cores(args.busy):
                rows = measure(converter)
            used = {n: c - before.get(n, 0) for n, c in decodes_by_threads().items() if c > before.get(n, 0)}
            print(f"  decodes by thread count: {used}")
            slot.release()
            report(path, model, acceptance, rows, out, breakdown)
        model.close()
    print("\nmean CPU ms per key: where the time goes")
    print(f"{'model':<34}{'A':>6} {'kind':<10}{'CPU':>8}{'decode':>8}{'lattice':>9}{'align':>7}{'Python':>8}")
    for row in breakdown:
        print(f"{Path(row['model']).name:<34}{_share(row['acceptance']):>6} {row['kind']:<10}{row['cpu_mean_ms']:>8.1f}"
              f"{row['decode_mean_ms']:>8.1f}{row['lattice_mean_ms']:>9.1f}{row['align_mean_ms']:>7.1f}{row['python_mean_ms']:>8.1f}")
    if args.json:
        payload = {"threads": args.threads, "busy": args.busy, "fixed_tokens": args.fixed_tokens, "cpus": os.cpu_count(),
                   "acceptance": args.acceptance, "load_avg_end": os.getloadavg(), "rows": out, "breakdown": breakdown}
        args.json.write_text(json.dumps(payload, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    return 0


def _share(acceptance: float | None) -> str:
    return "-" if acceptance is None else f"{acceptance:.3g}"


def report(path: str, model, acceptance: float | None, rows, out: list, breakdown: list) -> None:
    """Print one pass's rows and add them to out / breakdown."""
    for kind, samples in rows.items():
        walls, cpus, decs = ([s[i] for s in samples] for i in range(3))
        row = {"model": path, "acceptance": acceptance, "arch": model.llama.info.architecture, "n_vocab": model.llama.n_vocab,
               "file_mib": round(model.llama.path.stat().st_size / 2**20, 2), "kind": kind, "count": len(samples),
               "wall_p50_ms": round(percentile(walls, 0.5), 1), "wall_p95_ms": round(percentile(walls, 0.95), 1),
               "cpu_p50_ms": round(percentile(cpus, 0.5), 1), "cpu_p95_ms": round(percentile(cpus, 0.95), 1),
               "decode_p50_ms": round(percentile(decs, 0.5), 1), "decode_p95_ms": round(percentile(decs, 0.95), 1)}
        out.append(row)
        if samples:
            means = [sum(s[i] for s in samples) / len(samples) for i in range(1, 5)]
            # Two decimals, so the parts still add up to the total after rounding.
            breakdown.append({"model": path, "acceptance": acceptance, "kind": kind, "cpu_mean_ms": round(means[0], 2),
                              "decode_mean_ms": round(means[1], 2), "lattice_mean_ms": round(means[2], 2),
                              "align_mean_ms": round(means[3], 2),
                              "python_mean_ms": round(means[0] - means[1] - means[2] - means[3], 2)})
        print(f"{Path(path).name:<34}{_share(acceptance):>6} {kind:<9}{row['count']:>4}{row['wall_p50_ms']:>10.1f}"
              f"{row['wall_p95_ms']:>8.1f}{row['cpu_p50_ms']:>9.1f}{row['cpu_p95_ms']:>8.1f}{row['decode_p50_ms']:>11.1f}"
              f"{row['decode_p95_ms']:>8.1f}", flush=True)


if __name__ == "__main__":
    with private_user_data():   # the user's learning is neither read nor written
        sys.exit(main())
