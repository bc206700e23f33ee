"""Compile Mozc's rewriter tables into karukan_engine/data/rewriters/tables.json.gz.

    python tools/build_rewriters.py --mozc-data DIR      # DIR: a Mozc src/data tree (or a copy
                                                         # holding emoji/ emoticon/ symbol/ single_kanji/)

DIR may be `src/data` of google/mozc at any recent commit, or of Debian's mozc source package
(`apt-get source mozc`, then mozc-*/src/data). Read from it: emoji/emoji_data.tsv and
manual_emoji_data.tsv (emoji by kana reading), emoticon/emoticon.tsv and categorized.tsv (顔文字),
symbol/symbol.tsv and categorized.tsv (symbols and their descriptions), single_kanji/
single_kanji.tsv and variant_rule.txt (kanji by reading, 異体字 notes).

`:name` queries need English names: with the `emoji` package importable (BSD; its aliases are
GitHub's shortcodes, its names Unicode CLDR's short names) those are used, else the Unicode
character names Python knows (no `:+1`). The output format is karukan_engine/rewriters/tables.py.
"""

from __future__ import annotations

import argparse
import re
import sys
import unicodedata
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))   # run as a script: karukan_engine from this checkout

from karukan_engine.kana import to_hiragana  # noqa: E402
from karukan_engine.rewriters import tables as rewriter_tables  # noqa: E402

_KANA_READING = re.compile(r"[ぁ-ゖー]+")
_SKIN_TONES = re.compile("[\U0001F3FB-\U0001F3FF]")


def _rows(path: Path) -> list[list[str]]:
    return [line.split("\t") for line in path.read_text(encoding="utf-8").splitlines()
            if line.strip() and not line.startswith("#")]


def _kana(words: str) -> list[str]:
    """The kana readings among space-separated words (Mozc's lists also hold ASCII and digits)."""
    return [w for w in words.split() if _KANA_READING.fullmatch(w)]


def _append(table: dict[str, list], key: str, value, seen: dict[str, set]) -> None:
    surface = value[0] if isinstance(value, list) else value
    if surface not in seen.setdefault(key, set()):
        seen[key].add(surface)
        table.setdefault(key, []).append(value)


def emoji_by_reading(data: Path) -> dict[str, list[str]]:
    """Reading → emoji; those whose Japanese name is the reading first (ねこ: 🐱 before 🐈)."""
    named: dict[str, list[str]] = {}
    rest: dict[str, list[str]] = {}
    seen: dict[str, set] = {}
    for name in ("emoji_data.tsv", "manual_emoji_data.tsv"):
        for row in _rows(data / "emoji" / name):
            if len(row) < 3 or not row[1]:
                continue
            japanese = to_hiragana(row[4]) if len(row) > 4 else ""
            for reading in _kana(row[2]):
                _append(named if reading == japanese else rest, reading, row[1], seen)
    return {r: named.get(r, []) + rest.get(r, []) for r in sorted(set(named) | set(rest))}


def emoji_names(known: set[str]) -> dict[str, str]:
    """`:name` → emoji: shortcodes and CLDR names where the `emoji` package is there."""
    names: dict[str, str] = {}
    try:
        import emoji   # build-time only
    except ImportError:
        emoji = None
    if emoji is not None:
        for char, info in emoji.EMOJI_DATA.items():
            if info.get("status") != emoji.STATUS["fully_qualified"] or _SKIN_TONES.search(char):
                continue
            for name in [*info.get("alias", []), info.get("en", "")]:
                key = name.strip(":").lower()
                if key:
                    names.setdefault(key, char)
    for char in sorted(known):
        base = char.replace("\ufe0f", "")
        if len(base) == 1:
            key = unicodedata.name(base, "").lower().replace(" ", "_")
            if key:
                names.setdefault(key, char)
    return dict(sorted(names.items()))


