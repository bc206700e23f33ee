"""Each family's prompt and text policy (pure): jinen keeps U+EE02 always and NFKCs; zenz-v3
writes U+EE02 + context only with a context, keeps full-width text, writes spaces as U+3000 and
drops newlines; context lengths 10 / 40 unless configured; 50 output tokens."""

import unicodedata

import pytest
from hypothesis import given
from hypothesis import strategies as st

from karukan_engine.neural.prompt import (
    CONTEXT_MARK,
    INPUT_MARK,
    JINEN,
    OUTPUT_MARK,
    ZENZ_V3,
    build_prompt,
    family_named,
)
from karukan_engine.session.field_context import LINE_START


def test_zenz_writes_the_context_mark_only_before_a_context():
    assert ZENZ_V3.build("きょう").text == INPUT_MARK + "キョウ" + OUTPUT_MARK
    assert ZENZ_V3.build("きょう", "今日は").text == CONTEXT_MARK + "今日は" + INPUT_MARK + "キョウ" + OUTPUT_MARK


def test_jinen_writes_the_context_mark_always():
    assert JINEN.build("きょう").text == CONTEXT_MARK + INPUT_MARK + "キョウ" + OUTPUT_MARK
    assert JINEN.build("こんにちは", "今日は").text == "\uee02今日は\uee00コンニチハ\uee01"


def test_the_sessions_line_start_mark_reaches_neither_family():
    for family in (JINEN, ZENZ_V3):
        assert family.build("きょう", LINE_START).text == family.build("きょう").text
        assert family.build("きょう", LINE_START + "今日は").text == family.build("きょう", "今日は").text


def test_zenz_keeps_full_width_text_and_writes_spaces_as_ideographic_spaces():
    p = ZENZ_V3.build("かんじ", "（東京）！～…　a b\nc\r\n")
    assert p.context == "（東京）！～…　a\u3000bc"


def test_jinen_normalises_with_nfkc():
    p = JINEN.build("ｶﾞっこう１", "（東京）！")
    assert (p.context, p.reading) == ("(東京)!", "ガッコウ1")


def test_default_context_lengths_are_upstreams():
    text = "あいうえおかきくけこさしすせそたちつてとなにぬねのはひふへほまみむめもやゆよらりるれろわをん"
    assert JINEN.build("か", text).context == text[-10:]
    assert ZENZ_V3.build("か", text).context == text[-40:]
    assert ZENZ_V3.with_context_chars(3).build("か", text).context == text[-3:]
    assert ZENZ_V3.with_context_chars(None) is ZENZ_V3
    assert JINEN.max_new_tokens == ZENZ_V3.max_new_tokens == 50


def test_a_context_shorter_than_the_limit_is_kept_whole():
    # (a slice from len - keep once cut a 6-character context to its last 4 with keep = 10)
    assert JINEN.build("か", "今日は晴れた").context == "今日は晴れた"
    assert build_prompt("か", "あいうえお", max_context_chars=4).context == "いうえお"


def test_families_by_name():
    assert family_named("jinen") is JINEN and family_named("zenz-v3") is ZENZ_V3
    with pytest.raises(ValueError, match="unknown prompt format"):
        family_named("gpt")


def test_user_text_cannot_inject_marks_in_either_family():
    for family in (JINEN, ZENZ_V3):
        text = family.build("か\uee01な", "x\uee00y\uee0f").text
        assert sum(1 for c in text if 0xEE00 <= ord(c) <= 0xEE0F) == 3


_TEXT = st.text(st.sampled_from("かな漢字 \n\r\u3000（）！～…ＡＢ１\uee00\uee02a"), max_size=60)


@given(_TEXT, _TEXT, st.integers(0, 60))
def test_zenz_prompt_structure_for_any_text(reading, context, keep):
    family = ZENZ_V3.with_context_chars(keep)
    p = family.build(reading, context)
    cleaned = context.replace(" ", "\u3000").replace("\n", "").replace("\r", "").replace("\uee00", "").replace("\uee02", "")
    assert p.context == (cleaned[-keep:] if keep else "")
    marks = [c for c in p.text if 0xEE00 <= ord(c) <= 0xEE0F]
    assert marks == ([CONTEXT_MARK] if p.context else []) + [INPUT_MARK, OUTPUT_MARK]
    assert " " not in p.text and "\n" not in p.text and "\r" not in p.text
    assert "".join(text for _mark, text in p.segments()) == p.text


@given(_TEXT, _TEXT, st.integers(0, 60))
def test_jinen_prompt_structure_for_any_text(reading, context, keep):
    p = JINEN.with_context_chars(keep).build(reading, context)
    # a leading newline is the session's line-start mark (session/field_context.LINE_START)
    cleaned = unicodedata.normalize("NFKC", context.lstrip("\n")).replace("\uee00", "").replace("\uee02", "")
    assert p.context == (cleaned[-keep:] if keep else "")
    assert p.text.startswith(CONTEXT_MARK) and p.text.endswith(OUTPUT_MARK)
    assert unicodedata.normalize("NFKC", p.reading) == p.reading
