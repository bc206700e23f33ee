"""`karukan keys "kyouha<space><return>"`: drive one session and print the view after each key.

Plain characters are typed as they are (an upper-case letter as Shift+letter); `<Name>` is an X
keysym name with optional modifiers (`<C-u>`, `<S-Left>`, `<F7>`), names are case-insensitive
when unambiguous (`<return>` = `<Return>`). Output, one block per key:

    key 12: <Return>
      preedit: きょうは|              composition, | marks the caret
      preedit: [今日]/は              conversion: segments split by /, the focused one in []
      candidates: page 1/2, 12 in all
      > 1. 今日  [辞書]
      suggestions:                    completions while composing; > marks the one selected (Tab)
        1. 今日は
      aux: ...
      commit: 今日は                  only when something was committed
"""

from __future__ import annotations

import argparse
import sys
from typing import Iterator

from karukan_engine.core.errors import UsageError
from karukan_engine.config import Config, ConfigError
from karukan_engine.session.keysyms import (
    NAME_TO_KEYSYM,
    SHIFT_MASK,
    KeySpecError,
    keysym_for_char,
    parse_key_spec,
)
from karukan_engine.session.view import PreeditStyle, View

_LOWER_NAMES = {}
for _name in NAME_TO_KEYSYM:
    _LOWER_NAMES.setdefault(_name.lower(), []).append(_name)


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("keys", help="drive one input session with key names, print each view",
                              description=__doc__.split("\n\n")[0])
    p.add_argument("keys", help='keys to type, e.g. "kyouha<space><Return>"')
    p.add_argument("--no-model", action="store_true", help="dictionary (or kana) only, never load a model")
    p.add_argument("--model", default=None, help="model id from models.toml or a GGUF path")
    p.add_argument("--config", default=None, help="config file (default: the user's config, if any)")
    p.add_argument("--live", action=argparse.BooleanOptionalAction, default=None,
                   help="live conversion on (--no-live: off); default: the config's, which is on")
    p.set_defaults(handler=run)


def parse_keys(text: str) -> Iterator[tuple[str, int, int]]:
    """Yield (label, keysym, modifiers) for each key of a `keys` string."""
    i = 0
    while i < len(text):
        ch = text[i]
        close = text.find(">", i + 1) if ch == "<" else -1
        if close > i + 1:
            spec = text[i + 1 : close]
            keysym, mods = _parse_spec(spec)
            yield f"<{spec}>", keysym, mods
            i = close + 1
            continue
        if ch == "\n":
            yield "<Return>", NAME_TO_KEYSYM["Return"], 0
        else:
            mods = SHIFT_MASK if ch.isascii() and ch.isupper() else 0
            yield ch, keysym_for_char(ch), mods
        i += 1


def _parse_spec(spec: str) -> tuple[int, int]:
    try:
        return parse_key_spec(spec)
    except KeySpecError:
        pass
    # Forgive the case of a key name when only one name fits (<return>, <f7>, <zenkaku_hankaku>).
    prefix, _, name = spec.rpartition("-") if "-" in spec[1:] else ("", "", spec)
    matches = _LOWER_NAMES.get(name.lower(), [])
    if len(matches) == 1:
        try:
            return parse_key_spec(f"{prefix}-{matches[0]}" if prefix else matches[0])
        except KeySpecError:
            pass
    raise UsageError(f"unknown key <{spec}> (use X keysym names such as Return, BackSpace, F7, C-u, S-Left)")


def format_view(view: View) -> list[str]:
    lines = []
    if view.preedit:
        lines.append(f"  preedit: {_preedit(view)}")
    if view.candidates is not None and view.candidates.items:
        page = view.candidates
        lines.append(f"  candidates: page {page.page + 1}/{page.pages}, {page.total} in all")
        for i, item in enumerate(page.items):
            mark = ">" if i == page.cursor else " "
            note = f"  {item.annotation}" if item.annotation else ""
            lines.append(f"  {mark} {item.label}. {item.text}{note}")
    if view.suggestions is not None and view.suggestions.items:
        lines.append("  suggestions:")
        for i, item in enumerate(view.suggestions.items):
            mark = ">" if i == view.suggestions.cursor else " "
            lines.append(f"  {mark} {item.label}. {item.text}")
    if view.aux:
        lines.append(f"  aux: {view.aux}")
    if view.commit:
        lines.append(f"  commit: {view.commit}")
    return lines


def _preedit(view: View) -> str:
    if len(view.preedit) == 1 and view.preedit[0].style is PreeditStyle.UNDERLINE:
        text = view.preedit_text
        return text[: view.caret] + "|" + text[view.caret :]
    return "/".join(f"[{s.text}]" if s.style is PreeditStyle.HIGHLIGHT else s.text for s in view.preedit)


def run(args: argparse.Namespace) -> int:
    from dataclasses import replace

    from karukan_engine.conversion.factory import ConverterOptions, build_converter
    from karukan_engine.session.session import Session

    keys = list(parse_keys(args.keys))   # usage errors before anything loads
    try:
        config = Config.load(args.config)
    except ConfigError as exc:   # only an explicit --config that does not exist
        raise UsageError(str(exc)) from None
    for problem in config.problems:   # a damaged config still types, with each problem said once
        print(f"karukan: warning: {problem}", file=sys.stderr)
    if args.live is not None:
        config = replace(config, session=replace(config.session, live_conversion=args.live))
    converter = build_converter(ConverterOptions(use_model=not args.no_model, model_id=args.model,
                                                 require_model=args.model is not None))
    session = Session(converter, config)   # it logs a bad keymap or romaji table once itself
    out = sys.stdout
    for number, (label, keysym, mods) in enumerate(keys, 1):
        view = session.process_key(keysym, mods)
        note = "" if view.handled else " (not handled)"
        out.write(f"key {number}: {label}{note}\n")
        for line in format_view(view):
            out.write(line + "\n")
    out.flush()
    converter.close()   # writes learning that is saved in the background
    return 0
