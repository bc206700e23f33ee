#!/usr/bin/env python3
"""Mozc's conversion quality-regression rows against the dictionary converter.

Mozc keeps rows `label<TAB>key<TAB>value<TAB>command[<TAB>rank]` in
src/data/test/quality_regression_test/{oss,regression}.tsv of its repository. Without files the
oss.tsv of the Debian Mozc 2.29 source tarball the dictionary build caches (work_data/downloads)
is read. Only the conversion rows are scored, as Mozc's quality-regression test scores them:

- `Conversion Expected [N]` (N = 0 when absent): the value can be spelled by the segments'
  candidates, taken in order, with candidate indices summing to at most N (so 0 = the top
  conversion, as Space shows it); `Conversion Not Expected [N]`: it cannot;
- `Conversion Match` / `Not Match`: the value occurs / does not occur in the top conversion.

No learning, no user dictionary, no model (the `karukan eval --no-model` setting).

    python benchmarks/mozc_quality_regression.py [oss.tsv regression.tsv ...] [--dictionary DIR]
        [--json out.json] [--misses]
"""

from __future__ import annotations

import argparse
import json
import sys
import tarfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from karukan_engine.core.types import ConversionRequest  # noqa: E402


@dataclass(frozen=True)
class Row:
    label: str
    key: str
    value: str
    command: str   # "expected", "not expected", "match", "not match"
    rank: int      # for (not) expected: the largest sum of candidate indices that counts


KINDS = ("expected", "not expected", "match", "not match")


def parse_rows(text: str) -> list[Row]:
    rows = []
    for line in text.splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        fields = [f for f in line.split("\t") if f]
        if len(fields) < 4 or not fields[3].startswith("Conversion "):
            continue
        words = fields[3].split()[1:]
        numbers = [int(w) for w in words if w.isdigit()]
        kind = " ".join(w for w in words if not w.isdigit()).lower()
        if kind not in KINDS:
            continue
        if len(fields) > 4 and fields[4].isdigit():
            numbers = [int(fields[4])]
        rows.append(Row(fields[0], fields[1], fields[2], kind, numbers[0] if numbers else 0))
    return rows


def spelling_rank(value: str, lists: list[list[str]], start: int = 0) -> int | None:
    """The smallest sum of candidate indices (one candidate per segment, in order, duplicates
    counted once) that spells value; None when no choice does. Mozc's GetRank: the first
    candidate that begins the value and lets the rest be spelled decides."""
    if start == len(lists):
        return 0 if not value else None
    rank = 0
    seen: set[str] = set()
    for surface in lists[start]:
        if surface in seen:
            continue
        seen.add(surface)
        if value.startswith(surface):
            rest = spelling_rank(value[len(surface):], lists, start + 1)
            if rest is not None:
                return rank + rest
        rank += 1
    return None


def reading_of(key: str) -> str:
    from karukan_engine.kana import to_hiragana

    return to_hiragana(key)


def check(converter, row: Row) -> tuple[bool, str]:
    segments = converter.convert(ConversionRequest(reading_of(row.key), "", (), learn=False))
    top = "".join(s.candidates[0].surface for s in segments)
    if row.command == "match":
        return row.value in top, top
    if row.command == "not match":
        return row.value not in top, top
    if row.rank == 0:
        found = top == row.value
    else:
        rank = spelling_rank(row.value, [[c.surface for c in s.candidates] for s in segments])
        found = rank is not None and rank <= row.rank
    return found == (row.command == "expected"), top


def tarball_rows(cache: Path) -> list[Row]:
    """oss.tsv of the cached Debian Mozc source (fetched like the dictionary build does)."""
    from tools import dictionary_fetch

    tarball = dictionary_fetch.fetch(dictionary_fetch.MOZC, cache)
    with tarfile.open(tarball) as archive:
        member = next(m for m in archive.getmembers()
                      if m.name.endswith("src/data/test/quality_regression_test/oss.tsv"))
        return parse_rows(archive.extractfile(member).read().decode("utf-8"))


def evaluate(converter, rows: list[Row]) -> dict:
    passed, misses = 0, []
    by_kind: dict[str, list[int]] = {}
    started = time.perf_counter()
    for row in rows:
        ok, top = check(converter, row)
        kind = row.command if "expected" not in row.command else f"{row.command} {'0' if row.rank == 0 else 'N'}"
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
    parser.add_argument("files", nargs="*", type=Path,
                        help="row files (default: oss.tsv of the cached Mozc 2.29 source tarball)")
    parser.add_argument("--cache", type=Path, default=ROOT / "work_data" / "downloads")
    parser.add_argument("--dictionary", type=Path, help="a compiled dictionary directory (default: bundled)")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--misses", action="store_true", help="print every failing row")
    args = parser.parse_args(argv)

    from karukan_engine.dictionary.system import DEFAULT_DIR, SystemDictionary
    from karukan_engine.lattice.converter import LatticeConverter

    converter = LatticeConverter(SystemDictionary(args.dictionary or DEFAULT_DIR))
    rows = ([row for path in args.files for row in parse_rows(path.read_text(encoding="utf-8"))]
            if args.files else tarball_rows(args.cache))
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
