#!/usr/bin/env python3
"""Mozc's conversion quality-regression rows against the dictionary converter.

Mozc keeps rows `label<TAB>key<TAB>value<TAB>command` in
src/data/test/quality_regression_test/{oss,regression}.tsv of its repository (not bundled here:
point this script at your copies). Only the conversion rows are used:

- `Conversion Expected [N]`: value is among the first N candidates (N = 1 when absent): the
  segments' best spellings joined, then the whole-reading N-best, then (one segment) its list;
- `Conversion Match`: value occurs in the top conversion; `Conversion Not Match`: it does not.

No learning, no user dictionary, no model (the `karukan eval --no-model` setting).

    python examples/mozc_quality_regression.py oss.tsv regression.tsv [--dictionary DIR]
        [--json out.json] [--misses]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from karukan_engine.conversion.types import ConversionRequest  # noqa: E402


@dataclass(frozen=True)
class Row:
    label: str
    key: str
    value: str
    command: str   # "expected", "match", "not match"
    rank: int      # for "expected": within the first `rank` candidates


def parse_rows(text: str) -> list[Row]:
    rows = []
    for line in text.splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        fields = line.split("\t")
        if len(fields) < 4 or not fields[3].startswith("Conversion"):
            continue
        words = " ".join(fields[3:]).split()
        kind = " ".join(w for w in words[1:] if not w.isdigit()).lower()
        numbers = [int(w) for w in words[1:] if w.isdigit()]
        if kind not in ("expected", "match", "not match"):
            continue
        rows.append(Row(fields[0], fields[1], fields[2], kind, numbers[0] if numbers else 1))
    return rows


def reading_of(key: str) -> str:
    """Mozc's keys are hiragana with some digits, letters and punctuation: fold to what a user
    types (full-width punctuation stays, katakana becomes hiragana)."""
    from karukan_engine.kana import to_hiragana

    return to_hiragana(key)


def check(converter, row: Row) -> tuple[bool, str]:
    request = ConversionRequest(reading_of(row.key), "", (), learn=False)
    segments = converter.convert(request)
    top = "".join(s.candidates[0].surface for s in segments)
    if row.command == "match":
        return row.value in top, top
    if row.command == "not match":
        return row.value not in top, top
    if top == row.value:
        return True, top
    if row.rank <= 1:
        return False, top
    whole = list(dict.fromkeys([top] + [c.surface for c in converter.candidates(request, row.rank)]))
    listed = [c.surface for c in list(segments[0].candidates)] if len(segments) == 1 else []
    return row.value in whole[: row.rank] or row.value in listed[: row.rank], top


def evaluate(converter, rows: list[Row]) -> dict:
    passed, misses = 0, []
    by_kind: dict[str, list[int]] = {}
    started = time.perf_counter()
    for row in rows:
        ok, top = check(converter, row)
        kind = row.command if row.command != "expected" else ("expected 1" if row.rank <= 1 else "expected N")
        tally = by_kind.setdefault(kind, [0, 0])
        tally[0] += ok
        tally[1] += 1
        passed += ok
        if not ok:
            misses.append({"label": row.label, "key": row.key, "value": row.value,
                           "command": row.command, "rank": row.rank, "top": top})
    return {"rows": len(rows), "passed": passed,
            "rate": round(passed / max(1, len(rows)), 4),
            "by_kind": {k: {"passed": v[0], "rows": v[1]} for k, v in sorted(by_kind.items())},
            "seconds": round(time.perf_counter() - started, 1), "misses": misses}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="+", type=Path)
    parser.add_argument("--dictionary", type=Path, help="a compiled dictionary directory (default: bundled)")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--misses", action="store_true", help="print every failing row")
    args = parser.parse_args(argv)

    from karukan_engine.dictionary.system import DEFAULT_DIR, SystemDictionary
    from karukan_engine.lattice.converter import LatticeConverter

    converter = LatticeConverter(SystemDictionary(args.dictionary or DEFAULT_DIR))
    rows = [row for path in args.files for row in parse_rows(path.read_text(encoding="utf-8"))]
    report = evaluate(converter, rows)
    report["dictionary"] = converter.dictionary.meta.get("source", {})
    if args.misses:
        for miss in report["misses"]:
            print(f"  {miss['label']}\t{miss['key']}\t{miss['value']}\t{miss['command']} {miss['rank']}"
                  f"\t→ {miss['top']}")
    print(f"{report['passed']}/{report['rows']} rows pass ({100 * report['rate']:.1f} %); "
          + ", ".join(f"{k} {v['passed']}/{v['rows']}" for k, v in report["by_kind"].items()))
    if args.json:
        args.json.write_text(json.dumps(report, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
