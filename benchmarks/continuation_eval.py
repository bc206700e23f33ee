#!/usr/bin/env python3
"""How often is the model's continuation right? An offline check of the kana continuations
that predictions offer (karukan_engine/lm/continuation.py), by the threshold on their probability.

Sentences come annotated, as the training pipeline's readings stage writes them (one JSON
object per line: {"chunks": [[surface, reading], ...]}); by default the chat sentences held out
of training (work_data/readings/chat_heldout.jsonl, built by `python -m karukan_engine.training
readings`). At every chunk boundary of a sentence, the text so far is what the user has typed and
converted; the bundled n-gram proposes its best continuation. A proposal is a hit when the
sentence goes on with exactly it, ending at a later chunk boundary. For each threshold:

  offered     share of boundaries where the best continuation's probability reached it
  precision   hits / offered
  hits        share of boundaries with a right continuation offered
  kana saved  kana characters of the hits, per boundary

    python benchmarks/continuation_eval.py [--readings FILE] [--sentences 1500] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from karukan_engine.lm.char_ngram import BUNDLED, CharNgram  # noqa: E402
from karukan_engine.lm.continuation import Continuer  # noqa: E402

DEFAULT_READINGS = ROOT / "work_data" / "readings" / "chat_heldout.jsonl"
THRESHOLDS = (0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6)


def boundaries(path: Path, limit: int) -> list[tuple[str, str, set[int]]]:
    """(text so far, the rest, lengths of the rest's chunk-boundary prefixes) per boundary."""
    out = []
    with path.open(encoding="utf-8") as stream:
        for count, line in enumerate(stream):
            if count >= limit:
                break
            surfaces = [surface for surface, _reading in json.loads(line)["chunks"]]
            for i in range(1, len(surfaces)):
                rest = surfaces[i:]
                ends = {sum(len(s) for s in rest[:j]) for j in range(1, len(rest) + 1)}
                out.append(("".join(surfaces[:i]), "".join(rest), ends))
    return out


def evaluate(continuer: Continuer, points: list[tuple[str, str, set[int]]]) -> dict:
    best = []
    started = time.perf_counter()
    for text, rest, ends in points:
        found = continuer.continuations(text, limit=1)
        if not found:
            best.append((0.0, False, 0))
            continue
        c = found[0]
        hit = rest.startswith(c.text) and len(c.text) in ends
        best.append((c.probability, hit, len(c.text)))
    seconds = time.perf_counter() - started
    rows = []
    for t in THRESHOLDS:
        offered = [(hit, n) for p, hit, n in best if p >= t]
        hits = [n for hit, n in offered if hit]
        rows.append({"threshold": t, "offered": round(len(offered) / len(best), 4),
                     "precision": round(len(hits) / len(offered), 4) if offered else None,
                     "hits": round(len(hits) / len(best), 4), "kana_saved": round(sum(hits) / len(best), 4)})
    return {"boundaries": len(points), "ms_per_boundary": round(seconds * 1000 / max(1, len(points)), 2),
            "rows": rows}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--readings", type=Path, default=DEFAULT_READINGS)
    parser.add_argument("--ngram", type=Path, default=BUNDLED)
    parser.add_argument("--sentences", type=int, default=1500)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    if not args.readings.is_file():
        print(f"no annotated sentences at {args.readings} (build them: python -m karukan_engine.training readings)",
              file=sys.stderr)
        return 1
    report = evaluate(Continuer(CharNgram.load(args.ngram)), boundaries(args.readings, args.sentences))
    print(f"{report['boundaries']} boundaries, {report['ms_per_boundary']} ms each")
    print(f"{'threshold':>9} {'offered':>8} {'precision':>9} {'hits':>6} {'kana saved':>10}")
    for r in report["rows"]:
        precision = "-" if r["precision"] is None else f"{r['precision']:.3f}"
        print(f"{r['threshold']:>9} {r['offered']:>8.3f} {precision:>9} {r['hits']:>6.3f} {r['kana_saved']:>10.3f}")
    if args.json:
        args.json.write_text(json.dumps({"benchmark": "continuation_eval", "readings": args.readings.name,
                                         "sentences": args.sentences, "cpus": os.cpu_count(),
                                         "python": platform.python_version(), **report}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
