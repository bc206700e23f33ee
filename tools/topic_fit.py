"""Fit and measure the topic vectors' weight on the judged paths (lattice/topic_paths.py).

    python tools/topic_fit.py [--topics FILE] [--grid 0,100,200] [--limit 600] [--json out.json]

Each dev set's rows (as tools/lattice_lm_fit.py finds them: the bundled sets and the held-out
sets under <work>/pairs/heldout/, each with and without its left context) are converted once by
the shipped lattice converter (with the corpus nouns, no user data) without the topic term; its judged paths keep their scores, the
dictionary's own first choice is noted, and each path's topic association is computed. Every
weight of the grid is then applied to those scores, the dictionary's margin rule after it, as
the converter does. Even rows fit the weight (the best summed Acc@1 over the sets with context,
no set losing more than one point against today's default), odd rows are reported: Acc@1 NFKC
of the dictionary alone, today's default (weight 0) and the fitted weight, with rows fixed /
broken against each.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tools.lattice_lm_fit import dev_sets, fixed_broken, floats, write_report  # noqa: E402

from karukan_engine.dictionary.system import SystemDictionary  # noqa: E402
from karukan_engine.kana import nfkc  # noqa: E402
from karukan_engine.lattice.converter import LatticeConverter, _first_path  # noqa: E402
from karukan_engine.lattice.corpus_words import CorpusWordSource  # noqa: E402
from karukan_engine.lattice.lm_paths import ScoredPath, keep_dictionary_choice  # noqa: E402
from karukan_engine.lattice.topic_paths import topic_nats  # noqa: E402
from karukan_engine.lattice.word_lm import WordLmWeights, WordScorer, dictionary_margin, path_words  # noqa: E402
from karukan_engine.lm.char_ngram import BUNDLED as CHAR_NGRAM  # noqa: E402
from karukan_engine.lm.char_ngram import CharNgram  # noqa: E402
from karukan_engine.lm.topic_vectors import BUNDLED as TOPICS  # noqa: E402
from karukan_engine.lm.topic_vectors import TopicVectors  # noqa: E402
from karukan_engine.lm.word_ngram import WordNgram  # noqa: E402
from karukan_engine.core.types import ConversionRequest  # noqa: E402

GRID = (0.0, 50.0, 100.0, 150.0, 200.0, 300.0, 400.0, 600.0, 800.0, 1200.0)
MAX_LOSS = 0.01


def gather(converter: LatticeConverter, scorer: WordScorer, items) -> list[dict]:
    rows = []
    for item in items:
        analysis = converter._analyse(ConversionRequest(item.reading, left_context=item.context))
        gold = {nfkc(o) for o in item.outputs}
        ranked = analysis.ranked
        dictionary, length = _first_path(analysis.lattice, analysis.plain) if analysis.plain is not None else (
            ranked[0].surface if ranked else "", len(ranked[0].nodes) if ranked else 0)
        words = [path_words(scorer, analysis.lattice, list(p.nodes)) for p in ranked]
        topics = topic_nats(scorer.topics.vectors, scorer.topics.rows(item.context), words) if ranked else []
        rows.append({"scores": [p.score for p in ranked], "surfaces": [p.surface for p in ranked],
                     "right": [nfkc(p.surface) in gold for p in ranked], "topics": topics,
                     "dictionary": dictionary, "dictionary_right": nfkc(dictionary) in gold,
                     "margin": dictionary_margin(converter.word_weights, item.context, length)})
    return rows


def first_right(row: dict, weight: float) -> bool:
    if not row["scores"]:
        return False
    paths = [ScoredPath(s - weight * t, 0, surface, (i,))
             for i, (s, t, surface) in enumerate(zip(row["scores"], row["topics"], row["surfaces"]))]
    order = sorted(range(len(paths)), key=lambda i: (paths[i].score, i))
    ranked = keep_dictionary_choice([paths[i] for i in order], row["dictionary"], row["margin"])
    return row["right"][ranked[0].nodes[0]]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--topics", type=Path, default=TOPICS)
    parser.add_argument("--grid", type=floats, default=GRID, help="topic weights, cost units per nat")
    parser.add_argument("--limit", type=int, default=600, help="items per dev set (every k-th)")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    started = time.perf_counter()
    dictionary = SystemDictionary()
    model = WordNgram.load()
    scorer = WordScorer(model, dictionary, TopicVectors.load(args.topics, digest=model.vocabulary_digest))
    ngram = CharNgram.load(CHAR_NGRAM)
    converter = LatticeConverter(dictionary, None, None, lm=lambda: ngram, word_lm=lambda: scorer,
                                 word_weights=WordLmWeights(topic=0.0), corpus_words=CorpusWordSource.load(dictionary))
    sets = dev_sets(args.limit)
    gathered = {name: gather(converter, scorer, items) for name, items in sets.items()}
    print(f"gathered {sum(map(len, gathered.values()))} rows: {time.perf_counter() - started:.0f} s", file=sys.stderr)
    fit_sets = [n for n in gathered if not n.endswith("(no context)")]

    def accuracy(name: str, parity: int, weight: float) -> list[bool]:
        return [first_right(row, weight) for row in gathered[name][parity::2]]

    best, best_total = 0.0, -1.0
    for weight in args.grid:
        total, ok = 0.0, True
        for name in fit_sets:
            base, tried = accuracy(name, 0, 0.0), accuracy(name, 0, weight)
            n = max(1, len(base))
            ok &= (sum(base) - sum(tried)) / n <= MAX_LOSS
            total += sum(tried) / n
        print(f"weight {weight:7.1f}: fit mean {100 * total / len(fit_sets):.2f}%{'' if ok else ' (a set loses)'}",
              file=sys.stderr)
        if ok and total > best_total + 1e-9:
            best, best_total = weight, total
    report = {"fitted_weight": best, "grid": list(args.grid), "sets": {}}
    print(f"fitted topic weight {best}")
    print(f"{'set':30} {'n':>4} {'dict':>6} {'default':>8} {'topic':>6}  fixed/broken vs dict, vs default")
    for name in gathered:
        odd = gathered[name][1::2]
        dictionary = [row["dictionary_right"] for row in odd]
        default, tried = accuracy(name, 1, 0.0), accuracy(name, 1, best)
        n = max(1, len(odd))

        vs_dict, vs_default = fixed_broken(dictionary, tried), fixed_broken(default, tried)
        report["sets"][name] = {"n": len(odd), "dictionary": sum(dictionary) / n, "default": sum(default) / n,
                                "topic": sum(tried) / n, "vs_dictionary": vs_dict, "vs_default": vs_default,
                                "default_vs_dictionary": fixed_broken(dictionary, default)}
        print(f"{name:30} {len(odd):4} {100 * sum(dictionary) / n:5.1f}% {100 * sum(default) / n:7.1f}% "
              f"{100 * sum(tried) / n:5.1f}%  {vs_dict[0]}/{vs_dict[1]}, {vs_default[0]}/{vs_default[1]}")
    write_report(args.json, report, started)
    return 0


if __name__ == "__main__":
    sys.exit(main())
