"""The shipped dictionary converter against itself without one of its parts, on every dev set.

    python tools/lattice_ab.py --without corpus-nouns[,topics,lone-word] [--nouns FILE] [--limit 600]
        [--context TEXT] [--json out.json]

Both converters are what `karukan convert --no-model` builds (both n-grams, the topic vectors,
the corpus nouns; no user data), except that the second lacks the parts named. Rows as
tools/lattice_lm_fit.py finds them; odd rows are reported (the even ones are where weights were
fitted). Acc@1 NFKC of the dictionary alone (no language model, no corpus nouns: today's
Mozc-equivalent baseline), of the converter without the part and with it, and the rows the part
fixes and breaks. lone-word: a single word with no text before it judged with the usual
margin (`WordLmWeights.lone_word_margin` 0). --context TEXT: every row's left context replaced
by TEXT (a newline: each row typed at a line start); the sets' no-context copies are then left out.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tools.lattice_lm_fit import NO_CONTEXT, dev_sets, fixed_broken, write_report  # noqa: E402

from karukan_engine.core.types import ConversionRequest  # noqa: E402
from karukan_engine.dictionary.system import SystemDictionary  # noqa: E402
from karukan_engine.kana import nfkc  # noqa: E402
from karukan_engine.lattice.converter import LatticeConverter  # noqa: E402
from karukan_engine.lattice.corpus_words import BUNDLED as NOUNS  # noqa: E402
from karukan_engine.lattice.corpus_words import CorpusWordSource  # noqa: E402
from karukan_engine.lattice.word_lm import LoadedWordScorer, WordLmWeights  # noqa: E402
from karukan_engine.lm.bundled import LoadedNgram, shared_ngram  # noqa: E402

PARTS = ("corpus-nouns", "topics", "lone-word")


def converters(without: set[str], nouns: Path) -> tuple[LatticeConverter, LatticeConverter, LatticeConverter]:
    dictionary = SystemDictionary()
    ngram = LoadedNgram(shared_ngram())
    ngram.handle.settle()
    words = LoadedWordScorer(dictionary)
    words.handle.settle()
    corpus = CorpusWordSource.load(dictionary, nouns)
    plain = LatticeConverter(dictionary, None, None)
    full = LatticeConverter(dictionary, None, None, lm=ngram, word_lm=words, corpus_words=corpus)
    weights = WordLmWeights()
    if "topics" in without:
        weights = replace(weights, topic=0.0)
    if "lone-word" in without:
        weights = replace(weights, lone_word_margin=0.0)
    less = LatticeConverter(dictionary, None, None, lm=ngram, word_lm=words,
                            corpus_words=None if "corpus-nouns" in without else corpus, word_weights=weights)
    return plain, less, full


def parts(text: str) -> set[str]:
    named = {p.strip() for p in text.split(",") if p.strip()}
    if not named or not named <= set(PARTS):
        raise argparse.ArgumentTypeError(f"parts are {', '.join(PARTS)}")
    return named


def first(converter: LatticeConverter, request: ConversionRequest) -> str:
    """The first candidate, as `karukan convert` prints it."""
    found = converter.candidates(request, 1)
    return found[0].surface if found else ""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--without", type=parts, required=True, help=f"comma-separated: {', '.join(PARTS)}")
    parser.add_argument("--nouns", type=Path, default=NOUNS, help="the corpus nouns file")
    parser.add_argument("--limit", type=int, default=600, help="items per dev set (every k-th)")
    parser.add_argument("--context", help="every row's left context replaced by this text")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    started = time.perf_counter()
    plain, less, full = converters(args.without, args.nouns)
    named = "+".join(sorted(args.without))
    report = {"without": named, "sets": {}}
    print(f"{'set':32} {'n':>4} {'dict':>6} {'without':>8} {'with':>6}  fixed/broken by {named}")
    totals = [0, 0]
    sets = dev_sets(args.limit)
    if args.context is not None:
        sets = {name: [replace(it, context=args.context) for it in items]
                for name, items in sets.items() if not name.endswith(NO_CONTEXT)}
    report["context"] = args.context
    for name, items in sets.items():
        odd = items[1::2]
        right = {key: [] for key in ("dictionary", "without", "with")}
        changed = []
        for item in odd:
            gold = {nfkc(o) for o in item.outputs}
            request = ConversionRequest(item.reading, left_context=item.context)
            texts = [first(c, request) for c in (plain, less, full)]
            for key, text in zip(right, texts):
                right[key].append(nfkc(text) in gold)
            if texts[1] != texts[2]:
                changed.append({"reading": item.reading, "without": texts[1], "with": texts[2],
                                "gold": item.outputs[0]})
        n = max(1, len(odd))
        fixed, broken = fixed_broken(right["without"], right["with"])
        totals[0] += fixed
        totals[1] += broken
        report["sets"][name] = {"n": len(odd), **{k: sum(v) / n for k, v in right.items()},
                                "fixed": fixed, "broken": broken, "changed": changed}
        print(f"{name:32} {len(odd):4} {100 * sum(right['dictionary']) / n:5.1f}% "
              f"{100 * sum(right['without']) / n:7.1f}% {100 * sum(right['with']) / n:5.1f}%  {fixed}/{broken}")
    print(f"all sets: {totals[0]} fixed, {totals[1]} broken; {time.perf_counter() - started:.0f} s")
    report["fixed"], report["broken"] = totals
    write_report(args.json, report, started)
    return 0


if __name__ == "__main__":
    sys.exit(main())
