"""Aligning a surface back to dictionary words and reading spans (constrained lattice)."""

from dataclasses import dataclass

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from karukan_engine.conversion.align import Aligner


@dataclass(frozen=True)
class Word:
    surface: str
    lid: int
    rid: int
    cost: int


class SmallLexicon:
    """A tiny dictionary with the system dictionary's interface. POS 1 = noun, 2 = particle."""

    def __init__(self, words):
        self.words = {}
        for reading, surface, pos, cost in words:
            self.words.setdefault(reading, []).append(Word(surface, pos, pos, cost))
        self.matrix = np.zeros((3, 3), dtype=np.int16)
        self.meta = {"noun_id": 1}
        seg = np.ones((3, 3), dtype=bool)
        seg[1, 2] = False          # noun + particle stay in one bunsetsu
        self.segmenter = seg

    def prefixes(self, text):
        return [text[:k] for k in range(1, len(text) + 1) if text[:k] in self.words]

    def lookup(self, reading):
        return sorted(self.words.get(reading, []), key=lambda w: w.cost)


LEXICON = SmallLexicon([
    ("きょう", "今日", 1, 100), ("きょう", "京", 1, 300), ("は", "は", 2, 10),
    ("てんき", "天気", 1, 100), ("てんき", "転機", 1, 200), ("いい", "良い", 1, 150),
    ("こうえん", "公園", 1, 100), ("こうえん", "講演", 1, 120), ("に", "に", 2, 10),
])


def test_model_output_maps_to_words_and_bunsetsu():
    aligner = Aligner(LEXICON)
    alignment = aligner.align("きょうはてんき", "今日は転機")
    assert [(w.reading, w.surface) for w in alignment.words] == [("きょう", "今日"), ("は", "は"), ("てんき", "転機")]
    assert alignment.segments(LEXICON.segmenter) == [("きょうは", "今日は"), ("てんき", "転機")]
    assert alignment.cost == 100 + 10 + 200


def test_the_cost_prefers_cheaper_words_for_the_same_surface():
    aligner = Aligner(LEXICON)
    cheap = aligner.align("こうえんに", "公園に").cost
    dear = aligner.align("こうえんに", "講演に").cost
    assert cheap < dear


def test_text_spelled_as_read_aligns_as_unknown_words():
    aligner = Aligner(LEXICON)
    alignment = aligner.align("いいkarukan", "良いkarukan")
    assert [(w.reading, w.surface, w.known) for w in alignment.words] == [
        ("いい", "良い", True), ("karukan", "karukan", False)]


def test_katakana_surface_of_a_hiragana_reading_aligns():
    assert Aligner(LEXICON).align("てれび", "テレビ").segments() == [("てれび", "テレビ")]


def test_text_that_cannot_be_aligned_gives_none():
    aligner = Aligner(LEXICON)
    assert aligner.align("きょう", "明日") is None
    assert aligner.align("", "x") is None


@given(st.lists(st.sampled_from([("きょう", "今日"), ("は", "は"), ("てんき", "天気"), ("こうえん", "講演"),
                                 ("に", "に"), ("あ", "ア"), ("1", "1")]), min_size=1, max_size=8))
@settings(max_examples=100)
def test_alignment_covers_reading_and_surface_exactly(parts):
    reading = "".join(r for r, _ in parts)
    surface = "".join(s for _, s in parts)
    alignment = Aligner(LEXICON).align(reading, surface)
    assert alignment is not None
    segments = alignment.segments(LEXICON.segmenter)
    assert "".join(r for r, _ in segments) == reading
    assert "".join(s for _, s in segments) == surface
    assert all(r and s for r, s in segments)


def cheapest_cost(lexicon, reading: str, surface: str) -> int | None:
    """Every path that reads `reading` and writes `surface`, tried one by one: the least cost
    (connection costs included, as the aligner counts them), None when there is none."""
    from functools import lru_cache

    from karukan_engine.conversion.align import UNKNOWN_CHAR_COST, _same_char

    unknown = lexicon.meta["noun_id"]

    @lru_cache(maxsize=None)
    def rest(i: int, j: int, rid: int) -> float:
        if i == len(reading):
            return int(lexicon.matrix[rid, 0]) if j == len(surface) else float("inf")
        found = float("inf")
        for word_reading in lexicon.prefixes(reading[i:]):
            for w in lexicon.lookup(word_reading):
                if surface.startswith(w.surface, j):
                    found = min(found, int(lexicon.matrix[rid, w.lid]) + w.cost
                                + rest(i + len(word_reading), j + len(w.surface), w.rid))
        if j < len(surface) and _same_char(reading[i], surface[j]):
            found = min(found, int(lexicon.matrix[rid, unknown]) + UNKNOWN_CHAR_COST + rest(i + 1, j + 1, unknown))
        return found

    best = rest(0, 0, 0)
    return None if best == float("inf") else int(best)


