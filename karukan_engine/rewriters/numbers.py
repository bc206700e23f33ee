"""Numbers: digits typed as digits (100) get 全角, 漢数字 (百 and 一〇〇), 大字 (壱百), Roman
numerals, circled numbers up to 50, thousands separators and hex/octal/binary, each annotated
as Mozc does; a kana number reading (ひゃく) gets its digits and its kanji (100, 百).
They go right after the number forms the converter listed already."""

from __future__ import annotations

import re

from karukan_engine.core.candidates import unique_surfaces
from karukan_engine.core.types import Candidate, Source
from karukan_engine.kana import to_fullwidth_ascii, to_halfwidth_ascii
from karukan_engine.lattice.variants import kanji_digits, kanji_number
from karukan_engine.rewriters import number_forms
from karukan_engine.rewriters.placement import Addition
from karukan_engine.rewriters.request import RewriteRequest

_DIGITS = re.compile(r"[0-9]+")
# Longer digit runs are account numbers and the like: only the width forms make sense.
MAX_DIGITS = 20
# A kana number with no kanji listed: its forms go after the reading's top words.
KANA_AT = 3


def additions(request: RewriteRequest) -> list[Addition]:
    digits = to_halfwidth_ascii(request.reading)
    if _DIGITS.fullmatch(digits) and len(digits) <= MAX_DIGITS:
        return [Addition(tuple(digit_forms(digits)), _after_listed(request, _plain_forms(digits)))]
    value = number_forms.kana_number(request.reading)
    if value is None:
        return []
    kanji = kanji_number(str(value)) or ""
    forms = (Candidate(kanji, "漢数字", Source.VARIANT), Candidate(str(value), "[半]数字", Source.VARIANT),
             Candidate(to_fullwidth_ascii(str(value)), "[全]数字", Source.VARIANT))
    at = request.index_of(kanji)
    return [Addition(forms, KANA_AT if at is None else at + 1)]


def digit_forms(digits: str) -> list[Candidate]:
    """Every notation of a digit run, in Mozc's order."""
    value = int(digits)
    plain = digits if len(digits) == 1 or digits[0] != "0" else None   # 007 stays a code, not a number
    forms: list[tuple[str | None, str]] = [(digits, "[半]数字"), (to_fullwidth_ascii(digits), "[全]数字")]
    if plain is not None:
        sep = number_forms.separated(value)
        forms += [(kanji_number(digits), "漢数字"), (kanji_digits(digits), "漢数字"),
                  (sep, "数字(桁区切り)"), (to_fullwidth_ascii(sep) if sep else None, "数字(桁区切り)"),
                  (number_forms.daiji(value), "大字"), (number_forms.roman(value), "ローマ数字"),
                  (number_forms.roman(value, lower=True), "ローマ数字(小文字)"),
                  (number_forms.circled(value), "丸数字"), *number_forms.based(value)]
    else:
        forms.append((kanji_digits(digits), "漢数字"))
    return unique_surfaces(Candidate(text, note, Source.VARIANT) for text, note in forms if text)


def _plain_forms(digits: str) -> set[str]:
    return {digits, to_fullwidth_ascii(digits), kanji_number(digits) or "", kanji_digits(digits)}


def _after_listed(request: RewriteRequest, forms: set[str]) -> int:
    """Just after the last of the number's forms among the listed candidates (1 if none)."""
    found = [i for i, c in enumerate(request.listed) if c.surface in forms]
    return max(found) + 1 if found else 1
