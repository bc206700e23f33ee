"""Script conversions between hiragana, katakana, half-width katakana and full/half-width ASCII.

Pure functions over strings; characters a function does not concern are left unchanged.
The prolonged sound mark ー counts as part of both hiragana and katakana words (らーめん).
"""

from __future__ import annotations

import unicodedata

__all__ = [
    "to_katakana",
    "to_hiragana",
    "to_halfwidth_katakana",
    "to_fullwidth_katakana",
    "to_fullwidth_ascii",
    "to_halfwidth_ascii",
    "nfkc",
    "is_hiragana",
    "is_katakana",
]

_HIRAGANA_FIRST, _HIRAGANA_LAST = 0x3041, 0x3096   # ぁ .. ゖ
_KANA_OFFSET = 0x60                                 # ア - あ
_PROLONGED = "ー"
_COMBINING_DAKUTEN, _COMBINING_HANDAKUTEN = "\u3099", "\u309a"
_SPACING_DAKUTEN, _SPACING_HANDAKUTEN = "\u309b", "\u309c"   # ゛ ゜
_HALF_DAKUTEN, _HALF_HANDAKUTEN = "\uff9e", "\uff9f"          # ﾞ ﾟ

# Iteration marks have katakana twins too: ゝゞ <-> ヽヾ.
_HIRA_TO_KATA = {chr(c): chr(c + _KANA_OFFSET) for c in range(_HIRAGANA_FIRST, _HIRAGANA_LAST + 1)}
_HIRA_TO_KATA.update({"ゝ": "ヽ", "ゞ": "ヾ"})
_KATA_TO_HIRA = {k: h for h, k in _HIRA_TO_KATA.items()}


def _half_katakana_table() -> dict[str, str]:
    """Full-width → half-width for every character of the half-width katakana block (U+FF61..FF9F).

    Derived from Unicode's own compatibility mappings so it cannot drift from the standard.
    """
    table = {}
    for code in range(0xFF61, 0xFFA0):
        half = chr(code)
        full = unicodedata.normalize("NFKC", half)
        table[full] = half
    table[_SPACING_DAKUTEN] = _HALF_DAKUTEN
    table[_SPACING_HANDAKUTEN] = _HALF_HANDAKUTEN
    return table


_FULL_TO_HALF_KATA = _half_katakana_table()
_HALF_TO_FULL_KATA = {
    half: full for full, half in _FULL_TO_HALF_KATA.items() if full not in (_COMBINING_DAKUTEN, _COMBINING_HANDAKUTEN)
}
_HALF_TO_FULL_KATA[_HALF_DAKUTEN] = _SPACING_DAKUTEN
_HALF_TO_FULL_KATA[_HALF_HANDAKUTEN] = _SPACING_HANDAKUTEN
_HALF_MARK_TO_COMBINING = {_HALF_DAKUTEN: _COMBINING_DAKUTEN, _HALF_HANDAKUTEN: _COMBINING_HANDAKUTEN}


def to_katakana(s: str) -> str:
    """Hiragana → full-width katakana (ぁ..ゖ, ゝゞ); everything else unchanged."""
    return "".join(_HIRA_TO_KATA.get(ch, ch) for ch in s)


def to_hiragana(s: str) -> str:
    """Full-width katakana → hiragana (ァ..ヶ, ヽヾ); ヷヸヹヺ and half-width kana unchanged."""
    return "".join(_KATA_TO_HIRA.get(ch, ch) for ch in s)


