#!/usr/bin/env python3
"""How often the session's automatic draft is accepted while typing, and what it saves.

Live conversion reuses each session's previous greedy output as a draft for its next key
(karukan_engine.neural.greedy_pool.auto_draft: only when the prompt changed by a few tokens at
its end); the whole draft is checked in one batched llama_decode and the longest agreeing prefix
is kept. This benchmark types everyday sentences in romaji through `Session` with the fused
converter converting synchronously (as `karukan keys`: every typing key waits for its model
refinement; the same sentences as benchmarks/model_shape_bench.py), and counts, over every
greedy job the typing keys ran: draft tokens checked, draft tokens accepted, and the jobs that
had a draft at all. Each model is typed twice, with the automatic draft and with it switched
off (auto_draft returning nothing), to give the saving in llama_decode calls, in CPU time and
in time inside llama_decode; a key whose preedit differs between the two runs is reported (a
draft must never change what greedy decoding returns). Each sentence ends with Return, which
commits the live preedit (Space's beam search uses no draft).

Models: mimic GGUFs (tools/build_mimic_models.py, random weights in the published shapes) and
the bundled model (real, trained weights). Random weights have no notion of the reading: their
greedy output is much the same whatever the prompt, so they repeat themselves from key to key
and their acceptance rate is an artefact, not a forecast for the published weights; the bundled
model's rate is the one that reflects a trained model. Mimics generate --fixed-tokens tokens per
greedy job (stop tokens ignored, default 12); a model given with --natural (the bundled one by
default) stops where it stops.

    python benchmarks/draft_acceptance_bench.py work_data/mimic/jinen-v1-xsmall --natural karukan-bundled --json out.json
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from karukan_engine.neural import greedy_pool  # noqa: E402
from karukan_engine.session import Session  # noqa: E402
from karukan_engine.session.keys_cli import parse_keys  # noqa: E402

from model_shape_bench import SENTENCES, WARM_UP  # noqa: E402
from private_user_data import private_user_data  # noqa: E402
from session_bench import percentile  # noqa: E402


@dataclass
class DraftCounts:
    """Summed over the greedy jobs of the measured typing keys."""

    jobs: int = 0
    jobs_with_draft: int = 0
    drafted: int = 0
    accepted: int = 0
    whole_draft_accepted: int = 0
    decode_calls: int = 0       # llama_decode calls of the greedy jobs (draft checks included)
    decoded_tokens: int = 0     # tokens those calls decoded (rejected draft tokens included)
    model_keys: list[tuple[float, float]] = field(default_factory=list)  # (CPU ms, decode ms)
    preedits: list[str] = field(default_factory=list)


@contextmanager
def counting(counts: DraftCounts, drafts: bool):
    """Count each greedy group's drafts (and switch the automatic draft off when drafts=False)."""
    original_group, original_auto = greedy_pool.GreedyPool._generate_group, greedy_pool.auto_draft
    recording = [False]

    def group(pool, jobs):
        drafted, accepted = pool.draft_tokens, pool.accepted_tokens
        calls, decoded = pool.decode_calls, pool.decoded_tokens
        results = original_group(pool, jobs)
        if recording[0]:
            counts.jobs += len(jobs)
            counts.decode_calls += pool.decode_calls - calls
            counts.decoded_tokens += pool.decoded_tokens - decoded
            counts.drafted += pool.draft_tokens - drafted
            counts.accepted += pool.accepted_tokens - accepted
        return results

    def auto(previous_prompt, previous_output, prompt):
        draft = original_auto(previous_prompt, previous_output, prompt) if drafts else []
        if recording[0] and draft:
            counts.jobs_with_draft += 1
        return draft

    greedy_pool.GreedyPool._generate_group = group
    greedy_pool.auto_draft = auto
    try:
        yield recording
    finally:
        greedy_pool.GreedyPool._generate_group = original_group
        greedy_pool.auto_draft = original_auto


def type_sentences(source: str, threads: int, fixed_tokens: int | None, drafts: bool) -> DraftCounts:
    from karukan_engine.neural.runtime import decode_cpu_seconds
    from model_shape_bench import converter_for

    counts = DraftCounts()
    converter, model = converter_for(source, threads, fixed_tokens)
    try:
        with counting(counts, drafts) as recording:
            session = Session(converter)
            for _, keysym, mods in parse_keys(WARM_UP + "<space><Return>"):
                session.process_key(keysym, mods)
            for sentence in SENTENCES:
                # Return commits the live preedit: Space's beam search uses no draft and would
                # only add time.
                for label, keysym, mods in parse_keys(sentence + "<Return>"):
                    typing = label != "<Return>"
                    recording[0] = typing
                    jobs_before, accepted_before, drafted_before = counts.jobs, counts.accepted, counts.drafted
                    cpu, dec = time.process_time(), decode_cpu_seconds()
                    session.process_key(keysym, mods)
                    cpu_ms, dec_ms = (time.process_time() - cpu) * 1000, (decode_cpu_seconds() - dec) * 1000
                    recording[0] = False
                    if not typing:
                        continue
                    counts.preedits.append(session.view.preedit_text)
                    if counts.jobs > jobs_before:
                        counts.model_keys.append((cpu_ms, dec_ms))
                        if counts.drafted > drafted_before and \
                                counts.accepted - accepted_before == counts.drafted - drafted_before:
                            counts.whole_draft_accepted += 1
    finally:
        converter.close() if hasattr(converter, "close") else model.close()
    return counts