def emoticons(data: Path) -> dict[str, list[str]]:
    table: dict[str, list[str]] = {}
    seen: dict[str, set] = {}
    for row in _rows(data / "emoticon" / "emoticon.tsv"):
        if len(row) >= 2 and row[0]:
            for reading in ["かおもじ", *_kana(row[1])]:
                _append(table, reading, row[0], seen)
    for row in _rows(data / "emoticon" / "categorized.tsv"):
        if len(row) >= 3 and row[0]:
            for reading in ["かおもじ", *_kana(row[2])]:
                _append(table, reading, row[0], seen)
    return dict(sorted(table.items()))


def symbol_order(data: Path) -> dict[str, int]:
    """Mozc's display order of symbols (ordering_rule.txt: one character a line, `#` comments
    but a lone `#` is the character)."""
    order: dict[str, int] = {}
    for line in (data / "symbol" / "ordering_rule.txt").read_text(encoding="utf-8").splitlines():
        char = line if line.strip() == "#" or not line.startswith("#") else ""
        if char:
            order.setdefault(char, len(order))
    return order


def symbols(data: Path) -> dict[str, list[list[str]]]:
    """Reading → [symbol, description]: in Mozc's display order where ordering_rule.txt ranks the
    symbol's first character (かっこ: （） 「」 【】 『』 …), the table's order after them (やじるし:
    → ← ↑ ↓ ⇒ …)."""
    table: dict[str, list[list[str]]] = {}
    seen: dict[str, set] = {}
    for row in _rows(data / "symbol" / "symbol.tsv")[1:]:   # the first row names the columns
        if len(row) < 3 or not row[1]:
            continue
        description = row[3] if len(row) > 3 else ""
        extra = row[4] if len(row) > 4 else ""
        note = f"{description}（{extra}）" if description and extra else description or extra
        for reading in _kana(row[2]):
            _append(table, reading, [row[1], note], seen)
    for row in _rows(data / "symbol" / "categorized.tsv"):
        if len(row) >= 3 and row[0]:
            for reading in _kana(row[2]):
                _append(table, reading, [row[0], ""], seen)
    order = symbol_order(data)
    unranked = len(order)
    return {reading: sorted(found, key=lambda entry: order.get(entry[0][:1], unranked))   # stable
            for reading, found in sorted(table.items())}


def single_kanji(data: Path) -> tuple[dict[str, str], dict[str, str]]:
    kanji = {row[0]: row[1] for row in _rows(data / "single_kanji" / "single_kanji.tsv")
             if len(row) >= 2 and _KANA_READING.fullmatch(row[0])}
    notes: dict[str, str] = {}
    kind = ""
    for line in (data / "single_kanji" / "variant_rule.txt").read_text(encoding="utf-8").splitlines():
        if not line.strip():
            kind = ""
        elif line.startswith("#"):
            continue
        elif "\t" not in line:
            kind = line.strip()
        elif kind:
            target, original = line.split("\t")[:2]
            notes.setdefault(target, f"{original}の{kind}")
    return dict(sorted(kanji.items())), dict(sorted(notes.items()))


def build(data: Path) -> rewriter_tables.Tables:
    emoji = emoji_by_reading(data)
    kanji, notes = single_kanji(data)
    return rewriter_tables.Tables(emoji=emoji, emoji_names=emoji_names({e for es in emoji.values() for e in es}),
                                  emoticons=emoticons(data), symbols=symbols(data),
                                  single_kanji=kanji, kanji_notes=notes)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mozc-data", type=Path, required=True, help="Mozc's src/data directory")
    parser.add_argument("--output", type=Path, default=rewriter_tables.DEFAULT_PATH)
    args = parser.parse_args(argv)
    tables = build(args.mozc_data)
    rewriter_tables.write(tables, args.output)
    print(f"{args.output.name}: {args.output.stat().st_size} bytes; emoji readings {len(tables.emoji)}, "
          f"names {len(tables.emoji_names)}, emoticon readings {len(tables.emoticons)}, "
          f"symbol readings {len(tables.symbols)}, kanji readings {len(tables.single_kanji)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
