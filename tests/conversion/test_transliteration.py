"""One table of script forms (F6–F10, the tail of every list, the plain converter)."""

import pytest
from hypothesis import given, strategies as st

from karukan_engine.conversion.plain import PlainConverter
from karukan_engine.core.types import ConversionRequest, Source
from karukan_engine.dictionary.system import DEFAULT_DIR, SystemDictionary
from karukan_engine.session import Session
from karukan_engine.kana import to_halfwidth_katakana, to_hiragana, to_katakana
from karukan_engine.lattice.converter import LatticeConverter
from karukan_engine.transliteration import Form, script_variants

kana_text = st.text(alphabet="あいうえおかきくけこがぱゃっーんゔアイウカガパｱｲｶﾞﾊﾟ、。「」ab1Ｚ！", min_size=1, max_size=10)


@given(kana_text)
def test_every_form_once_in_mozc_order_with_its_label(text):
    variants = script_variants(text)
    surfaces = [c.surface for c in variants]
    assert len(set(surfaces)) == len(surfaces) and all(c.source == Source.VARIANT for c in variants)
    expected = []
    for form in Form:
        if form.of(text) not in [s for s, _ in expected]:
            expected.append((form.of(text), form.label))
    assert [(c.surface, c.annotation) for c in variants] == expected


@given(st.text(alphabet="あいうえおかきくけこがぱゃっーんアカガパ、。「」ab1", min_size=1, max_size=10))
def test_forms_agree_whatever_script_the_kana_is_in(text):
    # Hiragana, katakana or half-width katakana: the same kana, so the same forms.
    for spelling in (to_hiragana(text), to_katakana(text), to_halfwidth_katakana(text)):
        for form in (Form.HIRAGANA, Form.KATAKANA, Form.HALFWIDTH_KATAKANA):
            assert form.of(spelling) == form.of(text), (spelling, form)
    half = Form.HALFWIDTH_KATAKANA.of(text)
    assert Form.HALFWIDTH_KATAKANA.of(half) == half   # nothing left to narrow


@pytest.mark.skipif(not (DEFAULT_DIR / "meta.json").is_file(), reason="compiled dictionary not built")
def test_the_converters_and_the_session_label_the_forms_alike():
    request = ConversionRequest("きょう")
    expected = {c.surface: c.annotation for c in script_variants("きょう")}
    session = Session(LatticeConverter(SystemDictionary()))
    for ch in "kyou ":
        session.process_key(ord(ch))
    lists = {
        "plain": PlainConverter().candidates(request, 10),
        "lattice segment": LatticeConverter(SystemDictionary()).convert(request)[0].candidates,
        "session": session._state.conversion.focused.candidates,
    }
    for name, candidates in lists.items():
        forms = {c.surface: c.annotation for c in candidates if c.source == Source.VARIANT and c.surface in expected}
        assert "ｷｮｳ" in forms and forms.items() <= expected.items(), (name, forms)