def summary(name: str, random_weights: bool, tokens: str, on: list[DraftCounts], off: list[DraftCounts],
            differ: int) -> dict:
    """Counts from the first run with drafts (they are the same in every run); times as the
    median over the runs of each run's p50 / sum."""
    first, plain = on[0], off[0]

    def median_of(runs: list[DraftCounts], pick) -> float | None:
        values = sorted(pick(run) for run in runs if run.model_keys)
        return round(values[len(values) // 2], 1) if values else None

    def p50_cpu(run):
        return percentile([s[0] for s in run.model_keys], 0.5)

    def decode_sum(run):
        return sum(s[1] for s in run.model_keys)

    return {
        "model": name, "random_weights": random_weights, "tokens": tokens, "repeats": len(on),
        "typing_keys": len(first.preedits), "model_keys": len(first.model_keys), "greedy_jobs": first.jobs,
        "jobs_with_draft": first.jobs_with_draft, "drafted_tokens": first.drafted, "accepted_tokens": first.accepted,
        "acceptance": round(first.accepted / first.drafted, 3) if first.drafted else None,
        "keys_whole_draft_accepted": first.whole_draft_accepted,
        "decode_calls": {"draft": first.decode_calls, "no_draft": plain.decode_calls},
        "decoded_tokens": {"draft": first.decoded_tokens, "no_draft": plain.decoded_tokens},
        "model_key_cpu_p50_ms": {"draft": median_of(on, p50_cpu), "no_draft": median_of(off, p50_cpu)},
        "decode_ms_sum": {"draft": median_of(on, decode_sum), "no_draft": median_of(off, decode_sum)},
        "preedits_changed_by_draft": differ,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("models", nargs="*", help="mimic directories or GGUF paths (random weights, fixed tokens)")
    parser.add_argument("--natural", action="append", default=[],
                        help="a model with trained weights, decoded until it stops (repeatable)")
    parser.add_argument("--threads", type=int, default=1, help="llama.cpp threads (default 1)")
    parser.add_argument("--fixed-tokens", type=int, default=12, help="tokens per greedy job for mimics (default 12)")
    parser.add_argument("--repeats", type=int, default=3, help="runs with and without drafts, alternating (default 3)")
    parser.add_argument("--json", type=Path, help="write the rows here")
    args = parser.parse_args()
    plan = [(m, True, args.fixed_tokens) for m in args.models] + [(m, False, None) for m in args.natural]
    if not plan:
        plan = [("karukan-bundled", False, None)]

    print(f"{len(SENTENCES)} sentences typed in romaji, {args.threads} llama.cpp thread(s), {os.cpu_count()} CPUs, "
          f"{args.repeats} repeats, load average {os.getloadavg()[0]:.1f} at start")
    print(f"{'model':<20}{'weights':<9}{'keys':>5}{'jobs':>5}{'drafts':>7}{'drafted':>8}{'accepted':>9}{'rate':>7}"
          f"{'whole':>6}{'calls':>12}{'tokens':>12}{'CPU/key p50 ms':>16}{'decode sum ms':>16}")
    rows = []
    for source, random_weights, fixed in plan:
        on, off = [], []
        for _ in range(args.repeats):
            on.append(type_sentences(source, args.threads, fixed, drafts=True))
            off.append(type_sentences(source, args.threads, fixed, drafts=False))
        differ = [i for i, (a, b) in enumerate(zip(on[0].preedits, off[0].preedits)) if a != b]
        if differ:
            print(f"{source}: the draft changed {len(differ)} of {len(on[0].preedits)} preedits, first at key "
                  f"{differ[0]}: {on[0].preedits[differ[0]]!r} / {off[0].preedits[differ[0]]!r}")
        tokens = f"{fixed} per job, stops ignored" if fixed else "until the model stops"
        row = summary(Path(source).name, random_weights, tokens, on, off, len(differ))
        rows.append(row)
        rate = f"{100 * row['acceptance']:.1f}%" if row["acceptance"] is not None else "-"

        def pair(key):
            return f"{row[key]['draft']}/{row[key]['no_draft']}"

        print(f"{row['model']:<20}{'random' if random_weights else 'trained':<9}{row['model_keys']:>5}"
              f"{row['greedy_jobs']:>5}{row['jobs_with_draft']:>7}{row['drafted_tokens']:>8}{row['accepted_tokens']:>9}"
              f"{rate:>7}{row['keys_whole_draft_accepted']:>6}{pair('decode_calls'):>12}{pair('decoded_tokens'):>12}"
              f"{pair('model_key_cpu_p50_ms'):>16}{pair('decode_ms_sum'):>16}", flush=True)
    print("pairs: with the automatic draft / without it")
    if args.json:
        payload = {"threads": args.threads, "fixed_tokens": args.fixed_tokens, "repeats": args.repeats,
                   "cpus": os.cpu_count(), "load_avg_end": os.getloadavg(), "rows": rows}
        args.json.write_text(json.dumps(payload, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    with private_user_data():   # the user's learning is neither read nor written
        sys.exit(main())
