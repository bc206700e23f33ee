#!/usr/bin/env python3
"""Suggestion benchmark: key → suggestion list shown, through the engine as frontends use it.

One in-process engine (EngineCore: the session worker, the live-conversion scheduler and one
ContextHost, as the IBus in-process backend and the engine service run them) types sentences
key by key. For every key it times the key's own reply, and, when the key leads to a new
suggestion list, the time from sending the key until that list's view reaches the frontend
(the ContextHost's on_update, where the IBus engine and the service take it). The same keys are
then typed with [suggest] enabled = false, so the key replies can be compared. With a model,
"key -> first new list" is the dictionary's list and "key -> model's list" the model's ranking
of it that follows when it differs.

    python benchmarks/suggest_bench.py                       # dictionary converter, table on stdout
    python benchmarks/suggest_bench.py --repeats 5 --json out.json
    python benchmarks/suggest_bench.py --model karukan-bundled

The learning history is a fresh temporary file (nothing of the user's is read or written).
Rows: measure, count, p50_ms, p95_ms, max_ms.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from karukan_engine.config import Config, SuggestSettings  # noqa: E402
from karukan_engine.live.live_service import SUGGESTION_DELAY_S  # noqa: E402
from karukan_engine.session.keys_cli import parse_keys  # noqa: E402
from session_bench import SENTENCES, percentile  # noqa: E402


def build_converter(model: str | None):
    from karukan_engine.conversion.factory import ConverterOptions, build_converter as build

    converter = build(ConverterOptions(use_model=model is not None, model_id=model, require_model=model is not None))
    if model is not None:
        converter.wait_for_model()
    return converter


async def type_all(converter, suggest: bool, repeats: int) -> dict[str, list[float]]:
    from ime_frontend.contexts import EngineCore

    config = Config(suggest=SuggestSettings(enabled=suggest))
    core = EngineCore(converter, config=config)
    loop = asyncio.get_running_loop()
    sent_at = [0.0]
    shown: list[float] = []
    lists: list[tuple[float, object]] = []   # (ms, list) of each late view whose list changed

    def on_update(view) -> None:
        if view.suggestions is not None:
            ms = (time.perf_counter() - sent_at[0]) * 1000
            shown.append(ms)
            if not lists or lists[-1][1] != view.suggestions:
                lists.append((ms, view.suggestions))

    host = core.new_context(loop, on_update)
    times: dict[str, list[float]] = {"key": [], "shown": [], "first_list": [], "model_list": []}
    keys = [list(parse_keys(s + "<Return>")) for s in SENTENCES]
    try:
        for round_ in range(repeats + 1):   # round 0 warms caches and lazy loads
            for sentence in keys:
                for _label, keysym, mods in sentence:
                    shown.clear()
                    lists.clear()
                    sent_at[0] = time.perf_counter()
                    await host.process_key(keysym, mods, False)
                    reply_ms = (time.perf_counter() - sent_at[0]) * 1000
                    await settle(core, host)
                    await host.process_key(keysym, mods, True)
                    if round_:
                        times["key"].append(reply_ms)
                        times["shown"].extend(shown[-1:])
                        # With a model the dictionary's list comes first, the model's ranking
                        # of it after (when it differs).
                        times["first_list"].extend(ms for ms, _list in lists[:1])
                        times["model_list"].extend(ms for ms, _list in lists[1:2])
    finally:
        await host.close()
        core.executor.shutdown(wait=True)
        core.live.shutdown()
    return times


async def settle(core, host) -> None:
    """Until the scheduler is idle and every update it delivered has been applied (the host
    queues suggestion work SUGGESTION_DELAY_S after the reply: wait that out first)."""
    await asyncio.sleep(SUGGESTION_DELAY_S * 2)
    while True:
        idle = await asyncio.get_running_loop().run_in_executor(None, core.live.scheduler.idle, 5.0)
        await asyncio.sleep(0)
        if idle and not host._tasks and not host.busy:
            return


def row(name: str, values: list[float]) -> dict:
    if not values:
        return {"measure": name, "count": 0, "p50_ms": None, "p95_ms": None, "max_ms": None}
    return {"measure": name, "count": len(values), "p50_ms": round(percentile(values, 0.5), 3),
            "p95_ms": round(percentile(values, 0.95), 3), "max_ms": round(max(values), 3)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--model", default=None, help="a models.toml id or GGUF path (default: dictionary only)")
    parser.add_argument("--json", default=None, help="write the rows here")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as data_home:
        os.environ["XDG_DATA_HOME"] = data_home   # a fresh learning history
        converter = build_converter(args.model)
        try:
            on = asyncio.run(type_all(converter, True, args.repeats))
            off = asyncio.run(type_all(converter, False, args.repeats))
        finally:
            converter.close()
    rows = [row("key reply, suggestions on", on["key"]), row("key reply, suggestions off", off["key"]),
            row("key -> suggestions shown", on["shown"]), row("key -> first new list", on["first_list"]),
            row("key -> model's list", on["model_list"])]
    print(f"{'measure':<30} {'count':>6} {'p50_ms':>8} {'p95_ms':>8} {'max_ms':>8}")
    for r in rows:
        cells = [f"{r[k]:>8}" if r[k] is not None else f"{'-':>8}" for k in ("p50_ms", "p95_ms", "max_ms")]
        print(f"{r['measure']:<30} {r['count']:>6} {' '.join(cells)}")
    if args.json:
        meta = {"converter": args.model or "dictionary", "repeats": args.repeats, "sentences": len(SENTENCES),
                "python": platform.python_version(), "machine": platform.machine(), "cpus": os.cpu_count(),
                "load_average": os.getloadavg()}
        Path(args.json).write_text(json.dumps({"meta": meta, "rows": rows}, ensure_ascii=False, indent=1),
                                   encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
