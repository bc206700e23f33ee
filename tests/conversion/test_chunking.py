"""Chunking of long readings: examples from the reference behaviour and properties."""

from hypothesis import given, settings, strategies as st

from karukan_engine.conversion.chunking import (
    CharClass,
    ChunkLimits,
    char_class,
    chunk_left_context,
    split_chunks,
)


def texts(reading, **kw):
    return [c.text for c in split_chunks(reading, **kw)]


def test_punctuation_beyond_the_allowance_splits():
    assert texts("おい、おまえだよ。まて、こら") == ["おい、おまえだよ", "。", "まて、こら"]


def test_letters_always_split_and_bypass_the_model():
    chunks = split_chunks("あいk")
    assert [c.text for c in chunks] == ["あい", "k"]
    assert [c.japanese for c in chunks] == [True, False]


def test_digits_are_their_own_chunk_by_default():
    chunks = split_chunks("3じに10ぷん")
    assert [c.text for c in chunks] == ["3", "じに", "10", "ぷん"]
    assert [c.japanese for c in chunks] == [False, True, False, True]


def test_digit_allowance_keeps_digits_inside():
    assert texts("だい3かい", limits=ChunkLimits(max_digits=1)) == ["だい3かい"]


def test_middle_dot_is_a_symbol_not_japanese():
    assert char_class("・") is CharClass.SYMBOL
    assert char_class("ー") is CharClass.JAPANESE
    assert char_class("漢") is CharClass.JAPANESE


def test_long_reading_is_cut_after_a_particle_within_the_limit():
    reading = "きょうはとてもいいてんきなのでこうえんにさんぽにいきたいとおもいます"
    chunks = texts(reading, limits=ChunkLimits(max_chars=20))
    assert "".join(chunks) == reading
    assert all(len(c) <= 20 for c in chunks)
    # The cut lands right after a particle-like kana, not in the middle of a word.
    assert chunks[0][-1] in "はがをにでとものへやねよかな"


def test_manual_breaks_are_honoured():
    assert texts("きょうはいいてんき", manual_breaks=[4]) == ["きょうは", "いいてんき"]


def test_chunk_left_context_is_bounded_from_the_right():
    assert chunk_left_context("abc", ["今日は", "いい"], 5) == "今日はいい"
    assert chunk_left_context("xyz", [], 2) == "yz"
    assert chunk_left_context("xyz", ["a"], 0) == ""


alphabet = st.sampled_from(list("あいうえおかはがをにでーアイ漢字、。・!1 2abcZ"))
readings = st.text(alphabet, max_size=90)
limits = st.builds(
    ChunkLimits,
    max_chars=st.integers(1, 35),
    max_symbols=st.integers(0, 2),
    max_digits=st.integers(0, 2),
)


@given(readings, limits, st.lists(st.integers(0, 90), max_size=4))
@settings(max_examples=300)
def test_chunks_cover_the_reading_and_respect_limits(reading, lim, breaks):
    chunks = split_chunks(reading, lim, manual_breaks=breaks)
    assert "".join(c.text for c in chunks) == reading
    pos = 0
    for chunk in chunks:
        assert chunk.start == pos and chunk.text
        pos = chunk.end
        assert len(chunk.text) <= lim.max_chars
        classes = [char_class(ch) for ch in chunk.text]
        assert chunk.japanese == (CharClass.JAPANESE in classes)
        if chunk.japanese:
            assert CharClass.LETTER not in classes
            assert classes.count(CharClass.SYMBOL) <= lim.max_symbols
            assert classes.count(CharClass.DIGIT) <= lim.max_digits
        else:
            assert len(set(classes)) == 1
    starts = {c.start for c in chunks}
    assert all(b in starts for b in breaks if 0 < b < len(reading))


@given(readings, readings, limits)
@settings(max_examples=300)
def test_typing_more_never_moves_a_finished_cut(reading, more, lim):
    before = split_chunks(reading, lim)
    after = split_chunks(reading + more, lim)
    assert after[: max(0, len(before) - 1)] == before[:-1]
