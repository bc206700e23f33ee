#!/usr/bin/env python3
"""Flicker of live conversion, replayed: type dev-set sentences key by key through a Session.

Each sentence is typed in romaji (the keys the default romaji table needs) into a real Session
with live conversion on, then Return commits. Every live string shown on the way (the preedit
without the romaji keys still pending) is recorded and measured against the committed text
(karukan_engine/evaluation/flicker.py has the definitions):

  flickers/sent   shown strings whose converted head is not a prefix of the committed text
  strict/sent     shown strings that are not a prefix of it (kana tails count too)
  rewritten/sent  characters of settled text left of the caret that the next string changed
  flick%          sentences with at least one flicker
  exact, NFKC     the committed text against the gold surface (accuracy must not drop)
  key p50/p95     ms per typing key in process_key (with --model: the quick answer only)

Sentences: a seeded sample of the bundled dev sets (Mozc's evaluation.tsv and the Anthy corpus),
split in two halves by the seed: `--split tune` and `--split test` never share a row.

    python benchmarks/flicker_replay.py --split test --count 150 --json out.json
    python benchmarks/flicker_replay.py --model --split test       # the bundled model refines

Default pipeline: the dictionary lattice. `--model` drives the fused pipeline the engine
service runs, with the model's fitted weights and its n-gram: the quick text at once and the
model's refinement delivered later through the LiveService, applied before the next key.
`--no-stabilize` shows the live text unstabilized (the converter's best path as it is).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from karukan_engine.evaluation.flicker import Step, accurate, measure  # noqa: E402
from karukan_engine.evaluation.metrics import EvalItem, load_items  # noqa: E402
from karukan_engine.romaji.table import RomajiTable  # noqa: E402
from karukan_engine.session import Session  # noqa: E402
from karukan_engine.session.keys_cli import parse_keys  # noqa: E402
from karukan_engine.session.session import reading_of  # noqa: E402

EVAL_DIR = ROOT / "karukan_engine" / "data" / "eval"
SETS = {"mozc": EVAL_DIR / "mozc_evaluation.tsv", "anthy": EVAL_DIR / "anthy_corpus.tsv"}


def pick(name: str, count: int, seed: int, split: str, table: RomajiTable) -> list[tuple[EvalItem, str]]:
    """(item, romaji keys) of `count` rows of one half of a seeded shuffle of the set."""
    items = [it for it in load_items(SETS[name]) if 4 <= len(it.reading) <= 40]
    random.Random(f"{name}:{seed}").shuffle(items)
    half = {"tune": items[0::2], "test": items[1::2], "all": items}[split]
    chosen = []
    for item in half:
        keys = table.romaji_for(item.reading)
        if keys and reading_of(item.reading) == item.reading:
            chosen.append((item, keys))
        if len(chosen) >= count:
            break
    return chosen


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values) or [0.0]
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def shown_now(session: Session, preedit: str) -> tuple[str, str]:
    """(the live string without pending romaji, the settled reading) of the session now."""
    composer = session._composer   # read only: the replay needs what is pending
    pending = len(composer.text()) - len("".join(u.text for u in composer.units))
    settled = "".join(u.text for u in composer.units)
    return preedit[: len(preedit) - pending] if pending else preedit, reading_of(settled)


def preedit_of(view) -> str:
    return "".join(span.text for span in view.preedit)


class Typist:
    """One session typing sentences, synchronously or with the model's updates applied."""

    def __init__(self, converter, use_live_service: bool) -> None:
        self.session = Session(converter)
        self.service = None
        self.updates = []
        self.key_ms: list[float] = []   # process_key wall time of every typing key
        if use_live_service:
            from karukan_engine.live.live_service import LiveLink, LiveService

            self.service = LiveService(converter)
            self.session.attach_live(LiveLink(self.service, 1, self.updates.append))

    def type_sentence(self, keys: str) -> tuple[list[Step], str, int]:
        """(live steps, committed text, model updates applied)."""
        steps: list[Step] = []
        applied = 0
        for _, keysym, mods in parse_keys(keys):
            started = time.perf_counter()
            view = self.session.process_key(keysym, mods)
            self.key_ms.append((time.perf_counter() - started) * 1000)
            steps.append(Step(*shown_now(self.session, preedit_of(view))))
            if self.service is not None:
                self.service.scheduler.idle()
                for update in self.updates:
                    refreshed = self.session.apply_live_update(update)
                    if refreshed is not None:
                        applied += 1
                        steps.append(Step(*shown_now(self.session, preedit_of(refreshed))))
                self.updates.clear()
        view = self.session.process_key(*next(iter(parse_keys("<Return>")))[1:])
        return steps, view.commit, applied

    def close(self) -> None:
        if self.service is not None:
            self.service.shutdown()


