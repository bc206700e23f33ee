#!/usr/bin/env python3
"""Per-segment candidate lists against the Anthy corpus's gold bunsetsu.

Each sampled corpus line is converted by the dictionary converter with its gold bunsetsu
boundaries fixed (as if the user had resized every segment); for every segment we look for the
gold spelling (NFKC) in that segment's candidate list. Printed and written: how often it is
first, on the first page (9), anywhere in the list, the mean list length and the mean rank where
found. The corpus is read from Debian's anthy source tarball, fetched and cached like
tools/build_devsets.py does (work_data/downloads).

    python benchmarks/segment_candidates_eval.py --every 10 --limit 800 --json segments.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tarfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tools import dictionary_fetch  # noqa: E402
from tools.build_devsets import parse_anthy_segments  # noqa: E402

from karukan_engine.core.types import ConversionRequest  # noqa: E402
from karukan_engine.kana import nfkc, to_hiragana  # noqa: E402

PAGE = 9


def anthy_segments(cache: Path) -> list[tuple[list[str], list[str]]]:
    tarball = dictionary_fetch.fetch(dictionary_fetch.ANTHY, cache)
    rows = []
    with tarfile.open(tarball) as archive:
        for member in sorted(archive.getmembers(), key=lambda m: m.name):
            if "/corpus/corpus." in member.name and member.name.endswith(".txt"):
                rows += parse_anthy_segments(archive.extractfile(member).read().decode("utf-8"))
    return rows


def evaluate(converter, rows: list[tuple[list[str], list[str]]]) -> dict:
    ranks: list[int | None] = []
    lengths: list[int] = []
    for readings, surfaces in rows:
        readings = [to_hiragana(r) for r in readings]
        segments = converter.convert(ConversionRequest("".join(readings), "", tuple(len(r) for r in readings)))
        if [s.reading for s in segments] != readings:
            continue   # the lattice could not keep these boundaries (rare): not comparable
        for segment, gold in zip(segments, surfaces):
            listed = [nfkc(c.surface) for c in segment.candidates]
            lengths.append(len(listed))
            ranks.append(listed.index(nfkc(gold)) if nfkc(gold) in listed else None)
    found = [r for r in ranks if r is not None]
    n = max(1, len(ranks))
    return {"segments": len(ranks), "first": round(sum(r == 0 for r in found) / n, 4),
            "first_page": round(sum(r < PAGE for r in found) / n, 4), "listed": round(len(found) / n, 4),
            "mean_list": round(statistics.mean(lengths), 2) if lengths else 0.0,
            "mean_rank_found": round(statistics.mean(found), 3) if found else 0.0}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--every", type=int, default=10, help="take every k-th corpus line")
    parser.add_argument("--limit", type=int, default=800, help="lines at most")
    parser.add_argument("--cache", type=Path, default=ROOT / "work_data" / "downloads")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()

    from karukan_engine.dictionary.system import SystemDictionary
    from karukan_engine.lattice.converter import LatticeConverter

    rows = anthy_segments(args.cache)[::max(1, args.every)][:args.limit]
    result = evaluate(LatticeConverter(SystemDictionary(), None, None), rows)
    print(f"{'segments':>9}{'first':>8}{'page 1':>8}{'listed':>8}{'mean list':>11}{'mean rank':>11}")
    print(f"{result['segments']:>9}{result['first']:>8.3f}{result['first_page']:>8.3f}{result['listed']:>8.3f}"
          f"{result['mean_list']:>11.1f}{result['mean_rank_found']:>11.2f}")
    if args.json:
        args.json.write_text(json.dumps({"every": args.every, "limit": args.limit, **result}, indent=1) + "\n",
                             encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
