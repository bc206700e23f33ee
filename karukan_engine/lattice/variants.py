"""Rewriters: extra ways to write a segment (script and width variants, numbers, symbols)."""

from __future__ import annotations

import re
from pathlib import Path

from karukan_engine.core.types import Candidate, Source
from karukan_engine.kana import to_fullwidth_ascii, to_halfwidth_ascii

_DIGITS = re.compile(r"[0-9０-９]+")
_KANJI_DIGITS = "〇一二三四五六七八九"
_SMALL_UNITS = ((1000, "千"), (100, "百"), (10, "十"))
_LARGE_UNITS = ("", "万", "億", "兆", "京")


def kanji_digits(number: str) -> str:
    """1024 -> 一〇二四 (digit by digit)."""
    return "".join(_KANJI_DIGITS[int(ch)] for ch in to_halfwidth_ascii(number))


def kanji_number(number: str) -> str | None:
    """1024 -> 千二十四 (positional); None when too large or with leading zeros."""
    digits = to_halfwidth_ascii(number)
    if len(digits) > 4 * len(_LARGE_UNITS) or (len(digits) > 1 and digits[0] == "0"):
        return None
    value = int(digits)
    if value == 0:
        return "〇"
    return grouped_number(value, _KANJI_DIGITS, _SMALL_UNITS, _LARGE_UNITS, write_one=False)


def grouped_number(value: int, digits: str, small: tuple[tuple[int, str], ...], large: tuple[str, ...],
                   write_one: bool) -> str:
    """A positive value in groups of four (万, 億 …) with units inside each group (千 百 十);
    write_one: 一千 (大字 writes every count) or 千. The caller bounds value by len(large)."""
    groups = []
    unit = 0
    while value:
        value, group = divmod(value, 10000)
        if group:
            text = ""
            for size, name in small:
                count, group = divmod(group, size)
                if count:
                    text += ("" if count == 1 and not write_one else digits[count]) + name
            if group:
                text += digits[group]
            groups.append(text + large[unit])
        unit += 1
    return "".join(reversed(groups))


def load_symbols(path: Path) -> dict[str, list[tuple[str, str]]]:
    """symbols.tsv (reading, symbol, description) -> reading -> [(symbol, description)]."""
    table: dict[str, list[tuple[str, str]]] = {}
    if path.is_file():
        for line in path.read_text(encoding="utf-8").splitlines():
            fields = line.split("\t")
            if len(fields) >= 2:
                table.setdefault(fields[0], []).append((fields[1], fields[2] if len(fields) > 2 else ""))
    return table


def number_variants(surface: str) -> list[Candidate]:
    """Digit runs in a surface written as half-width, full-width and kanji numerals."""
    if not _DIGITS.search(surface):
        return []
    out = [
        Candidate(_DIGITS.sub(lambda m: to_halfwidth_ascii(m.group()), surface), "[半]数字", Source.VARIANT),
        Candidate(_DIGITS.sub(lambda m: to_fullwidth_ascii(m.group()), surface), "[全]数字", Source.VARIANT),
    ]
    if all(kanji_number(m.group()) for m in _DIGITS.finditer(surface)):
        out.append(Candidate(_DIGITS.sub(lambda m: kanji_number(m.group()) or "", surface), "漢数字", Source.VARIANT))
    out.append(Candidate(_DIGITS.sub(lambda m: kanji_digits(m.group()), surface), "漢数字", Source.VARIANT))
    return out


def symbol_variants(reading: str, symbols: dict[str, list[tuple[str, str]]]) -> list[Candidate]:
    return [Candidate(symbol, f"[記号]{description}" if description else "[記号]", Source.VARIANT)
            for symbol, description in symbols.get(reading, ())]