def to_halfwidth_katakana(s: str) -> str:
    """Hiragana and full-width katakana → half-width katakana, voiced kana split (ガ → ｶﾞ).

    Japanese punctuation with half-width forms (。「」、・ー) is narrowed too. Kana without a
    half-width form (ヵ, ヶ, ヰ, ヱ, ヮ) is left as it is rather than guessed.
    """
    out = []
    for ch in to_katakana(s):
        half = _FULL_TO_HALF_KATA.get(ch)
        if half is not None:
            out.append(half)
            continue
        decomposed = unicodedata.normalize("NFD", ch)
        if len(decomposed) == 2 and decomposed[1] in (_COMBINING_DAKUTEN, _COMBINING_HANDAKUTEN):
            base = _FULL_TO_HALF_KATA.get(decomposed[0])
            if base is not None:
                out.append(base + _FULL_TO_HALF_KATA[decomposed[1]])
                continue
        out.append(ch)
    return "".join(out)


def to_fullwidth_katakana(s: str) -> str:
    """Half-width katakana and hiragana → full-width katakana, recomposing ｶﾞ → ガ.

    A sound mark that cannot combine with the kana before it becomes the spacing mark ゛ / ゜.
    """
    out: list[str] = []
    chars = to_katakana(s)
    i = 0
    while i < len(chars):
        ch = chars[i]
        full = _HALF_TO_FULL_KATA.get(ch, ch)
        mark = chars[i + 1] if i + 1 < len(chars) else ""
        if mark in _HALF_MARK_TO_COMBINING and ch in _HALF_TO_FULL_KATA:
            composed = unicodedata.normalize("NFC", full + _HALF_MARK_TO_COMBINING[mark])
            if len(composed) == 1:
                out.append(composed)
                i += 2
                continue
        out.append(full)
        i += 1
    return "".join(out)


def to_fullwidth_ascii(s: str) -> str:
    """Printable ASCII → full-width forms (A → Ａ, space → U+3000)."""
    out = []
    for ch in s:
        code = ord(ch)
        if 0x21 <= code <= 0x7E:
            out.append(chr(code + 0xFEE0))
        elif ch == " ":
            out.append("\u3000")
        else:
            out.append(ch)
    return "".join(out)


def to_halfwidth_ascii(s: str) -> str:
    """Full-width ASCII forms → printable ASCII (Ａ → A, U+3000 → space)."""
    out = []
    for ch in s:
        code = ord(ch)
        if 0xFF01 <= code <= 0xFF5E:
            out.append(chr(code - 0xFEE0))
        elif ch == "\u3000":
            out.append(" ")
        else:
            out.append(ch)
    return "".join(out)


def nfkc(s: str) -> str:
    """Unicode NFKC (what the neural models were trained on)."""
    return unicodedata.normalize("NFKC", s)


def _is_hiragana_char(ch: str) -> bool:
    code = ord(ch)
    return _HIRAGANA_FIRST <= code <= _HIRAGANA_LAST or 0x309D <= code <= 0x309F or ch == _PROLONGED


def _is_katakana_char(ch: str) -> bool:
    code = ord(ch)
    return (0x30A1 <= code <= 0x30FF and ch != "・") or 0x31F0 <= code <= 0x31FF


def is_hiragana(s: str) -> bool:
    """True for a non-empty string of hiragana (ー allowed)."""
    return bool(s) and all(_is_hiragana_char(ch) for ch in s)


def is_katakana(s: str) -> bool:
    """True for a non-empty string of full-width katakana (ー allowed, ・ not)."""
    return bool(s) and all(_is_katakana_char(ch) for ch in s)


def is_kanji(ch: str) -> bool:
    """A CJK ideograph (the unified block and extension A) or the kanji-like 々 and 〆."""
    return "\u4e00" <= ch <= "\u9fff" or "\u3400" <= ch <= "\u4dbf" or ch in "々〆"


def has_kanji(text: str) -> bool:
    return any(is_kanji(ch) for ch in text)


def has_kanji_or_katakana(text: str) -> bool:
    """True when `text` has a kanji or a full-width katakana letter (ァ to ヺ): it is written,
    not kana as typed (ー and ・ do not count)."""
    return any(is_kanji(ch) or "\u30a1" <= ch <= "\u30fa" for ch in text)


def is_one_kanji(text: str) -> bool:
    return len(text) == 1 and is_kanji(text)
