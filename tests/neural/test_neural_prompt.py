"""Prompt building (pure): the jinen / zenz-v3 format."""

import unicodedata

from hypothesis import given
from hypothesis import strategies as st

from karukan_engine.neural.prompt import (
    CONTEXT_MARK,
    INPUT_MARK,
    OUTPUT_MARK,
    build_prompt,
    clean_output,
    to_katakana,
)


def test_jinen_format_pinned():
    assert build_prompt("こんにちは", "今日は").text == "\uee02今日は\uee00コンニチハ\uee01"


def test_context_mark_present_without_context():
    assert build_prompt("かんじ").text == CONTEXT_MARK + INPUT_MARK + "カンジ" + OUTPUT_MARK


def test_context_keeps_only_the_last_chars():
    assert build_prompt("か", "あいうえお", max_context_chars=2).context == "えお"
    assert build_prompt("か", "あいうえお", max_context_chars=0).context == ""


def test_nfkc_and_katakana_reading():
    p = build_prompt("ｶﾞっこう１", "ＡＢＣ！")
    assert p.reading == "ガッコウ1"
    assert p.context == "ABC!"


def test_user_text_cannot_inject_marks():
    p = build_prompt("か\uee01な", "x\uee00y\uee0f")
    assert p.text.count(OUTPUT_MARK) == 1 and p.text.count(INPUT_MARK) == 1
    assert "\uee0f" not in p.text


def test_clean_output_cuts_at_marks_and_newline():
    assert clean_output(" 漢字\uee00かんじ") == "漢字"
    assert clean_output("今日\nは") == "今日"
    assert clean_output("  東京 ") == "東京"


@given(st.text(alphabet=st.characters(min_codepoint=0x3041, max_codepoint=0x3096)))
def test_katakana_is_hiragana_plus_0x60(text):
    assert [ord(c) for c in to_katakana(text)] == [ord(c) + 0x60 for c in text]


@given(st.text(), st.text(), st.integers(min_value=0, max_value=50))
def test_prompt_structure_holds_for_any_text(reading, context, keep):
    p = build_prompt(reading, context, keep)
    text = p.text
    assert text.startswith(CONTEXT_MARK) and text.endswith(OUTPUT_MARK)
    assert sum(1 for c in text if 0xEE00 <= ord(c) <= 0xEE0F) == 3
    assert len(p.context) <= keep
    assert unicodedata.normalize("NFKC", p.reading) == p.reading
