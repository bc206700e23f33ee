"""The number notations and the kana number parser."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from karukan_engine.lattice.variants import kanji_number
from karukan_engine.rewriters.number_forms import based, circled, daiji, kana_number, roman, separated
from karukan_engine.rewriters.numbers import digit_forms

_KANJI_KANA = {"一": "いち", "二": "に", "三": "さん", "四": "よん", "五": "ご", "六": "ろく", "七": "なな", "八": "はち",
               "九": "きゅう", "十": "じゅう", "百": "ひゃく", "千": "せん", "万": "まん", "億": "おく"}


def test_notations():
    assert daiji(100) == "壱百" and daiji(1234) == "壱阡弐百参拾四" and daiji(20000) == "弐萬"
    assert roman(4) == "Ⅳ" and roman(12) == "Ⅻ" and roman(2026) == "ⅯⅯⅩⅩⅤⅠ" and roman(9, lower=True) == "ⅸ"
    assert roman(0) is None and roman(4000) is None
    assert [circled(n) for n in (1, 20, 21, 35, 36, 50)] == ["①", "⑳", "㉑", "㉟", "㊱", "㊿"] and circled(51) is None
    assert separated(1234567) == "1,234,567" and separated(999) is None
    assert based(255) == [("0xFF", "16進数"), ("0377", "8進数"), ("0b11111111", "2進数")]


def test_kana_numbers():
    assert kana_number("ひゃく") == 100
    assert kana_number("さんびゃくごじゅう") == 350
    assert kana_number("はっぴゃく") == 800
    assert kana_number("にせんにじゅうろく") == 2026
    assert kana_number("いちおくにせんまん") == 120_000_000
    for not_a_number in ("に", "ねこ", "まん", "にさん", "じゅうじゅう", "ひゃくせん", ""):
        assert kana_number(not_a_number) is None, not_a_number


@given(st.integers(10, 10 ** 12 - 1))
def test_a_number_read_as_kana_parses_back(value):
    kanji = kanji_number(str(value))
    reading = "".join(_KANJI_KANA[ch] for ch in kanji)
    if any(unit in kanji for unit in "十百千万億"):
        assert kana_number(reading) == value


@given(st.integers(0, 10 ** 20 - 1).map(str))
def test_digit_forms_are_distinct_and_annotated(digits):
    forms = digit_forms(digits)
    assert forms[0].surface == digits
    assert len({f.surface for f in forms}) == len(forms)
    assert all(f.annotation for f in forms)


def test_a_code_with_leading_zeros_gets_only_its_widths_and_digits():
    assert [f.surface for f in digit_forms("007")] == ["007", "００７", "〇〇七"]
