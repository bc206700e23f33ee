import unicodedata

from hypothesis import given, strategies as st

from karukan_engine.kana import (
    is_hiragana,
    is_katakana,
    nfkc,
    to_fullwidth_ascii,
    to_fullwidth_katakana,
    to_halfwidth_ascii,
    to_halfwidth_katakana,
    to_hiragana,
    to_katakana,
)

HIRAGANA = [chr(c) for c in range(0x3041, 0x3097)] + ["ゝ", "ゞ"]
hiragana_text = st.text(alphabet=HIRAGANA + ["ー"], max_size=30)
# Katakana that has a half-width form (directly or via dakuten split).
KATAKANA_WITH_HALF = [ch for ch in (chr(c) for c in range(0x30A1, 0x30FB)) if not to_halfwidth_katakana(ch) == ch] + ["ー"]
ascii_printable = st.text(alphabet=[chr(c) for c in range(0x20, 0x7F)], max_size=30)


def test_hiragana_katakana_examples():
    assert to_katakana("きょうはいいてんき") == "キョウハイイテンキ"
    assert to_katakana("ゔぁゝゞ") == "ヴァヽヾ"
    assert to_hiragana("キョウハ、ヴァー") == "きょうは、ゔぁー"
    assert to_katakana("abc漢字") == "abc漢字"
    assert to_hiragana("ヷ") == "ヷ"  # no hiragana twin


def test_halfwidth_katakana_splits_sound_marks():
    assert to_halfwidth_katakana("ガギパポヴ") == "ｶﾞｷﾞﾊﾟﾎﾟｳﾞ"
    assert to_halfwidth_katakana("がっこう") == "ｶﾞｯｺｳ"
    assert to_halfwidth_katakana("ヷヺ") == "ﾜﾞｦﾞ"
    assert to_halfwidth_katakana("「ラーメン」、。・") == "｢ﾗｰﾒﾝ｣､｡･"
    assert to_halfwidth_katakana("ヵヶ") == "ヵヶ"  # no half-width form: left alone
    assert to_halfwidth_katakana("゛゜") == "ﾞﾟ"


def test_fullwidth_katakana_recomposes():
    assert to_fullwidth_katakana("ｶﾞｷﾞﾊﾟﾎﾟｳﾞ") == "ガギパポヴ"
    assert to_fullwidth_katakana("ﾜﾞｦﾞ") == "ヷヺ"
    assert to_fullwidth_katakana("ｱﾞ") == "ア゛"  # cannot combine: spacing mark
    assert to_fullwidth_katakana("ﾞ") == "゛"
    assert to_fullwidth_katakana("ひらがな") == "ヒラガナ"
    assert to_fullwidth_katakana("｢ﾗｰﾒﾝ｣､｡･") == "「ラーメン」、。・"


def test_ascii_width_examples():
    assert to_fullwidth_ascii("Hello, World! 1~") == "Ｈｅｌｌｏ，\u3000Ｗｏｒｌｄ！\u3000１～"
    assert to_halfwidth_ascii("Ｈｅｌｌｏ，\u3000１") == "Hello, 1"
    assert to_fullwidth_ascii("かな") == "かな"
    assert to_halfwidth_ascii("かな") == "かな"


def test_nfkc_and_predicates():
    assert nfkc("ｶﾞＡ１") == "ガA1"
    assert is_hiragana("らーめん") and not is_hiragana("ラーメン") and not is_hiragana("")
    assert is_katakana("ラーメン") and not is_katakana("らーめん") and not is_katakana("")
    assert not is_katakana("ア・イ")
    assert not is_hiragana("か゛")


@given(hiragana_text)
def test_katakana_round_trip(s):
    k = to_katakana(s)
    assert to_hiragana(k) == s
    assert not s or is_katakana(k)
    assert len(k) == len(s)


@given(st.text(alphabet=KATAKANA_WITH_HALF, max_size=30))
def test_halfwidth_katakana_round_trip(s):
    half = to_halfwidth_katakana(s)
    assert all(0xFF61 <= ord(ch) <= 0xFF9F for ch in half)
    assert to_fullwidth_katakana(half) == s
    # Unicode agrees: NFKC of the half-width form composes back to the same katakana.
    assert unicodedata.normalize("NFKC", half) == s


@given(ascii_printable)
def test_ascii_width_round_trip(s):
    full = to_fullwidth_ascii(s)
    assert all(ord(ch) > 0x7F for ch in full)
    assert to_halfwidth_ascii(full) == s
    assert nfkc(full) == s


@given(st.text(max_size=40))
def test_conversions_never_raise_and_are_idempotent(s):
    for f in (to_katakana, to_hiragana, to_halfwidth_katakana, to_fullwidth_katakana,
              to_fullwidth_ascii, to_halfwidth_ascii, nfkc):
        once = f(s)
        assert f(once) == once



@given(hiragana_text, st.text(alphabet="今日会議々", max_size=3))
def test_written_text_has_a_kanji_or_a_katakana_letter(kana, kanji):
    from karukan_engine.kana import has_kanji_or_katakana

    assert not has_kanji_or_katakana(kana)                 # kana as typed
    # ー and the iteration marks (ゝ → ヽ) are not letters
    assert has_kanji_or_katakana(to_katakana(kana)) == any(ch not in "ーゝゞ" for ch in kana)
    assert has_kanji_or_katakana(kana + kanji) == bool(kanji)


def test_written_text_examples():
    from karukan_engine.kana import has_kanji_or_katakana

    assert has_kanji_or_katakana("今日") and has_kanji_or_katakana("カイ") and has_kanji_or_katakana("々")
    assert not has_kanji_or_katakana("きょうー・") and not has_kanji_or_katakana("abc１２")
