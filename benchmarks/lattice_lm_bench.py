"""What judging the lattice's paths with the character n-gram costs a key's live conversion.

Types a sentence one kana at a time (each prefix is one live conversion, as a key asks) and
times LatticeConverter.live for each number of judged paths (1: the dictionary alone), with a
fresh analysis cache per setting. Prints a table and writes JSON.

    python benchmarks/lattice_lm_bench.py --paths 1,8,16,24,40 --json lattice_lm_bench.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from karukan_engine.core.types import ConversionRequest  # noqa: E402
from karukan_engine.dictionary.system import SystemDictionary  # noqa: E402
from karukan_engine.lattice.converter import LatticeConverter  # noqa: E402
from karukan_engine.lattice.lm_paths import LmWeights  # noqa: E402
from karukan_engine.lm.char_ngram import BUNDLED, CharNgram  # noqa: E402

SENTENCES = ("かいぎのしりょうをおくりますのでごかくにんください", "きょうはいいてんきですね",
             "ぎんこうのゆうしけいかくについてせつめいします", "らいしゅうのよていをおしえてください")


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * share))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--paths", default="1,8,16,24,40", help="judged paths per setting (1: dictionary alone)")
    parser.add_argument("--ngram", type=Path, default=BUNDLED)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    started = time.perf_counter()
    ngram = CharNgram.load(args.ngram)
    load_s = time.perf_counter() - started
    dictionary = SystemDictionary()
    rows = []
    print(f"n-gram loaded in {load_s:.2f} s")
    print(f"{'paths':>5} {'keys':>5} {'p50 ms':>7} {'p95 ms':>7} {'max ms':>7}")
    for paths in (int(p) for p in args.paths.split(",")):
        weights = LmWeights(weight=LmWeights().weight if paths > 1 else 0.0, paths=paths)
        times = []
        for _ in range(args.repeats):
            converter = LatticeConverter(dictionary, None, None, lm=lambda: ngram, lm_weights=weights)
            for sentence in SENTENCES:
                for end in range(1, len(sentence) + 1):
                    t = time.perf_counter()
                    converter.live(ConversionRequest(sentence[:end]))
                    times.append((time.perf_counter() - t) * 1000)
        row = {"paths": paths, "keys": len(times), "p50_ms": round(percentile(times, 0.5), 3),
               "p95_ms": round(percentile(times, 0.95), 3), "max_ms": round(max(times), 3)}
        rows.append(row)
        print(f"{paths:5} {row['keys']:5} {row['p50_ms']:7.2f} {row['p95_ms']:7.2f} {row['max_ms']:7.2f}")
    if args.json:
        args.json.write_text(json.dumps({"load_s": round(load_s, 3), "rows": rows}, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
