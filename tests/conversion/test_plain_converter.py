from hypothesis import given, strategies as st

from karukan_engine.conversion.plain import PlainConverter
from karukan_engine.core.types import ConversionRequest, Converter, check_segments
from karukan_engine.transliteration import script_variants


def test_is_a_converter():
    assert isinstance(PlainConverter(), Converter)


def test_variants_with_annotations():
    got = [(c.surface, c.annotation) for c in script_variants("きょう")]
    assert got == [("きょう", "[全]ひらがな"), ("キョウ", "[全]カタカナ"), ("ｷｮｳ", "[半]カタカナ")]
    got = [(c.surface, c.annotation) for c in script_variants("ｔｏｋｙｏ")]
    assert got == [("ｔｏｋｙｏ", "[全]ひらがな"), ("tokyo", "[半]カタカナ")]
    assert [c.surface for c in script_variants("20せいき")] == ["20せいき", "20セイキ", "20ｾｲｷ", "２０せいき"]


def test_convert_one_segment_and_fixed_lengths():
    conv = PlainConverter()
    segs = conv.convert(ConversionRequest("きょうは"))
    assert [s.reading for s in segs] == ["きょうは"]
    assert segs[0].best.surface == "きょうは"
    segs = conv.convert(ConversionRequest("きょうは", fixed_lengths=(3,)))
    assert [s.reading for s in segs] == ["きょう", "は"]
    assert conv.convert(ConversionRequest("")) == []
    assert conv.live(ConversionRequest("かな")) == "かな"
    assert [c.surface for c in conv.candidates(ConversionRequest("かな"), 2)] == ["かな", "カナ"]
    conv.record([("かな", "カナ")])


@given(st.text(alphabet="あいうかきくがぱーabc1", min_size=1, max_size=12),
       st.lists(st.integers(min_value=1, max_value=5), max_size=4))
def test_segments_cover_reading(reading, fixed):
    segs = PlainConverter().convert(ConversionRequest(reading, fixed_lengths=tuple(fixed)))
    usable = []
    total = 0
    for n in fixed:
        if total + n > len(reading):
            break
        usable.append(n)
        total += n
    check_segments(reading, segs, usable)
    for s in segs:
        surfaces = [c.surface for c in s.candidates]
        assert len(surfaces) == len(set(surfaces)) and surfaces[0] == s.reading
