"""`karukan eval FILE [--no-model] [-n N] [--json OUT]`: accuracy of the configured converter."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from karukan_engine.evaluation.metrics import EvalItem, evaluate, format_summary, load_items


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("eval", help="measure conversion accuracy on a TSV/JSONL file")
    parser.add_argument("file", nargs="+", type=Path,
                        help="TSV (reading<TAB>output...) or JSONL ({reading, outputs, context})")
    parser.add_argument("--no-model", action="store_true", help="dictionary only, never load a model")
    parser.add_argument("--model", default=None, help="a models.toml id or a GGUF path")
    parser.add_argument("-n", type=int, default=5, help="candidates per item (Recall@N, default 5)")
    parser.add_argument("--no-context", action="store_true",
                        help="ignore the items' left context (to measure what it brings)")
    parser.add_argument("--limit", type=int, default=0, help="only the first N items of each file")
    parser.add_argument("--json", type=Path, help="write the figures (and the misses) here")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from karukan_engine.core.errors import UsageError
    from karukan_engine.conversion.factory import ConverterOptions, build_converter
    from karukan_engine.core.types import ConversionRequest

    if args.n < 1:
        raise UsageError("-n must be at least 1")
    datasets = {}
    for path in args.file:
        if not path.is_file():
            raise UsageError(f"no such file: {path}")
        items = load_items(path)
        datasets[path.name] = items[: args.limit] if args.limit else items
    converter = build_converter(ConverterOptions(use_model=not args.no_model, model_id=args.model,
                                                 require_model=args.model is not None, batch=True))

    def convert(item: EvalItem, n: int) -> list[str]:
        context = "" if args.no_context else item.context
        request = ConversionRequest(item.reading, left_context=context, learn=False)
        return [c.surface for c in converter.candidates(request, n)]

    report = {"converter": type(converter).__name__, "sets": {}}
    for name, items in datasets.items():
        scores = evaluate(items, convert, args.n)
        summary = scores.summary()
        print(format_summary(name, summary))
        report["sets"][name] = {**summary, "misses": scores.misses}
    if args.json:
        args.json.write_text(json.dumps(report, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    return 0
