#!/usr/bin/env python3
"""Session benchmark: key → view latency through the Session (romaji, state machine, converter).

Types sentences key by key (romaji, then Space to convert and Return to commit) and times every
process_key call, with the plain kana converter, the dictionary converter (the lattice, no model)
and the default fused pipeline (dictionary + the bundled model, live conversion synchronous as in
`karukan keys`; `--no-model` skips it). Nothing here needs the network. The learning history is a
fresh temporary one: the user's is neither read (its words would change what is timed) nor
written (the bench commits every sentence it types).

    python benchmarks/session_bench.py                 # table on stdout
    python benchmarks/session_bench.py --json out.json --repeats 20
    python benchmarks/session_bench.py --model work_data/mimic/jinen-v2-xsmall --fixed-tokens 12 --repeats 1
    python benchmarks/session_bench.py --live-pace-ms 100 --repeats 3   # as the engine runs it
    python benchmarks/session_bench.py --live-pace-ms 100 --repeats 3 --no-anticipate

--live-pace-ms P attaches the fused session to a LiveService as the engine does (the model's
live refinement, suggestions and Space's preparation on its scheduler), types a key every P ms
and applies the late updates that arrive in between on the session's thread, as the engine's
context host does; the row "fused+live" times process_key then (suggestions on, the default),
each sentence typed once (--repeats does not apply: a sentence typed again would come from the
live cache). The live text of what the next letter can settle is worked out between keys, as in
the engine; --no-anticipate turns that off.

--model runs the fused pipeline on that model (a models.toml id or a GGUF path) instead of the
default; --fixed-tokens N (random-weight mimics from tools/build_mimic_models.py) makes every
greedy conversion generate exactly N tokens, stop tokens ignored, so timings mean something (beam
search keeps its stops; random weights almost never emit one, so each beam writes its max_new).

Rows: converter, key kind (typing = a romaji key in composition, convert = Space,
commit = Return), count, p50_ms, p95_ms, max_ms.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from private_user_data import private_user_data  # noqa: E402

from karukan_engine.config import Config, SessionSettings, SuggestSettings  # noqa: E402
from karukan_engine.conversion.plain import PlainConverter  # noqa: E402
from karukan_engine.live.live_service import SUGGESTION_DELAY_S, LiveLink, LiveService  # noqa: E402
from karukan_engine.session import Session  # noqa: E402
from karukan_engine.session.keys_cli import parse_keys  # noqa: E402

# Everyday sentences (romaji as typed), 12–30 kana each.
SENTENCES = [
    "kyouhaiitenkidesune",
    "kaiginosiryouwookurimasu",
    "ashitahaamegafurusoudesu",
    "nihongonyuuryokuhamuzukashiikamoshiremasenn",
    "shinkansennnokippuwoyoyakushimashita",
    "konnshuunoyoteiwokakuninnshitekudasai",
    "toukyouekimademachiawasewoshimashou",
    "atarashiipasokonnwokaimashita",
]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


# The key path as the engine service runs it: suggestions are found off it (suggest_bench.py
# times them), so this session does without them rather than find them synchronously.
KEY_PATH_CONFIG = Config(suggest=SuggestSettings(enabled=False))


def key_kind(label: str) -> str:
    """The row a key's time goes to: Space converts, Return commits, the rest types."""
    return {"<space>": "convert", "<Return>": "commit"}.get(label, "typing")


def measure(converter, repeats: int) -> dict[str, list[float]]:
    session = Session(converter, KEY_PATH_CONFIG)
    times: dict[str, list[float]] = {"typing": [], "convert": [], "commit": []}
    keys = {s: list(parse_keys(s + "<space><Return>")) for s in SENTENCES}
    for s in SENTENCES:  # warm-up: caches, lazy loads
        for _, keysym, mods in keys[s]:
            session.process_key(keysym, mods)
    for _ in range(repeats):
        for s in SENTENCES:
            for label, keysym, mods in keys[s]:
                start = time.perf_counter()
                session.process_key(keysym, mods)
                elapsed = (time.perf_counter() - start) * 1000
                times[key_kind(label)].append(elapsed)
    return times


# Typed before the paced sentences: each of those is typed once, as a user types a new sentence
# (typed again, its chunks would all come from the live cache).
WARM_UP = ["watashinonamaehanakanodesu", "densyanookurenitsuite"]


class LiveAttached:
    """A Session attached to a LiveService as the engine runs it: work the session defers is
    kept during the key and started after it, as the engine's context host starts it once the
    reply is out (ime_frontend/contexts.py), SUGGESTION_DELAY_S later or as long after as the
    work asks, on a timer (so the timer threads' start is not timed as the key's); late updates
    are applied on the typing thread while it waits (checked every `poll_s`)."""

    def __init__(self, converter, config: Config, link_type: type[LiveLink] = LiveLink,
                 poll_s: float = 0.005) -> None:
        self.session = Session(converter, config)
        self.service = LiveService(converter)
        self.poll_s = poll_s
        self._pending: list = []
        self._deferred: list = []
        self._lock = threading.Lock()
        self.session.attach_live(link_type(self.service, 1, self._arrived, self._defer))

    def _arrived(self, update) -> None:   # a worker thread: hand it to the typing thread
        with self._lock:
            self._pending.append(update)

    def _defer(self, _epoch: int, work, after_s: float) -> None:   # the service drops work of an older epoch
        self._deferred.append((work, after_s))

    def key(self, keysym: int, mods: int = 0) -> float:
        """Press one key; ms the session took. Its deferred work starts after."""
        started = time.perf_counter()
        self.session.process_key(keysym, mods)
        elapsed = (time.perf_counter() - started) * 1000
        deferred, self._deferred = self._deferred, []
        for work, after_s in deferred:
            timer = threading.Timer(after_s or SUGGESTION_DELAY_S, work)
            timer.daemon = True
            timer.start()
        return elapsed

    def wait_until(self, deadline: float) -> None:
        """Apply the late updates that arrive until `deadline` (perf_counter seconds)."""
        while True:
            with self._lock:
                updates, self._pending[:] = list(self._pending), []
            for update in updates:
                self.session.apply_live_update(update)
            if time.perf_counter() >= deadline:
                return
            time.sleep(self.poll_s)


