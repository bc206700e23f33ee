"""What live conversion may show: no digits the user did not type, no stand-in for a lone kana.

The dictionary (Mozc's) spells number words with digits at a low cost (に → 2, いち → 1, はち → 8)
and gives a few single kana a non-Japanese spelling (ざ → The, ど → ℃). In live conversion the
reading is usually unfinished, so the best path for にほ is 2歩, and the preedit showed 2ほ, 2ほｎ
on the way to 日本語 (issue 30 item 2). The rule, for every live text (dictionary and model):

1. A digit (ASCII or full width) or a half-width katakana appears only when the reading has one:
   a number typed as kana shows in kanji or kana while typing (三人, not 3人).
2. A word whose reading is one kana is written with kana or kanji (に, 似, 荷), never with
   letters, digits or symbols only.

Explicit conversion is not bound by it: Space still lists 3人, 2, ℃ among the candidates.
"""

from __future__ import annotations

from typing import Iterable

Words = Iterable[tuple[str, str]]   # (reading, surface) of each word, in order


def _is_digit(ch: str) -> bool:
    return "0" <= ch <= "9" or "０" <= ch <= "９"


def _is_halfwidth_katakana(ch: str) -> bool:
    return "\uff61" <= ch <= "\uff9f"


def _is_kana_or_kanji(ch: str) -> bool:
    return ("\u3041" <= ch <= "\u30ff" or "\u4e00" <= ch <= "\u9fff" or "\u3400" <= ch <= "\u4dbf"
            or ch in "々〆ヶ")


def _is_one_kana(reading: str) -> bool:
    return len(reading) == 1 and "\u3041" <= reading <= "\u30fa"


def text_fits(reading: str, text: str) -> bool:
    """Rule 1 for a whole text, and rule 2 when the whole reading is one kana."""
    for test in (_is_digit, _is_halfwidth_katakana):
        if any(test(ch) for ch in text) and not any(test(ch) for ch in reading):
            return False
    return not _is_one_kana(reading) or any(_is_kana_or_kanji(ch) for ch in text)


def words_fit(reading: str, words: Words) -> bool:
    """Both rules for a text given as its words (a lattice path)."""
    words = list(words)
    return text_fits(reading, "".join(s for _, s in words)) and all(text_fits(r, s) for r, s in words if _is_one_kana(r))


def fitting_text(reading: str, words: Words, alternatives: Iterable[Words]) -> str:
    """The text of `words` when it fits, else of the first alternative that does (the reading
    itself when none does). `alternatives` is read only when needed: the next-best paths."""
    words = list(words)
    if words_fit(reading, words):
        return "".join(s for _, s in words)
    for other in alternatives:
        other = list(other)
        if words_fit(reading, other):
            return "".join(s for _, s in other)
    return reading