def build(args):
    from karukan_engine.dictionary.system import SystemDictionary
    from karukan_engine.lattice.converter import LatticeConverter

    # No learning and no user dictionary: every run starts equal, and the user's files are
    # neither read nor written.
    lattice = LatticeConverter(SystemDictionary(), None, None)
    if not args.model:
        return lattice, "dictionary"
    from karukan_engine.conversion.factory import ConverterOptions
    from karukan_engine.conversion.fused import FusedConverter, build_fused_converter
    from karukan_engine.conversion.settings import ConversionSettings

    options = ConverterOptions(model_id=args.model_id, require_model=True,
                               conversion=ConversionSettings(workers=1))
    fused = build_fused_converter(lattice, options)
    assert isinstance(fused, FusedConverter)
    return fused, f"fused ({args.model_id or 'default model'}, fitted weights)"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sets", default="mozc,anthy", help="comma-separated: mozc, anthy")
    parser.add_argument("--count", type=int, default=150, help="sentences per set (default 150)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--split", choices=("tune", "test", "all"), default="test")
    parser.add_argument("--model", action="store_true", help="the fused pipeline with the model refining")
    parser.add_argument("--model-id", help="with --model: a models.toml id or GGUF path (default model)")
    parser.add_argument("--no-stabilize", action="store_true", help="live text as the converter gives it")
    parser.add_argument("--show", type=int, default=0, help="print this many flickering sentences")
    parser.add_argument("--json", type=Path, help="write the table and per-sentence rows here")
    args = parser.parse_args()

    converter, label = build(args)
    table = RomajiTable.default()
    rows, per_sentence = [], []
    started = time.perf_counter()
    for name in args.sets.split(","):
        typist = Typist(converter, use_live_service=args.model)
        typist.session._typing.stabilizer.enabled = not args.no_stabilize
        totals = {"set": name, "sentences": 0, "flickers": 0, "strict": 0, "rewritten": 0,
                  "exact": 0, "nfkc": 0, "updates": 0, "flickering_sentences": 0}
        for item, keys in pick(name, args.count, args.seed, args.split, table):
            steps, final, applied = typist.type_sentence(keys)
            steps.append(Step(final, item.reading))   # Return may still change what was shown
            result = measure(steps, final)
            exact, folded = accurate(final, item.outputs)
            totals["sentences"] += 1
            totals["flickers"] += result.flickers
            totals["strict"] += result.strict
            totals["rewritten"] += result.rewritten_chars
            totals["exact"] += exact
            totals["nfkc"] += folded
            totals["updates"] += applied
            totals["flickering_sentences"] += result.flickers > 0
            per_sentence.append({"set": name, "reading": item.reading, "final": final, "gold": list(item.outputs),
                                 "flickers": result.flickers, "strict": result.strict,
                                 "rewritten": result.rewritten_chars, "flicker_strings": result.flicker_strings})
        typist.close()
        totals["key_p50_ms"] = round(percentile(typist.key_ms, 0.50), 3)
        totals["key_p95_ms"] = round(percentile(typist.key_ms, 0.95), 3)
        rows.append(totals)
    elapsed = time.perf_counter() - started

    stabilized = not args.no_stabilize
    print(f"pipeline: {label}; stabilized: {stabilized}; split {args.split}, seed {args.seed}")
    header = (f"{'set':<7}{'sent':>6}{'flick/s':>9}{'strict/s':>10}{'rewr/s':>8}{'flick%':>8}{'exact':>8}{'NFKC':>8}"
              f"{'key p50':>9}{'key p95':>9}")
    print(header)
    for r in rows:
        n = max(1, r["sentences"])
        r.update(flickers_per_sentence=round(r["flickers"] / n, 3), strict_per_sentence=round(r["strict"] / n, 3),
                 rewritten_per_sentence=round(r["rewritten"] / n, 3),
                 sentences_flickering=round(100 * r["flickering_sentences"] / n, 1),
                 exact_pct=round(100 * r["exact"] / n, 1), nfkc_pct=round(100 * r["nfkc"] / n, 1))
        print(f"{r['set']:<7}{r['sentences']:>6}{r['flickers_per_sentence']:>9.3f}{r['strict_per_sentence']:>10.3f}"
              f"{r['rewritten_per_sentence']:>8.2f}{r['sentences_flickering']:>8.1f}{r['exact_pct']:>8.1f}"
              f"{r['nfkc_pct']:>8.1f}{r['key_p50_ms']:>9.2f}{r['key_p95_ms']:>9.2f}")
    if args.model:
        print("model updates applied:", sum(r["updates"] for r in rows))
    print(f"{elapsed:.0f} s, load average {os.getloadavg()[0]:.2f}")
    for row in [r for r in per_sentence if r["flickers"]][: args.show]:
        print(f"  {row['final']}  <-  {' | '.join(row['flicker_strings'])}")
    if args.json:
        info = {"pipeline": label, "stabilized": stabilized, "split": args.split, "seed": args.seed,
                "count": args.count, "python": platform.python_version(), "cpus": os.cpu_count(),
                "load_avg": os.getloadavg(), "seconds": round(elapsed, 1)}
        args.json.write_text(json.dumps({"info": info, "rows": rows, "sentences": per_sentence},
                                        ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