def measure_paced(converter, pace_s: float, anticipate: bool = True) -> dict[str, list[float]]:
    """measure(), through LiveAttached with a key every pace_s seconds; each sentence once,
    after WARM_UP."""
    attached = LiveAttached(converter, Config(session=SessionSettings(anticipate=anticipate)))
    times: dict[str, list[float]] = {"typing": [], "convert": [], "commit": []}
    try:
        for timed, sentence in [(False, s) for s in WARM_UP] + [(True, s) for s in SENTENCES]:
            for label, keysym, mods in parse_keys(sentence + "<space><Return>"):
                start = time.perf_counter()
                elapsed = attached.key(keysym, mods)
                if timed:
                    times[key_kind(label)].append(elapsed)
                attached.wait_until(start + pace_s)
            attached.service.scheduler.idle(30)
    finally:
        attached.service.shutdown()
    return times


def dictionary_converter():
    """What `--no-model` converts with: the lattice and its language model (loaded first)."""
    from karukan_engine.conversion.factory import ConverterOptions, build_converter
    from karukan_engine.lattice.converter import LatticeConverter

    converter = build_converter(ConverterOptions(use_model=False))
    if not isinstance(converter, LatticeConverter):
        print("dictionary converter unavailable; skipped", file=sys.stderr)
        return None
    return converter


def fused_converter(model_id: str | None = None, fixed_tokens: int | None = None):
    from karukan_engine.conversion.factory import ConverterOptions, build_converter
    from karukan_engine.conversion.fused import FusedConverter

    converter = build_converter(ConverterOptions(model_id=model_id, require_model=model_id is not None))
    if not isinstance(converter, FusedConverter):
        print("no model installed: fused pipeline skipped", file=sys.stderr)
        return None
    for slot in converter.slots:
        slot.fixed_tokens = fixed_tokens
    return converter


def main() -> int:
    with private_user_data():   # a fresh learning history (user_files.data_dir)
        return run()


def run() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=10, help="passes over the sentences (default 10)")
    parser.add_argument("--json", type=Path, help="write the rows and machine info here")
    parser.add_argument("--no-model", action="store_true", help="skip the fused pipeline")
    parser.add_argument("--model", help="the fused pipeline's model: a models.toml id or GGUF path (default: the default)")
    parser.add_argument("--fixed-tokens", type=int, help="random-weight models: tokens every greedy conversion generates")
    parser.add_argument("--no-anticipate", action="store_true",
                        help="fused+live: without the next letter's readings worked out between keys")
    parser.add_argument("--live-pace-ms", type=float, help="also time the fused session through a LiveService, a key every P ms")
    args = parser.parse_args()

    converters = [("plain", PlainConverter())]
    start = time.perf_counter()
    lattice = dictionary_converter()
    load_ms = (time.perf_counter() - start) * 1000
    if lattice is not None:
        converters.append(("dictionary", lattice))
    fused = None if args.no_model else fused_converter(args.model, args.fixed_tokens)
    if fused is not None:
        converters.append(("fused", fused))

    runs = [(name, measure(converter, args.repeats)) for name, converter in converters]
    if fused is not None and args.live_pace_ms:
        runs.append(("fused+live", measure_paced(fused, args.live_pace_ms / 1000, not args.no_anticipate)))
    rows = []
    for name, measured in runs:
        for kind, values in measured.items():
            rows.append({"converter": name, "kind": kind, "count": len(values),
                         "p50_ms": round(statistics.median(values), 3),
                         "p95_ms": round(percentile(values, 0.95), 3),
                         "max_ms": round(max(values), 3)})

    print(f"{'converter':<11}{'kind':<9}{'count':>7}{'p50 ms':>10}{'p95 ms':>10}{'max ms':>10}")
    for r in rows:
        print(f"{r['converter']:<11}{r['kind']:<9}{r['count']:>7}{r['p50_ms']:>10.3f}{r['p95_ms']:>10.3f}{r['max_ms']:>10.3f}")
    if lattice is not None:
        print(f"dictionary load: {load_ms:.0f} ms")
    if args.json:
        info = {"python": platform.python_version(), "machine": platform.machine(), "cpus": os.cpu_count(),
                "load_avg": os.getloadavg(), "repeats": args.repeats, "dictionary_load_ms": round(load_ms, 1),
                "model": args.model, "fixed_tokens": args.fixed_tokens, "live_pace_ms": args.live_pace_ms,
                "anticipate": not args.no_anticipate}
        args.json.write_text(json.dumps({"info": info, "rows": rows}, ensure_ascii=False, indent=2) + "\n",
                             encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
