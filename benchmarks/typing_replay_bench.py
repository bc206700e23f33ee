"""Replay typing of dev-set sentences key by key through the live-conversion pipeline.

Each session types its sentences in romaji (the keys the default romaji table needs), either at
a fixed rate (10 keys/s) or as a burst (no pause between keys); 1, 4 and 16 sessions type at
the same time. Paced sessions are independent typists: their keys are spread evenly over the key
interval (session i starts i/N of an interval later); `--aligned` makes every session press its
keys at the same instants (the worst case: N keys queue behind each other). Per key it measures:
  first   key -> first preedit (the dictionary answer `LiveService.key` returns at once)
  refined key -> model-refined preedit (the callback), for keys whose refinement finished in
          time and was still current (also when the model agreed with the first preedit)
  stale   updates delivered after a newer key's preedit was shown (must be 0)
  CPU     process CPU time per key (all threads)
  batch   greedy conversions per llama batch (sessions decoded together; needs --workers > 1)
  prep    with --prepare-ms: Space's conversion prepared after each key once that long passed
          without a newer key (as the engine's context host starts it); how many finished and
          how many a newer key (or more urgent work) stopped

    python benchmarks/typing_replay_bench.py --random-shape gpt2-26m --json out.json
    python benchmarks/typing_replay_bench.py --model karukan-bundled --sessions 1,4
    python benchmarks/typing_replay_bench.py --model karukan-bundled --prepare-ms 70   # with preparation

--random-shape writes a model with random weights in a real model's shape (speed does not
depend on the weights). Its outputs mean nothing (it may stop at once or never), so every greedy
conversion then generates exactly --fixed-tokens tokens (default 12, stop tokens ignored), which
the output states; drafts of such a model rarely agree, so speculation saves little there.
`--model PATH --random-weights` does the same for a mimic GGUF built by
tools/build_mimic_models.py (the published shapes, vocabularies and Q5_K_M quantization).

--acceptance A [A ...] (with --random-weights or --random-shape) replays once untimed to note the
greedy jobs' prompts, computes the model's own greedy output for each, then replays once per A
with each job's draft right for its first ceil(A * n) tokens and wrong after (draft_simulation.py):
what a trained model that accepts the share A of its drafts would cost (random weights reject
nearly all). A paced replay is timing-dependent, so a prompt the first pass did not see gets no
draft; the output counts them. --busy N keeps N other cores busy while measuring (busy_cores.py);
--threads 0 is the product's default thread count (following the free cores).
"""

from __future__ import annotations

import argparse
import heapq
import itertools
import json
import os
import sys
import tempfile
import threading
import time
from dataclasses import replace
from functools import partial
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

sys.path.insert(0, str(ROOT / "benchmarks"))

from busy_cores import busy_cores  # noqa: E402
from draft_simulation import DraftOracle  # noqa: E402
from karukan_engine.conversion.fused import FusedConverter  # noqa: E402
from karukan_engine.live.live_service import LateUpdate, LiveService  # noqa: E402
from karukan_engine.conversion.model_slot import ModelSlot  # noqa: E402
from karukan_engine.scheduling.scheduler import Scheduler  # noqa: E402
from karukan_engine.conversion.settings import ConversionSettings  # noqa: E402
from karukan_engine.core.types import ConversionRequest  # noqa: E402
from karukan_engine.dictionary.system import SystemDictionary  # noqa: E402
from karukan_engine.evaluation.metrics import load_items  # noqa: E402
from karukan_engine.lattice.converter import LatticeConverter  # noqa: E402
from karukan_engine.romaji.composer import Composer  # noqa: E402
from karukan_engine.romaji.table import RomajiTable  # noqa: E402

DEV_SET = ROOT / "karukan_engine" / "data" / "eval" / "mozc_evaluation.tsv"
# Warms a simulated-draft pass's fresh contexts with a reading no replayed key asks for.
WARM_READING = "これはうんどうしてみるよていです"


def percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q / 100 * (len(ordered) - 1))))]


