"""`karukan convert`: candidates for a reading, best first, one a line; or JSON lines in and out.

    karukan convert [--context TEXT] [-n N] [--no-model] [--model ID] [--annotations] READING
    karukan convert --jsonl   < {"id": .., "context": "..", "reading": "..", "n": 5} per line
                              > {"id": .., "candidates": [..], "ms": 1.2} per line, in input order

The list holds what the rewriters add after ranking (emoji, symbols, dates, numbers …, as
[rewriters] in the config allows). --annotations: each line is `surface<TAB>annotation` (the
annotation may be empty), and each JSON answer gets "annotations", one per candidate.

The converter is built once. A bad line (not JSON, nested too deeply, too long, a bad field, a
reading over MAX_READING_CHARS) is answered with {"id": .., "error": ".."} and the run goes on.
READING may be hiragana or katakana (half-width too).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any, Iterator, TextIO

from karukan_engine.core.errors import UsageError
from karukan_engine.core.types import Converter, ConversionRequest
from karukan_engine.core.types import Candidate
from karukan_engine.kana import to_fullwidth_katakana, to_hiragana
from karukan_engine.rewriters import RewriterStage

DEFAULT_N = 5
MAX_N = 1000
# Longer readings are refused with a clear error: nobody converts a page at once, and the
# converter's time grows with the reading (its memory is linear).
MAX_READING_CHARS = 2000
MAX_CONTEXT_CHARS = 10000
# A --jsonl line longer than this is answered with an error without being held in memory.
MAX_LINE_CHARS = 1 << 20


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("convert", help="convert a kana reading, print candidates best first",
                              description=__doc__.split("\n\n")[0])
    p.add_argument("reading", nargs="?", help="hiragana or katakana reading")
    p.add_argument("--context", default="", help="text left of the caret (left context); empty: unknown text, a newline: "
                   "the caret starts a line (a sentence start)")
    p.add_argument("-n", type=int, default=DEFAULT_N, help=f"number of candidates (default {DEFAULT_N})")
    p.add_argument("--no-model", action="store_true", help="dictionary (or kana) only, never load a model")
    p.add_argument("--model", default=None, help="model id from models.toml or a GGUF path")
    p.add_argument("--jsonl", action="store_true", help="read JSON requests on stdin, write JSON lines")
    p.add_argument("--annotations", action="store_true",
                   help="print each candidate's annotation after a tab (JSON: an \"annotations\" list)")
    p.set_defaults(handler=run)


def normalise_reading(reading: str) -> str:
    """Katakana (full or half width) → hiragana; surrounding whitespace dropped."""
    return to_hiragana(to_fullwidth_katakana(reading.strip()))


class ReadingError(ValueError):
    """A reading (or context) the converter will not take; the message says why."""


def check_request(reading: str, context: str) -> None:
    if len(reading) > MAX_READING_CHARS:
        raise ReadingError(f"reading longer than {MAX_READING_CHARS} characters ({len(reading)}); split it")
    if len(context) > MAX_CONTEXT_CHARS:
        raise ReadingError(f"context longer than {MAX_CONTEXT_CHARS} characters")
    if any("\ud800" <= ch <= "\udfff" for ch in reading + context):
        raise ReadingError("lone surrogate in the text")


def convert_one(converter: Converter, reading: str, context: str, n: int,
                rewriters: RewriterStage | None = None) -> list[Candidate]:
    """Up to n candidates, best first: the converter's, with the rewriters' placed among them."""
    check_request(reading, context)
    reading = normalise_reading(reading)
    if not reading:
        raise ReadingError("empty reading")
    request = ConversionRequest(reading, context, learn=False)
    found = list(converter.candidates(request, n)) or [Candidate(reading)]
    return (rewriters.rewrite(reading, found) if rewriters is not None else found)[:n]


def _rewriters() -> RewriterStage:
    """The stage as the user's [rewriters] settings have it (the config's problems are for
    `karukan keys` and the engine to report); nothing `convert` chooses is remembered."""
    from karukan_engine.config import Config, ConfigError
    from karukan_engine.rewriters.choice_memory import ChoiceMemory

    try:
        settings = Config.load().rewriters
    except ConfigError:
        settings = Config().rewriters
    return RewriterStage(settings, memory=ChoiceMemory())


def run(args: argparse.Namespace) -> int:
    if not 1 <= args.n <= MAX_N:
        raise UsageError(f"-n must be between 1 and {MAX_N}")
    if args.jsonl and args.reading:
        raise UsageError("give a READING or --jsonl, not both")
    if not args.jsonl and not (args.reading and normalise_reading(args.reading)):
        raise UsageError("a READING is needed (or --jsonl)")
    if not args.jsonl:
        try:
            check_request(args.reading, args.context)
        except ReadingError as exc:
            raise UsageError(str(exc)) from None
    from karukan_engine.conversion.factory import ConverterOptions, build_converter

    converter = build_converter(ConverterOptions(use_model=not args.no_model, model_id=args.model,
                                                 require_model=args.model is not None, batch=True))
    if args.jsonl:
        reconfigure = getattr(sys.stdin, "reconfigure", None)
        if callable(reconfigure):   # a line that is not UTF-8 gets an error, not the end of the run
            reconfigure(errors="surrogateescape")
        serve_jsonl(converter, sys.stdin, sys.stdout, args.context, args.n, _rewriters(), args.annotations)
        return 0
    for cand in convert_one(converter, args.reading, args.context, args.n, _rewriters()):
        print(f"{cand.surface}\t{cand.annotation}" if args.annotations else cand.surface)
    return 0


def serve_jsonl(converter: Converter, inp: TextIO, out: TextIO, default_context: str, default_n: int,
                rewriters: RewriterStage | None = None, annotations: bool = False) -> None:
    for line in _bounded_lines(inp, MAX_LINE_CHARS):
        if line is None:
            answer: dict[str, Any] = {"id": None, "error": f"line longer than {MAX_LINE_CHARS} characters"}
        elif not line.strip():
            continue
        else:
            answer = _answer(converter, line, default_context, default_n, rewriters, annotations)
        out.write(_dumps(answer) + "\n")
        out.flush()


def _bounded_lines(inp: TextIO, limit: int) -> Iterator[str | None]:
    """The lines of inp; None for a line over `limit` characters (skipped without keeping it)."""
    while True:
        line = inp.readline(limit + 1)
        if not line:
            return
        if len(line) > limit and not line.endswith("\n"):
            while True:   # drop the rest of this line, a piece at a time
                rest = inp.readline(limit)
                if not rest or rest.endswith("\n"):
                    break
            yield None
            continue
        yield line


def _dumps(answer: dict[str, Any]) -> str:
    text = json.dumps(answer, ensure_ascii=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:   # an id holding a lone surrogate: send it escaped
        text = json.dumps(answer)
    return text


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not allowed")


def _answer(converter: Converter, line: str, default_context: str, default_n: int,
            rewriters: RewriterStage | None, annotations: bool) -> dict[str, Any]:
    """The answer to one line; never raises (every bad line gets an error and the run goes on)."""
    try:
        item = json.loads(line, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        return {"id": None, "error": f"not JSON: {exc.msg}"}
    except RecursionError:
        return {"id": None, "error": "not JSON: nested too deeply"}
    except (ValueError, MemoryError) as exc:
        return {"id": None, "error": f"not JSON: {exc}" if isinstance(exc, ValueError) else "not JSON: too large"}
    if not isinstance(item, dict):
        return {"id": None, "error": "each line must be a JSON object"}
    ident = item.get("id")
    try:
        json.dumps(ident, allow_nan=False)   # echoed back: it must be JSON again (1e400 would be Infinity)
    except (ValueError, TypeError, RecursionError):
        return {"id": None, "error": "id cannot be echoed back"}
    reading, context, n = item.get("reading"), item.get("context", default_context), item.get("n", default_n)
    if not isinstance(reading, str):
        return {"id": ident, "error": "reading must be a string"}
    if not isinstance(context, str):
        return {"id": ident, "error": "context must be a string"}
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= MAX_N:
        return {"id": ident, "error": f"n must be an integer between 1 and {MAX_N}"}
    start = time.perf_counter()
    try:
        candidates = convert_one(converter, reading, context, n, rewriters)
    except ReadingError as exc:
        return {"id": ident, "error": str(exc)}
    except Exception as exc:  # one bad item must not end the run
        return {"id": ident, "error": f"{type(exc).__name__}: {exc}"}
    answer: dict[str, Any] = {"id": ident, "candidates": [c.surface for c in candidates]}
    if annotations:
        answer["annotations"] = [c.annotation for c in candidates]
    answer["ms"] = round((time.perf_counter() - start) * 1000, 3)
    return answer
