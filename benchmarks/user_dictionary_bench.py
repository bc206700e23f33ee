#!/usr/bin/env python3
"""User dictionary size benchmark: key latency, memory and load time with a generated user
dictionary of N lines beside none (issue 29: a 1 M-line import made typing unusable).

Each size runs in a child process of its own (so resident memory is that size's alone): the
dictionary converter (no model) loads the user dictionary from a temporary data directory, a
Session types the session benchmark's sentences key by key (romaji, Space, Return; suggestions
off, as on the service's key path) and every process_key is timed; then `karukan convert` of
one reading is timed the same way (converter built, one conversion). Nothing is read from or
written to the user's own data.

    python benchmarks/user_dictionary_bench.py                      # none and 1,000,000 lines
    python benchmarks/user_dictionary_bench.py --lines 0 100000 1000000 --repeats 5 --json out.json

Rows: lines, file MB, load s (converter built and the user words indexed), typing / convert
key p50 / p95 / max ms, resident MB after typing (VmRSS) and peak (VmHWM).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

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


def _memory_mb() -> tuple[float, float]:
    """(VmRSS, VmHWM) of this process in MB."""
    fields = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in ("VmRSS", "VmHWM"):
            fields[name] = int(value.split()[0]) / 1024
    return round(fields.get("VmRSS", 0.0), 1), round(fields.get("VmHWM", 0.0), 1)


def child(repeats: int) -> dict:
    """Runs in the child: XDG_DATA_HOME already holds the user dictionary (or none)."""
    from karukan_engine.config import Config, SuggestSettings
    from karukan_engine.lattice.converter import LatticeConverter
    from karukan_engine.session import Session
    from karukan_engine.session.keys_cli import parse_keys

    start = time.perf_counter()
    converter = LatticeConverter.load_default()
    converter.data_version()
    session = Session(converter, Config(suggest=SuggestSettings(enabled=False)))
    session.process_key(*list(parse_keys("a"))[0][1:])   # the first key builds the user-word index
    session.process_key(*list(parse_keys("<Escape>"))[0][1:])
    load_s = time.perf_counter() - start
    keys = {s: list(parse_keys(s + "<space><Return>")) for s in SENTENCES}
    times: dict[str, list[float]] = {"typing": [], "convert": []}
    for s in SENTENCES:   # warm-up
        for _, keysym, mods in keys[s]:
            session.process_key(keysym, mods)
    for _ in range(repeats):
        for s in SENTENCES:
            for label, keysym, mods in keys[s]:
                begin = time.perf_counter()
                session.process_key(keysym, mods)
                elapsed = (time.perf_counter() - begin) * 1000
                if label != "<Return>":
                    times["convert" if label == "<space>" else "typing"].append(elapsed)
    rss, peak = _memory_mb()
    converter.close()
    out = {"load_s": round(load_s, 2), "rss_mb": rss, "peak_mb": peak}
    for kind, values in times.items():
        out[kind] = {"count": len(values), "p50_ms": round(percentile(values, 0.5), 3),
                     "p95_ms": round(percentile(values, 0.95), 3), "max_ms": round(max(values), 3)}
    return out


def convert_once(env: dict) -> float:
    """Seconds for `karukan convert --no-model` of one reading (process start to exit)."""
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "karukan_engine.cli", "convert", "--no-model", "きょうはいいてんき"],
                   env=env, check=True, capture_output=True)
    return time.perf_counter() - start


def run_size(lines: int, repeats: int, root: Path) -> dict:
    from karukan_testing.user_dictionaries import write_user_dictionary

    data_home = root / f"data-{lines}"
    (data_home / "karukan").mkdir(parents=True, exist_ok=True)
    path = data_home / "karukan" / "user_dictionary.tsv"
    if lines:
        write_user_dictionary(path, lines)
    env = {k: v for k, v in os.environ.items() if not k.startswith("XDG_")}
    env.update(XDG_DATA_HOME=str(data_home), XDG_CONFIG_HOME=str(root / "config"), PYTHONPATH=str(REPO))
    done = subprocess.run([sys.executable, __file__, "--child", "--repeats", str(repeats)], env=env,
                          check=True, capture_output=True, text=True)
    row = json.loads(done.stdout.splitlines()[-1])
    row.update(lines=lines, file_mb=round(path.stat().st_size / 1e6, 1) if lines else 0.0,
               convert_s=round(convert_once(env), 2))
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lines", type=int, nargs="+", default=[0, 1_000_000], help="user dictionary sizes")
    parser.add_argument("--repeats", type=int, default=3, help="passes over the sentences (default 3)")
    parser.add_argument("--json", type=Path, help="write the rows and machine info here")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.repeats)))
        return 0
    with tempfile.TemporaryDirectory() as root:
        rows = [run_size(n, args.repeats, Path(root)) for n in args.lines]
    print(f"{'lines':>9} {'MB':>5} {'load s':>7} {'convert s':>9} | {'typing p50/p95/max ms':>24} | "
          f"{'Space p50/p95/max ms':>24} | {'RSS MB':>7} {'peak MB':>7}")
    for r in rows:
        t, c = r["typing"], r["convert"]
        print(f"{r['lines']:>9,} {r['file_mb']:>5} {r['load_s']:>7} {r['convert_s']:>9} | "
              f"{t['p50_ms']:>7} / {t['p95_ms']:>6} / {t['max_ms']:>7} | "
              f"{c['p50_ms']:>7} / {c['p95_ms']:>6} / {c['max_ms']:>7} | {r['rss_mb']:>7} {r['peak_mb']:>7}")
    if args.json:
        info = {"python": platform.python_version(), "machine": platform.machine(), "cpus": os.cpu_count(),
                "load_avg": os.getloadavg(), "repeats": args.repeats}
        args.json.write_text(json.dumps({"info": info, "rows": rows}, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