def pick_sentences(path: Path, count: int, table: RomajiTable) -> list[tuple[str, str]]:
    """(reading, romaji keys) of every k-th dev item that the romaji table can type."""
    items = [it for it in load_items(path) if 6 <= len(it.reading) <= 40]
    step = max(1, len(items) // max(1, count * 3))
    chosen = []
    for item in items[::step]:
        keys = table.romaji_for(item.reading)
        if keys:
            chosen.append((item.reading, keys))
        if len(chosen) >= count:
            break
    return chosen


class Deferrer:
    """Runs callables after a delay on one thread, as the context host's event loop does."""

    def __init__(self) -> None:
        self._queue: list = []
        self._order = itertools.count()
        self._wake = threading.Condition()
        self._closed = False
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def after(self, seconds: float, work) -> None:
        with self._wake:
            heapq.heappush(self._queue, (time.perf_counter() + seconds, next(self._order), work))
            self._wake.notify()

    def _run(self) -> None:
        while True:
            with self._wake:
                while not self._closed and (not self._queue or self._queue[0][0] > time.perf_counter()):
                    self._wake.wait(None if not self._queue else self._queue[0][0] - time.perf_counter())
                if self._closed:
                    return
                _, _, work = heapq.heappop(self._queue)
            try:
                work()
            except RuntimeError:   # the scheduler has shut down
                pass

    def close(self) -> None:
        with self._wake:
            self._closed = True
            self._wake.notify()
        self._thread.join()


class Recorder:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.first: list[float] = []
        self.refined: list[float] = []
        self.sent: dict[tuple[int, int], float] = {}
        self.shown: dict[int, int] = {}
        self.delivered = 0
        self.changed = 0
        self.stale = 0
        self.keys = 0

    def on_refined(self, scheduler: Scheduler, session: int, key: int, update: LateUpdate) -> None:
        now = time.perf_counter()
        with self.lock:
            self.delivered += 1
            self.changed += update.changed
            self.refined.append(now - self.sent[(session, key)])
            # Stale: a newer key's preedit is already on screen, or a newer key was announced.
            if key < self.shown.get(session, -1) or update.epoch != scheduler.epoch(session):
                self.stale += 1


def replay_session(service: LiveService, recorder: Recorder, session: int,
                   sentences: list[tuple[str, str]], interval: float, start: float,
                   deferrer: Deferrer | None = None, prepare_s: float = 0.0) -> None:
    key_id = 0
    left = ""
    slot = 0
    for _reading, keys in sentences:
        composer = Composer()
        for key in keys:
            if interval > 0:
                delay = start + slot * interval - time.perf_counter()
                if delay > 0:
                    time.sleep(delay)
            slot += 1
            composer.insert(key)
            request = ConversionRequest(composer.text(), left)
            t0 = time.perf_counter()
            with recorder.lock:
                recorder.sent[(session, key_id)] = t0
            epoch = service.begin(session)   # the key's one supersession, as a Session does
            text = service.key(session, epoch, request,
                               partial(recorder.on_refined, service.scheduler, session, key_id))
            elapsed = time.perf_counter() - t0
            if deferrer is not None:
                deferrer.after(prepare_s, partial(service.prepare_for, session, epoch, request, delay_s=0.0))
            with recorder.lock:
                recorder.first.append(elapsed)
                recorder.shown[session] = key_id
                recorder.keys += 1
            key_id += 1
        service.begin(session)            # commit: pending refinements are dropped
        left = (left + text)[-20:]


def run(converter_factory, sentences, sessions: int, interval: float, workers: int, per_count: int,
        aligned: bool = False, prepare_s: float | None = None) -> dict:
    converter = converter_factory()
    service = LiveService(converter, Scheduler(workers=workers), deliver_unchanged=True)
    recorder = Recorder()
    deferrer = Deferrer() if prepare_s is not None else None
    # Different sessions type different sentences (wrapping around when there are too few).
    per = max(1, len(sentences) // sessions)
    per_session = [[sentences[(i * per + k) % len(sentences)] for k in range(per_count)]
                   for i in range(sessions)]
    batches0 = [slot.batching() for slot in converter.slots]
    cpu0, wall0 = time.process_time(), time.perf_counter()
    start = time.perf_counter() + 0.05
    threads = [threading.Thread(target=replay_session,
                                args=(service, recorder, i, per_session[i], interval,
                                      start + (0.0 if aligned else i * interval / sessions),
                                      deferrer, prepare_s or 0.0))
               for i in range(sessions)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if deferrer is not None:
        time.sleep((prepare_s or 0.0) + 0.05)   # the last keys' preparations start
        deferrer.close()
    service.scheduler.idle(120)
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    stats = service.scheduler.stats
    service.shutdown()
    batches = sum(slot.batching()[0] - b for slot, (b, _) in zip(converter.slots, batches0))
    jobs = sum(slot.batching()[1] - j for slot, (_, j) in zip(converter.slots, batches0))
    ms = lambda v: None if v is None else round(1000 * v, 2)  # noqa: E731
    return {
        "sessions": sessions,
        "mode": "burst" if interval == 0 else f"{1 / interval:g} keys/s" + (" aligned" if aligned else ""),
        "keys": recorder.keys,
        "first_p50_ms": ms(percentile(recorder.first, 50)),
        "first_p95_ms": ms(percentile(recorder.first, 95)),
        "refined_p50_ms": ms(percentile(recorder.refined, 50)),
        "refined_p95_ms": ms(percentile(recorder.refined, 95)),
        "refined": recorder.delivered,
        "refined_changed_text": recorder.changed,
        "not_refined": stats.empty,
        "superseded": stats.dropped_stale,
        "stale_share": recorder.stale / max(1, recorder.delivered),
        "cpu_ms_per_key": round(1000 * cpu / max(1, recorder.keys), 2),
        "greedy_jobs": jobs,
        "jobs_per_batch": round(jobs / batches, 2) if batches else None,
        "wall_s": round(wall, 2),
        "prepare_ms": None if prepare_s is None else round(1000 * prepare_s),
        "prepared_finished": converter.prepared.finished,
        "prepared_stopped": converter.prepared.abandoned,
    }


def _fresh_pass(replay, slots, factory) -> dict:
    for slot in slots:
        slot.release()
    factory().live(ConversionRequest(WARM_READING))
    return replay()


def load_model_for(args):
    from karukan_engine.neural.model import ModelOptions, load_model
    from karukan_engine.neural.registry import load_model_by_id_or_path

    options = ModelOptions(n_threads=args.threads)
    if args.random_shape:
        from karukan_testing.tiny_models import real_shape, write_model_dir

        with tempfile.TemporaryDirectory(prefix="karukan-bench-") as tmp:
            # llama.cpp maps the file; loaded, it no longer needs the directory on Linux.
            write_model_dir(Path(tmp), real_shape(args.random_shape))
            return load_model(Path(tmp), options), f"{args.random_shape} (random weights)"
    return load_model_by_id_or_path(args.model, options), args.model or "default"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--model", help="models.toml id or GGUF path (default: the registry default)")
    source.add_argument("--random-shape", help="random-weight model in a real shape, e.g. gpt2-26m")
    parser.add_argument("--no-model", action="store_true", help="dictionary only")
    parser.add_argument("--random-weights", action="store_true",
                        help="the --model has random weights (a mimic): fix the generated tokens as --random-shape does")
    parser.add_argument("--dev", type=Path, default=DEV_SET, help="dev set TSV/JSONL")
    parser.add_argument("--sentences", type=int, default=6, help="sentences per session")
    parser.add_argument("--sessions", default="1,4,16")
    parser.add_argument("--modes", default="paced,burst")
    parser.add_argument("--rate", type=float, default=10.0, help="keys per second when paced")
    parser.add_argument("--budget-ms", type=float, default=50.0)
    parser.add_argument("--workers", type=int, default=ConversionSettings().workers, help="scheduler workers (default: the setting's default)")
    parser.add_argument("--threads", type=int, default=1,
                        help="llama.cpp threads per context; 0 = follow the free cores, the product's default")
    parser.add_argument("--busy", type=int, default=0, help="cores kept busy by other processes while measuring")
    parser.add_argument("--acceptance", type=float, nargs="*", default=[],
                        help="simulated shares of accepted draft tokens, one replay each (random weights only)")
    parser.add_argument("--fixed-tokens", type=int, default=12,
                        help="with --random-shape: tokens generated per chunk conversion")
    parser.add_argument("--aligned", action="store_true",
                        help="paced sessions press their keys at the same instants (worst case)")
    parser.add_argument("--prepare-ms", type=float, default=None,
                        help="prepare Space's conversion this long after each key (default: never)")
    parser.add_argument("--json", type=Path, help="write the results here")
    args = parser.parse_args()
    if args.acceptance and not (args.random_shape or args.random_weights):
        parser.error("--acceptance simulates drafts for random weights: give --random-weights or --random-shape")

    table = RomajiTable.default()
    max_sessions = max(int(s) for s in args.sessions.split(","))
    sentences = pick_sentences(args.dev, args.sentences * max_sessions, table)
    dictionary = SystemDictionary()
    base = LatticeConverter(dictionary, None, None)
    slots, model_name = [], "none (dictionary only)"
    oracle = DraftOracle() if args.acceptance else None
    if not args.no_model:
        model, model_name = load_model_for(args)
        fixed = args.fixed_tokens if args.random_shape or args.random_weights else None
        slots = [ModelSlot(model, model_name, fixed_tokens=fixed, draft_for=oracle)]
        if fixed:
            model_name += f", {fixed} generated tokens per chunk"
    settings = replace(ConversionSettings(), live_budget_ms=args.budget_ms, workers=args.workers)

    def factory():
        return FusedConverter(base, slots, settings, lexicon=dictionary)

    # Warm up the dictionary, the model and its contexts once.
    warm = factory()
    warm.live(ConversionRequest(sentences[0][0]))

    results = []
    header = (f"{'A':>5} {'sessions':>8} {'mode':>11} {'keys':>5} {'first p50':>9} {'p95':>7} "
              f"{'refined p50':>11} {'p95':>7} {'refined':>7} {'stale':>5} {'CPU ms/key':>10} {'batch':>5} {'prep':>9}")
    prepare_s = None if args.prepare_ms is None else args.prepare_ms / 1000.0
    oracle_filled: set = set()
    print(f"model: {model_name}; budget {args.budget_ms:g} ms; {args.workers} worker(s); "
          f"{os.cpu_count()} CPUs, {args.busy} kept busy; {args.sentences} sentences per session; "
          + ("no preparation" if prepare_s is None else f"Space prepared {args.prepare_ms:g} ms after a key"))
    print(header)
    plan = [(sessions, mode) for sessions in (int(s) for s in args.sessions.split(",")) for mode in args.modes.split(",")]
    for acceptance in args.acceptance or [None]:
        for sessions, mode in plan:
            interval = 1.0 / args.rate if mode == "paced" else 0.0
            replay = partial(run, factory, sentences, sessions, interval, args.workers, args.sentences, args.aligned,
                             prepare_s)
            if oracle is not None:
                # Each pass starts from empty memos: a greedy output remembered from an earlier
                # pass would answer without a decode, and so without a draft.
                replay = partial(_fresh_pass, replay, slots, factory)
                if (sessions, mode) not in oracle_filled:
                    oracle.acceptance = None          # the untimed pass that notes the prompts
                    replay()
                    oracle.fill(model, args.fixed_tokens)
                    oracle_filled.add((sessions, mode))
                oracle.acceptance, oracle.served, oracle.missing = acceptance, 0, 0
            with busy_cores(args.busy):
                r = replay()
            r["acceptance"] = acceptance
            if oracle is not None:
                r["drafts_simulated"], r["prompts_unseen"] = oracle.served, oracle.missing
            results.append(r)
            fmt = lambda v, digits=1: "-" if v is None else f"{v:.{digits}f}"  # noqa: E731
            print(f"{'-' if acceptance is None else f'{acceptance:g}':>5} "
                  f"{r['sessions']:>8} {r['mode']:>11} {r['keys']:>5} {fmt(r['first_p50_ms']):>9} "
                  f"{fmt(r['first_p95_ms']):>7} {fmt(r['refined_p50_ms']):>11} {fmt(r['refined_p95_ms']):>7} "
                  f"{r['refined']:>7} {r['stale_share']:>5.2f} {r['cpu_ms_per_key']:>10.1f} "
                  f"{fmt(r['jobs_per_batch'], 2):>5} "
                  f"{r['prepared_finished']:>4}/{r['prepared_stopped']:<4}"
                  + (f"  ({r['drafts_simulated']} drafts, {r['prompts_unseen']} prompts unseen)" if oracle else ""),
                  flush=True)
    if args.json:
        payload = {"model": model_name, "random_weights": bool(args.random_shape or args.random_weights),
                   "budget_ms": args.budget_ms, "workers": args.workers, "threads": args.threads, "busy": args.busy,
                   "cpus": os.cpu_count(), "load": os.getloadavg(), "prepare_ms": args.prepare_ms,
                   "results": results}
        args.json.write_text(json.dumps(payload, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
