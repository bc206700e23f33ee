#!/usr/bin/env python3
"""Record Mozc's first candidate page for each reading of a list (the Mozc side of
benchmarks/candidate_pages_eval.py).

Mozc is driven through Debian's emacs-mozc-bin helper (`mozc_emacs_helper`), which speaks
s-expressions on stdin/stdout to `mozc_server`: for each reading we type its romaji, press Space
twice (the first converts, the second opens the candidate window, as in ibus-mozc) and read the
window's first page; Escape twice then cancels, so nothing is committed and Mozc learns nothing.
mozc_server refuses to run as root: pass `--user` to run the helper as an unprivileged user
(with its own HOME, which needs a ~/.config directory).

    python tools/mozc_pages.py --readings readings.json --out pages.json --user mozcuser
"""

from __future__ import annotations

import argparse
import json
import os
import pwd
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from karukan_engine.romaji.table import RomajiTable  # noqa: E402

PAGE = 9


# -- the helper's s-expressions -----------------------------------------------------------------

def parse_sexp(text: str):
    """One s-expression: lists become Python lists, strings str, numbers int, symbols Symbol;
    a dotted pair (a . b) becomes [a, Symbol('.'), b]."""
    return _parse(text, 0)[0]


class Symbol(str):
    pass


def _parse(text: str, i: int):
    while text[i].isspace():
        i += 1
    if text[i] == "(":
        items = []
        i += 1
        while True:
            while text[i].isspace():
                i += 1
            if text[i] == ")":
                return items, i + 1
            item, i = _parse(text, i)
            items.append(item)
    if text[i] == '"':
        out = []
        i += 1
        while text[i] != '"':
            if text[i] == "\\":
                i += 1
            out.append(text[i])
            i += 1
        return "".join(out), i + 1
    j = i
    while j < len(text) and not text[j].isspace() and text[j] not in "()":
        j += 1
    atom = text[i:j]
    try:
        return int(atom), j
    except ValueError:
        return Symbol(atom), j


def field(items, name: str):
    """The value of (name . value) inside a list of pairs, or None."""
    if not isinstance(items, list):
        return None
    for item in items:
        if isinstance(item, list) and item and item[0] == name:
            if len(item) >= 3 and item[1] == ".":
                return item[2] if len(item) == 3 else item[2:]
            return item[1:]
    return None


def window_page(output) -> list[str]:
    """The first page of the candidate window in one SendKey output."""
    window = field(output, "candidates")
    if window is None:
        return []
    entries = [c for c in field(window, "candidate") or [] if isinstance(c, list)]
    ranked = sorted((field(c, "index"), field(c, "value")) for c in entries)
    return [value for index, value in ranked if index < PAGE]


def preedit_segments(output) -> list[tuple[str, str]]:
    """(key, value) of each preedit segment."""
    preedit = field(output, "preedit")
    if preedit is None:
        return []
    segments = field(preedit, "segment") or []
    return [(field(s, "key"), field(s, "value")) for s in segments if isinstance(s, list)]


# -- the helper process -------------------------------------------------------------------------

class MozcHelper:
    def __init__(self, user: str | None) -> None:
        helper = shutil.which("mozc_emacs_helper")
        if helper is None:
            raise SystemExit("mozc_emacs_helper not found (Debian: apt-get install emacs-mozc-bin mozc-server)")
        command = [helper]
        if user is not None:
            home = pwd.getpwnam(user).pw_dir
            subprocess.run(["runuser", "-u", user, "--", "mkdir", "-p", os.path.join(home, ".config")], check=True)
            command = ["runuser", "-u", user, "--", "env", "-i", f"HOME={home}", "PATH=/usr/bin:/bin", helper]
        self._process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         text=True, encoding="utf-8")
        greeting = parse_sexp(self._process.stdout.readline())
        self.version = field(greeting, "version")
        self._event = 0
        self._session = field(self._call("CreateSession"), "emacs-session-id")

    def _call(self, *words) -> list:
        self._event += 1
        self._process.stdin.write(f"({self._event} {' '.join(str(w) for w in words)})\n")
        self._process.stdin.flush()
        reply = parse_sexp(self._process.stdout.readline())
        if field(reply, "error") is not None:
            raise RuntimeError(f"mozc helper: {field(reply, 'message')}")
        return reply

    def key(self, key) -> list:
        return field(self._call("SendKey", self._session, key), "output") or []

    def first_page(self, romaji: str) -> dict:
        for ch in romaji:
            self.key(ord(ch))
        converted = self.key("space")
        shown = self.key("space")
        self.key("escape")
        self.key("escape")
        return {"segments": [key for key, _ in preedit_segments(converted)],
                "top": "".join(value for _, value in preedit_segments(converted)),
                "page": window_page(shown)}

    def close(self) -> None:
        self._process.stdin.close()
        self._process.wait(timeout=10)


def plain_romaji(table: RomajiTable, reading: str) -> str | None:
    """Keys for the reading, spelt the usual way (ka, not ca) where the table allows: the keys
    show up in Mozc's list as its romaji forms."""
    usual = RomajiTable([r for r in table.rules.values() if not set(r.input) & set("cqlx")])
    return usual.romaji_for(reading) or table.romaji_for(reading)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--readings", type=Path, required=True,
                        help="JSON list of hiragana readings, or of items with a 'reading' (kept in the output)")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--user", help="run the helper as this unprivileged user")
    args = parser.parse_args()

    table = RomajiTable.load(REPO / "karukan_engine" / "data" / "romaji-hiragana.tsv")
    items = json.loads(args.readings.read_text(encoding="utf-8"))
    readings = [item["reading"] if isinstance(item, dict) else item for item in items]
    helper = MozcHelper(args.user)
    pages = {}
    for reading in readings:
        romaji = plain_romaji(table, reading)
        if romaji is None:
            continue
        result = {"keys": romaji, **helper.first_page(romaji)}
        if "".join(result["segments"]) != reading:
            result["typed_as"] = "".join(result["segments"])   # Mozc's table read the keys differently
        pages[reading] = result
    helper.close()
    dpkg = subprocess.run(["dpkg-query", "-W", "-f", "${Version}", "mozc-server"], capture_output=True, text=True)
    args.out.write_text(json.dumps({"mozc_version": helper.version, "debian_package": dpkg.stdout.strip() or None,
                                    "page_size": PAGE, "items": items, "pages": pages}, ensure_ascii=False, indent=1) + "\n",
                        encoding="utf-8")
    print(f"{len(pages)} pages from Mozc {helper.version} -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
