"""Ways to write a whole number, each with Mozc's annotation: 大字 (壱百), Roman numerals (Ⅻ,
ⅽⅹ), circled numbers (① … ㊿), thousands separators (1,000) and hex/octal/binary; and a kana
number reading parsed to its value (さんびゃくごじゅう → 350)."""

from __future__ import annotations

from karukan_engine.lattice.variants import grouped_number

_DAIJI_DIGITS = "零壱弐参四伍六七八九"
_DAIJI_SMALL = ((1000, "阡"), (100, "百"), (10, "拾"))
_DAIJI_LARGE = ("", "萬", "億", "兆", "京")
_ROMAN = ((1000, "M"), (900, "CM"), (500, "D"), (400, "CD"), (100, "C"), (90, "XC"), (50, "L"), (40, "XL"),
          (10, "X"), (9, "IX"), (5, "V"), (4, "IV"), (1, "I"))
# The Unicode Roman numeral letters (Ⅰ Ⅴ Ⅹ Ⅼ Ⅽ Ⅾ Ⅿ and their small forms), and Ⅰ–Ⅻ as single characters.
_ROMAN_UPPER = str.maketrans("IVXLCDM", "ⅠⅤⅩⅬⅭⅮⅯ")
_ROMAN_LOWER = str.maketrans("IVXLCDM", "ⅰⅴⅹⅼⅽⅾⅿ")


def daiji(value: int) -> str | None:
    """100 → 壱百, 1234 → 壱阡弐百参拾四 (every count written, as on a cheque)."""
    if value < 0 or value >= 10 ** (4 * len(_DAIJI_LARGE)):
        return None
    if value == 0:
        return _DAIJI_DIGITS[0]
    return grouped_number(value, _DAIJI_DIGITS, _DAIJI_SMALL, _DAIJI_LARGE, write_one=True)


def roman(value: int, lower: bool = False) -> str | None:
    """1–3999 in Roman numerals; 1–12 as the single characters Ⅰ–Ⅻ (ⅰ–ⅻ)."""
    if not 1 <= value <= 3999:
        return None
    if value <= 12:
        return chr((0x2170 if lower else 0x2160) + value - 1)
    text = ""
    for size, letters in _ROMAN:
        count, value = divmod(value, size)
        text += letters * count
    return text.translate(_ROMAN_LOWER if lower else _ROMAN_UPPER)


def circled(value: int) -> str | None:
    """1–50: ①–⑳, ㉑–㉟, ㊱–㊿."""
    if 1 <= value <= 20:
        return chr(0x2460 + value - 1)
    if 21 <= value <= 35:
        return chr(0x3251 + value - 21)
    if 36 <= value <= 50:
        return chr(0x32B1 + value - 36)
    return None


def separated(value: int) -> str | None:
    return f"{value:,}" if value >= 1000 else None


def based(value: int) -> list[tuple[str, str]]:
    """(text, annotation) in hex, octal and binary, as Mozc writes them (0x64, 0144, 0b1100100)."""
    if value < 8:
        return []
    return [(f"0x{value:X}", "16進数"), (f"0{value:o}", "8進数"), (f"0b{value:b}", "2進数")]


# Kana number words, longest first where one starts another (しち before し).
_DIGIT_WORDS = {"ぜろ": 0, "れい": 0, "いち": 1, "いっ": 1, "に": 2, "さん": 3, "よん": 4, "し": 4, "ご": 5,
                "ろく": 6, "ろっ": 6, "なな": 7, "しち": 7, "はち": 8, "はっ": 8, "きゅう": 9, "く": 9}
_SMALL_WORDS = {"じゅう": 10, "じゅっ": 10, "ひゃく": 100, "びゃく": 100, "ぴゃく": 100, "せん": 1000, "ぜん": 1000}
_LARGE_WORDS = {"まん": 10 ** 4, "おく": 10 ** 8, "ちょう": 10 ** 12}
_WORDS = sorted({**{w: ("digit", v) for w, v in _DIGIT_WORDS.items()},
                 **{w: ("small", v) for w, v in _SMALL_WORDS.items()},
                 **{w: ("large", v) for w, v in _LARGE_WORDS.items()}}.items(), key=lambda kv: -len(kv[0]))


def kana_number(reading: str) -> int | None:
    """The value of a kana number reading with at least one unit word (じゅう, ひゃく, せん, まん…):
    ひゃく → 100, にせんにじゅうろく → 2026; None when it is not one (に alone is left to the
    dictionary)."""
    if not reading or len(reading) > 80:   # bounded work on any input
        return None
    total = section = 0
    digit: int | None = None
    last_small = last_large = 10 ** 20
    units = 0
    i = 0
    while i < len(reading):
        word = next(((w, kv) for w, kv in _WORDS if reading.startswith(w, i)), None)
        if word is None:
            return None
        text, (kind, value) = word
        i += len(text)
        if kind == "digit":
            if digit is not None:
                return None   # にさん is "two or three", not a number
            digit = value
        elif kind == "small":
            if value >= last_small:
                return None
            section += (1 if digit is None else digit) * value
            digit, last_small, units = None, value, units + 1
        else:
            section += digit or 0
            if section == 0 or value >= last_large:
                return None
            total += section * value
            section, digit, last_small, last_large, units = 0, None, 10 ** 20, value, units + 1
    if digit is not None:
        section += digit
    return total + section if units else None
