"""Build the evaluation sets under karukan_engine/data/eval/ from their sources.

    python tools/build_devsets.py

- mozc_evaluation.tsv: Mozc's dictionary_oss/evaluation.tsv, its `Conversion Expected` rows
  (reading -> the expected first candidate, the test's argument, not the output column),
  from the same Debian source tarball the dictionary is built from (BSD-3, Google).
- anthy_corpus.tsv: the Anthy corpus (corpus/corpus.[0-5].txt of Debian's anthy source):
  bunsetsu-segmented pairs `|reading|...| |surface|...|`; lines whose surface carries `~`
  (marked as a wrong conversion) or whose segment counts differ are dropped.
Output rows: reading<TAB>expected surface (karukan eval's TSV format); anthy_context.jsonl:
{"reading", "outputs", "context"} where the context is the surface of the leading bunsetsu.
"""

from __future__ import annotations

import json
import sys
import tarfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))   # run as a script: tools from this checkout
from tools import dictionary_fetch  # noqa: E402

OUTPUT = REPO / "karukan_engine" / "data" / "eval"
CACHE = REPO / "work_data"

NOTICE = """\
# Evaluation sets

Built by `python tools/build_devsets.py` (downloads cached under work_data/, not committed).

| file | source | licence |
| --- | --- | --- |
| mozc_evaluation.tsv | Mozc `src/data/dictionary_oss/evaluation.tsv` (Debian source mozc {mozc}): its `Conversion Expected` rows, the test's argument as the answer | BSD-3-Clause, Copyright 2010-2021 Google Inc. (see ../dictionary/LICENSE.mozc.txt) |
| anthy_corpus.tsv, anthy_context.jsonl | Anthy `corpus/corpus.[0-5].txt` (Debian source anthy {anthy}); the JSONL takes every 4th line with ≥ 2 bunsetsu and turns its leading bunsetsu (surfaces) into left context | corpus.1: public domain; the rest LGPL-2.1+/LGPL-3+ per Debian's copyright file for anthy ("Files: *"); used as a test fixture only |

Rows: reading<TAB>expected output. Used for evaluation only, never for training or tuning.
"""


def parse_mozc_evaluation(text: str) -> list[tuple[str, str]]:
    """(reading, expected first candidate) of every row whose test fixes the first candidate.

    Columns: status, input, output, command, argument, version. `output` is what that Mozc
    version converted to, right or wrong (a FAILED row's output is the error), so it is never
    the answer. A plain `Conversion Expected` row names the first candidate in its argument;
    `Conversion Expected N` only asks for the argument within the first N, and `Conversion
    (Not) Match` only for a substring, so neither says what the first candidate should be.
    """
    rows = []
    for line in text.splitlines():
        if line.startswith("#") or not line.strip():
            continue
        fields = line.split("\t")
        if len(fields) >= 5 and fields[1] and fields[3].strip() == "Conversion Expected" and fields[4]:
            rows.append((fields[1], fields[4]))
    return rows


def parse_anthy_segments(text: str) -> list[tuple[list[str], list[str]]]:
    """(reading segments, surface segments) of each usable corpus line."""
    rows = []
    for line in text.splitlines():
        if not line.startswith("|") or line.startswith("|#") or "| |" not in line:
            continue
        left, right = line.strip().split("| |", 1)
        readings = left.strip("|").split("|")
        surfaces = right.strip("|").split("|")
        if len(readings) != len(surfaces) or any("~" in s for s in surfaces):
            continue
        if "".join(readings) and "".join(surfaces):
            rows.append((readings, surfaces))
    return rows


def parse_anthy_corpus(text: str) -> list[tuple[str, str]]:
    return [("".join(r), "".join(s)) for r, s in parse_anthy_segments(text)]


def context_items(segmented: list[tuple[list[str], list[str]]], every: int = 4) -> list[dict]:
    """Left-context items: the surfaces of the leading bunsetsu are the context, the rest is
    converted. The split point cycles through the possible ones; every `every`-th line is used."""
    items = []
    for number, (readings, surfaces) in enumerate(segmented):
        if len(readings) < 2 or number % every:
            continue
        k = 1 + (number // every) % (len(readings) - 1)
        reading, output = "".join(readings[k:]), "".join(surfaces[k:])
        if reading and output:
            items.append({"reading": reading, "outputs": [output], "context": "".join(surfaces[:k])})
    return items


def _write(path: Path, rows: list[tuple[str, str]]) -> None:
    seen = set()
    unique = [r for r in rows if not (r in seen or seen.add(r))]
    path.write_text("".join(f"{r}\t{s}\n" for r, s in unique), encoding="utf-8")
    print(f"{path.name}: {len(unique)} rows")


def main() -> int:
    OUTPUT.mkdir(parents=True, exist_ok=True)
    mozc = dictionary_fetch.fetch(dictionary_fetch.MOZC, CACHE / "downloads")
    with tarfile.open(mozc) as archive:
        member = next(m for m in archive.getmembers() if m.name.endswith("dictionary_oss/evaluation.tsv"))
        text = archive.extractfile(member).read().decode("utf-8")
    _write(OUTPUT / "mozc_evaluation.tsv", parse_mozc_evaluation(text))
    anthy = dictionary_fetch.fetch(dictionary_fetch.ANTHY, CACHE / "downloads")
    segmented = []
    with tarfile.open(anthy) as archive:
        for member in sorted(archive.getmembers(), key=lambda m: m.name):
            name = member.name.rsplit("/", 1)[-1]
            if "/corpus/corpus." in member.name and name.endswith(".txt"):
                segmented += parse_anthy_segments(archive.extractfile(member).read().decode("utf-8"))
    _write(OUTPUT / "anthy_corpus.tsv", [("".join(r), "".join(s)) for r, s in segmented])
    items = context_items(segmented)
    (OUTPUT / "anthy_context.jsonl").write_text(
        "".join(json.dumps(item, ensure_ascii=False) + "\n" for item in items), encoding="utf-8")
    print(f"anthy_context.jsonl: {len(items)} rows")
    (OUTPUT / "NOTICE.md").write_text(NOTICE.format(mozc=dictionary_fetch.MOZC.version,
                                                    anthy=dictionary_fetch.ANTHY.version), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