@given(st.lists(st.sampled_from([("きょう", "今日"), ("きょう", "京"), ("は", "は"), ("てんき", "転機"),
                                 ("こうえん", "公園"), ("いい", "良い"), ("いい", "いい"), ("あ", "ア")]),
                min_size=1, max_size=6),
       st.lists(st.integers(-200, 2000), min_size=9, max_size=9))
@settings(max_examples=150, deadline=None)
def test_the_alignment_is_the_cheapest_path_whatever_the_connection_costs(parts, connections):
    lexicon = SmallLexicon([(r, s, pos, cost) for r, s, pos, cost in [
        ("きょう", "今日", 1, 100), ("きょう", "京", 1, 300), ("は", "は", 2, 10), ("てんき", "転機", 1, 200),
        ("こうえん", "公園", 1, 100), ("いい", "良い", 1, 150), ("いい", "いい", 2, 40), ("き", "き", 2, 60),
        ("きょうは", "今日は", 1, 90),
        # the same words as another part of speech: several states per position, which only
        # the connection costs tell apart
        ("は", "は", 1, 50), ("てんき", "転機", 2, 260), ("いい", "良い", 2, 170), ("きょう", "今日", 2, 140)]])
    lexicon.matrix = np.array(connections, dtype=np.int16).reshape(3, 3)   # POS states matter
    reading = "".join(r for r, _ in parts)
    surface = "".join(s for _, s in parts)
    alignment = Aligner(lexicon).align(reading, surface)
    expected = cheapest_cost(lexicon, reading, surface)
    assert (alignment.cost if alignment is not None else None) == expected
    if alignment is not None:
        assert "".join(w.reading for w in alignment.words) == reading
        assert "".join(w.surface for w in alignment.words) == surface


_PARTS = st.sampled_from([("きょう", "今日"), ("きょう", "京"), ("は", "は"), ("てんき", "転機"), ("てんき", "天気"),
                          ("こうえん", "公園"), ("いい", "良い"), ("いい", "いい"), ("あ", "ア")])


@given(st.lists(st.lists(_PARTS, min_size=1, max_size=5), min_size=1, max_size=6),
       st.lists(st.integers(-200, 2000), min_size=9, max_size=9), st.sampled_from(["", "明日", "今日は"]))
@settings(max_examples=150)
def test_aligning_several_surfaces_at_once_gives_each_its_own_alignment(spellings, connections, stranger):
    """The N-best of one reading share their beginnings, and align_many searches a shared
    beginning once: each surface still gets exactly what aligning it alone gives (words, cost,
    ties), whatever else is aligned beside it (other spellings, an unalignable one, a repeat)."""
    lexicon = SmallLexicon([("きょう", "今日", 1, 100), ("きょう", "京", 1, 300), ("は", "は", 2, 10),
                            ("は", "は", 1, 50), ("てんき", "転機", 1, 200), ("てんき", "天気", 1, 100),
                            ("いい", "良い", 1, 150), ("いい", "いい", 2, 40), ("こうえん", "公園", 1, 100),
                            ("きょうは", "今日は", 1, 90)])
    lexicon.matrix = np.array(connections, dtype=np.int16).reshape(3, 3)
    reading = "".join(r for r, _ in spellings[0])
    surfaces = ["".join(s for _, s in parts) for parts in spellings if "".join(r for r, _ in parts) == reading]
    surfaces += [stranger, surfaces[0]]
    together = Aligner(lexicon).align_many(reading, surfaces)
    alone = [Aligner(lexicon).align(reading, surface) for surface in surfaces]
    assert together == alone
    assert together[0] is not None   # spelled from the dictionary's words


def test_with_the_system_dictionary():
    system = pytest.importorskip("karukan_engine.dictionary.system")
    try:
        dictionary = system.SystemDictionary()
    except FileNotFoundError:
        pytest.skip("compiled system dictionary not built")
    reading, surface = "かいぎのしりょうをおくります", "会議の資料を送ります"
    alignment = Aligner(dictionary).align(reading, surface)
    # Behaviour, not one dictionary's entries (Mozc 3.34 has 会議の資料 as one word, 2.29 not):
    # every piece is a dictionary word, and the bunsetsu are those words grouped exactly where
    # the segmenter puts a boundary; the verb is a bunsetsu of its own.
    words = alignment.words
    assert "".join(w.reading for w in words) == reading and "".join(w.surface for w in words) == surface
    for w in words:
        assert w.known and any(e.surface == w.surface for e in dictionary.lookup(w.reading))
    groups = [[words[0]]]
    for previous, word in zip(words, words[1:]):
        if dictionary.segmenter[previous.rid, word.lid]:
            groups.append([word])
        else:
            groups[-1].append(word)
    expected = [("".join(w.reading for w in g), "".join(w.surface for w in g)) for g in groups]
    segments = alignment.segments(dictionary.segmenter)
    assert segments == expected and len(segments) >= 2
    assert segments[-1] == ("おくります", "送ります")
