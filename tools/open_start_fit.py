"""Fit how likely a reading typed with no text left of the caret is not to start a sentence.

    python tools/open_start_fit.py [--limit 600] [--grid 0,0.3,0.5,0.7,0.9] [--json out.json]

With no left context the word and character n-grams used to take the reading to open a
sentence: a word rare there (待つ, 保つ, 回答) lost to one that opens sentences in the corpus
(松, 有, 解凍 in headings and names). `WordLmWeights.open_start` scores the first words with a
mixture of both cases instead (lattice/word_lm.py, lattice/lm_paths.py). It matters only for
items without a left context: the dev sets that have none and the copy of every other set with
its context removed (lattice_lm_fit.dev_sets). Every such item is converted once per share of
the grid by the product's lattice (LatticeConverter.judged: what `karukan convert --no-model`
converts with), the shipped weights otherwise. Even rows fit: the share with the best mean Acc@1
(NFKC), the fewest broken rows among those within `--tolerance` points. Odd rows are reported:
Acc@1 of the dictionary alone and of each share, rows fixed / broken against the dictionary
alone and the two-sided sign-test p of that split.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from karukan_engine.core.types import ConversionRequest  # noqa: E402
from karukan_engine.dictionary.system import SystemDictionary  # noqa: E402
from karukan_engine.kana import nfkc  # noqa: E402
from karukan_engine.lattice.converter import LatticeConverter  # noqa: E402
from karukan_engine.lattice.word_lm import WordLmWeights  # noqa: E402
from tools.dictionary_margin_fit import cells_text, compare, fitted_value, right  # noqa: E402
from tools.lattice_ab import first  # noqa: E402
from tools.lattice_lm_fit import dev_sets, floats, write_report  # noqa: E402

GRID = (0.0, 0.3, 0.5, 0.7, 0.9)


def firsts(converter: LatticeConverter, items) -> list[bool]:
    """Whether each item's first candidate, as `karukan convert` prints it, is right (NFKC)."""
    return [right(first(converter, ConversionRequest(item.reading, left_context=item.context)),
                  {nfkc(o) for o in item.outputs}) for item in items]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--limit", type=int, default=600, help="items per dev set (every k-th)")
    parser.add_argument("--grid", type=floats, default=GRID, help="shares to try, 0 to 1 (comma-separated)")
    parser.add_argument("--tolerance", type=float, default=0.05, help="points of mean Acc@1 the fit may give up")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    started = time.perf_counter()
    dictionary = SystemDictionary()
    shipped = WordLmWeights()
    sets = {name: items for name, items in dev_sets(args.limit).items() if not any(it.context for it in items)}
    base = {name: firsts(LatticeConverter(dictionary, None, None), items) for name, items in sets.items()}
    tried = {}
    for share in args.grid:
        judged = LatticeConverter.judged(dictionary, replace(shipped, open_start=share))
        tried[share] = {name: firsts(judged, items) for name, items in sets.items()}
        print(f"share {share}: {time.perf_counter() - started:.0f} s", file=sys.stderr)

    def mean_acc(share: float, parity: int) -> float:
        return 100 * sum(sum(r[parity::2]) / max(1, len(r[parity::2])) for r in tried[share].values()) / len(sets)

    def broken(share: float, parity: int) -> int:
        return sum(compare(base[n][parity::2], tried[share][n][parity::2])["broken"] for n in sets)

    fitted = fitted_value(args.grid, mean_acc, broken, args.tolerance)
    report = {"fitted_open_start": fitted, "shipped_open_start": shipped.open_start,
              "fit_mean_acc": {str(s): round(mean_acc(s, 0), 2) for s in args.grid},
              "report_mean_acc": {str(s): round(mean_acc(s, 1), 2) for s in args.grid}, "sets": {}}
    print(f"fitted share {fitted} (even rows; the shipped default is {shipped.open_start})")
    print("mean Acc@1, even rows: " + ", ".join(f"{s:g} {mean_acc(s, 0):.2f}" for s in args.grid))
    print("mean Acc@1, odd rows:  " + ", ".join(f"{s:g} {mean_acc(s, 1):.2f}" for s in args.grid))
    print(f"{'set':32} {'n':>4} {'dictionary':>10} " + " ".join(f"{s:>19g}" for s in args.grid))
    for name in sets:
        odd = base[name][1::2]
        cells = {str(s): compare(odd, tried[s][name][1::2]) for s in args.grid}
        report["sets"][name] = {"n": len(odd), "dictionary": sum(odd) / max(1, len(odd)), **cells}
        print(f"{name[:32]:32} {len(odd):4} {100 * sum(odd) / max(1, len(odd)):9.1f}% " + cells_text(cells))
    write_report(args.json, report, started)
    return 0


if __name__ == "__main__":
    sys.exit(main())
