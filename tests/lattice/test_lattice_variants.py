"""Rewriters (number, script, symbol variants) and segment-span logic."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from karukan_engine.lattice.segmenter import fixed_cuts, segment_spans
from karukan_engine.core.candidates import unique_surfaces
from karukan_engine.core.types import Candidate
from karukan_engine.lattice.variants import kanji_digits, kanji_number, number_variants, symbol_variants
from karukan_engine.transliteration import script_variants

_DIGIT = {c: i for i, c in enumerate("〇一二三四五六七八九")}
_SMALL = {"十": 10, "百": 100, "千": 1000}
_LARGE = {"万": 10**4, "億": 10**8, "兆": 10**12, "京": 10**16}


def _read_kanji_number(text: str) -> int:
    """Independent reader of positional kanji numerals (the test oracle)."""
    total = section = digit = 0
    for ch in text:
        if ch in _DIGIT:
            digit = _DIGIT[ch]
        elif ch in _SMALL:
            section += (digit or 1) * _SMALL[ch]
            digit = 0
        else:
            total += (section + digit) * _LARGE[ch]
            section = digit = 0
    return total + section + digit


@given(st.integers(0, 10**20 - 1))
def test_kanji_number_reads_back(value):
    text = kanji_number(str(value))
    assert text is not None and _read_kanji_number(text) == value


def test_kanji_number_examples():
    assert kanji_number("1024") == "千二十四"
    assert kanji_number("10000") == "一万"
    assert kanji_number("120000305") == "一億二千万三百五"
    assert kanji_number("007") is None
    assert kanji_digits("2026") == "二〇二六"


def test_number_variants():
    surfaces = {c.surface: c.annotation for c in number_variants("12円")}
    assert surfaces == {"12円": "[半]数字", "１２円": "[全]数字", "十二円": "漢数字", "一二円": "漢数字"}
    assert number_variants("円") == []


def test_script_variants():
    assert [c.surface for c in script_variants("きょう")] == ["きょう", "キョウ", "ｷｮｳ"]
    latin = {c.surface for c in script_variants("abc")}
    assert {"ａｂｃ", "abc"} <= latin


def test_symbol_variants_and_merge():
    table = {"やじるし": [("→", "右矢印"), ("←", "")]}
    got = symbol_variants("やじるし", table)
    assert [(c.surface, c.annotation) for c in got] == [("→", "[記号]右矢印"), ("←", "[記号]")]
    merged = unique_surfaces([Candidate("a"), Candidate("b")], [Candidate("b", "x"), Candidate("c")], limit=3)
    assert [c.surface for c in merged] == ["a", "b", "c"] and merged[1].annotation == ""


@given(st.integers(1, 12), st.lists(st.integers(-1, 5), max_size=4))
def test_fixed_cuts(length, fixed):
    cuts = fixed_cuts(length, tuple(fixed))
    assert cuts == sorted(cuts) and all(0 < c <= length for c in cuts)
    if cuts:
        assert [b - a for a, b in zip([0] + cuts, cuts)] == list(fixed[: len(cuts)])


@given(st.data())
def test_segment_spans_cover_and_keep_fixed(data):
    n = data.draw(st.integers(1, 10))
    cut_points = sorted(set(data.draw(st.lists(st.integers(1, n - 1), max_size=n))) if n > 1 else set())
    bounds = [0] + cut_points + [n]
    starts, ends = bounds[:-1], bounds[1:]
    ids = data.draw(st.lists(st.integers(0, 3), min_size=len(starts), max_size=len(starts)))
    boundary = np.array(data.draw(st.lists(st.lists(st.booleans(), min_size=4, max_size=4), min_size=4, max_size=4)))
    fixed = fixed_cuts(n, tuple(data.draw(st.lists(st.integers(1, 3), max_size=2))))
    spans = segment_spans(starts, ends, ids, ids, boundary, n, fixed)
    assert spans[0][0] == 0 and spans[-1][1] == n
    assert all(a < b for a, b in spans) and all(s[1] == t[0] for s, t in zip(spans, spans[1:]))
    assert [b for _, b in spans][: len(fixed)] == fixed
