"""Live text shows no digits the user did not type and no stand-in for a lone kana (issue 30 item 2).

The rule (karukan_engine/lattice/live_spelling.py): a digit or half-width katakana appears in live
text only when the reading has one, and a word read as one kana is written with kana or kanji.
Explicit conversion still offers the digit forms.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from karukan_engine.config import Config
from karukan_engine.conversion.live import ChunkedLive
from karukan_engine.conversion.cache import ConversionCache
from karukan_engine.conversion.chunking import ChunkLimits
from karukan_engine.core.types import ConversionRequest
from karukan_engine.dictionary.learning import LearningStore
from karukan_engine.dictionary.system import DEFAULT_DIR, SystemDictionary
from karukan_engine.lattice.converter import LatticeConverter
from karukan_engine.lattice.live_spelling import text_fits, words_fit
from karukan_engine.session.session import Session

needs_dictionary = pytest.mark.skipif(not (DEFAULT_DIR / "meta.json").is_file(),
                                      reason="compiled dictionary not built")

DIGITS = set("0123456789０１２３４５６７８９")
# Kana the number words and the dictionary's lone-kana stand-ins are made of, weighted in.
NUMBER_KANA = "にいちさんよんごろくなはきゅうじゅひゃくせんまんおくどざ"
HIRAGANA = "".join(chr(c) for c in range(0x3041, 0x3094)) + "ー"
readings = st.text(st.sampled_from(NUMBER_KANA) | st.sampled_from(HIRAGANA), min_size=1, max_size=10)


@pytest.fixture(scope="module")
def converter(tmp_path_factory):
    converter = LatticeConverter(SystemDictionary(), None, LearningStore(tmp_path_factory.mktemp("l") / "l.json"))
    yield converter
    converter.close()


def test_the_rule_on_texts():
    assert not text_fits("に", "2") and not text_fits("にほ", "2歩") and not text_fits("はち", "８")
    assert not text_fits("ざ", "The") and not text_fits("ど", "℃") and not text_fits("か", "ｶ")
    assert text_fits("に", "似") and text_fits("ど", "度") and text_fits("2こ", "2個")
    assert text_fits("てぃーしゃつ", "Tシャツ")        # a longer word may be spelled with letters
    assert not words_fit("にほ", [("に", "2"), ("ほ", "歩")])
    assert not words_fit("ざっし", [("ざ", "The"), ("っし", "っし")])
    assert words_fit("にほん", [("にほん", "日本")])


@needs_dictionary
@pytest.mark.parametrize("reading", ["に", "にほ", "いち", "はち", "ご", "ざ", "ど", "さんにん", "にこ"])
def test_number_words_and_lone_kana_are_not_spelled_with_digits_or_symbols_live(converter, reading):
    live = converter.live(ConversionRequest(reading))
    assert text_fits(reading, live), live
    # explicit conversion still offers what the dictionary has
    assert any(not text_fits(reading, c.surface) for c in converter.candidates(ConversionRequest(reading), 30))


@needs_dictionary
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(reading=readings)
def test_live_text_of_a_hiragana_reading_has_no_digits(converter, reading):
    live = converter.live(ConversionRequest(reading))
    assert not DIGITS & set(live), (reading, live)
    assert text_fits(reading, live), (reading, live)


@needs_dictionary
def test_typing_nihongo_never_shows_a_digit(converter):
    config = Config()
    session = Session(converter, replace(config, session=replace(config.session, live_conversion=True)))
    shown = [session.process_key(ord(ch)).preedit_text for ch in "nihongo"]
    assert not any(DIGITS & set(text) for text in shown), shown
    assert shown[-1] == "日本語"


@settings(max_examples=100, deadline=None)
@given(reading=readings, model_text=st.text(st.sampled_from("2８日本語ほThe℃ｶ"), min_size=1, max_size=6))
def test_a_models_chunk_that_breaks_the_rule_gives_way_to_the_dictionarys(reading, model_text):
    chunks = ChunkedLive(ConversionCache(64), ChunkLimits(), 8)
    refined = chunks.refined(reading, "", lambda r, c: "辞書", lambda r, c: model_text, "m")
    assert refined == (model_text if text_fits(reading, model_text) else "辞書")
