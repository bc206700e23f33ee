"""Where the dictionary converter's wrong first candidates come from: its scoring or its search.

    python tools/lattice_error_breakdown.py [--limit 600] [--deeper 200] [--json out.json]

The converter with the shipped weights (both n-grams, the dictionary margin: what `--no-model`
converts with) converts the odd rows of every dev set (lattice_lm_fit.dev_sets; the even rows
fit the weights). A row whose first candidate is wrong is classed by where the gold text is:

- judged: among the distinct paths the language models judged (LmWeights.paths, 16): the search
  found it and the scores put another first: a better scorer would fix it;
- deeper: not judged, but among the first `--deeper` distinct paths of the same search: judging
  more paths could;
- absent: not there either: the lattice lacks a word of it, or the search ranks it far down.

Of the judged rows, `kana` counts those where the first candidate and the gold text differ only
in how a span is written, kana on one side (いろいろ / 色々, 分かる / わかる): a writer's style
more than a wrong word. The rest are homophones (銭湯 / 戦闘).

Rows: set, rows, Acc@1 NFKC, the wrong rows of each class, and the judged rows' kana spellings.
"""

from __future__ import annotations

import argparse
import difflib
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from karukan_engine.core.types import ConversionRequest  # noqa: E402
from karukan_engine.dictionary.system import SystemDictionary  # noqa: E402
from karukan_engine.kana import is_hiragana, nfkc  # noqa: E402
from karukan_engine.lattice.lm_paths import LmWeights, distinct_paths  # noqa: E402
from karukan_engine.lattice.word_lm import WordLmWeights  # noqa: E402
from tools.dictionary_margin_fit import converters  # noqa: E402
from tools.lattice_lm_fit import dev_sets, write_report  # noqa: E402

CLASSES = ("right", "judged", "deeper", "absent")


def classify(first: str, judged: list[str], deeper: list[str], gold: set[str]) -> str:
    """The class of one row (texts NFKC-normalised by the caller)."""
    if first in gold:
        return "right"
    if gold.intersection(judged):
        return "judged"
    if gold.intersection(deeper):
        return "deeper"
    return "absent"


def kana_spelling(first: str, gold: str) -> bool:
    """first and gold (one reading) differ only in spans written in kana on one side: each gap
    between the characters they share, taken whole (not every edit of it)."""
    spans, i, j = [], 0, 0
    for a, b, size in difflib.SequenceMatcher(None, first, gold, autojunk=False).get_matching_blocks():
        if a > i or b > j:
            spans.append((first[i:a], gold[j:b]))
        i, j = a + size, b + size
    return bool(spans) and all(is_hiragana(x) or is_hiragana(y) for x, y in spans)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--limit", type=int, default=600, help="items per dev set (every k-th; odd rows reported)")
    parser.add_argument("--deeper", type=int, default=200, help="distinct paths searched for the gold text")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    started = time.perf_counter()
    _, converter = converters(SystemDictionary(), WordLmWeights())
    report: dict = {"judged_paths": LmWeights().paths, "deeper_paths": args.deeper, "sets": {}}
    print(f"{'set':32} {'rows':>5} {'Acc@1':>6} " + " ".join(f"{c:>7}" for c in CLASSES[1:]) + "    kana")
    for name, items in dev_sets(args.limit).items():
        counts = dict.fromkeys(CLASSES, 0)
        kana = 0
        for item in items[1::2]:
            analysis = converter._analyse(ConversionRequest(item.reading, left_context=item.context))
            ranked = [nfkc(p.surface) for p in analysis.ranked]
            gold = {nfkc(o) for o in item.outputs}
            # the deeper search only matters when the judged paths lack the gold text
            deeper = [] if gold.intersection(ranked) else [
                nfkc(s) for _, s, _ in distinct_paths(analysis.lattice, analysis.space, args.deeper)]
            found = classify(ranked[0] if ranked else "", ranked, deeper, gold)
            counts[found] += 1
            if found == "judged":
                kana += kana_spelling(ranked[0], next(s for s in ranked if s in gold))
        rows = sum(counts.values())
        report["sets"][name] = {"rows": rows, **counts, "judged_kana": kana}
        print(f"{name[:32]:32} {rows:5} {100 * counts['right'] / max(1, rows):5.1f}% "
              + " ".join(f"{counts[c]:7}" for c in CLASSES[1:]) + f" {kana:7}", flush=True)
    total = {c: sum(s[c] for s in report["sets"].values()) for c in CLASSES}
    wrong = max(1, sum(total.values()) - total["right"])
    kana_total = sum(s["judged_kana"] for s in report["sets"].values())
    print("wrong rows, summed: " + ", ".join(f"{c} {total[c]} ({100 * total[c] / wrong:.0f} %)" for c in CLASSES[1:])
          + f"; of the judged, kana spellings {kana_total}")
    report["total"] = total
    report["judged_kana"] = kana_total
    write_report(args.json, report, started)
    return 0


if __name__ == "__main__":
    sys.exit(main())
