"""User words at dictionary scale (issue 29, item 2): a whole imported word list (a million
lines) must not make typing slow or the engine big. The index holds no object per word; these
tests check what it finds against a plain reference, and its memory per word on a generated
file. Speed is measured by benchmarks/user_dictionary_bench.py, not here."""

from __future__ import annotations

import tracemalloc

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from karukan_engine.dictionary.system import DEFAULT_DIR, SystemDictionary
from karukan_engine.dictionary.user_dictionary import UserDictionary
from karukan_engine.lattice.sources import UserWordSource
from karukan_testing.user_dictionaries import write_user_dictionary

pytestmark = pytest.mark.skipif(not (DEFAULT_DIR / "meta.json").exists(), reason="system dictionary not built")


@pytest.fixture(scope="module")
def system() -> SystemDictionary:
    return SystemDictionary()


def reference_words_at(source: UserWordSource, text: str, start: int) -> list[tuple]:
    """Every form of every word whose reading is a prefix of text[start:], shortest reading first,
    in the dictionary's order (what the index replaced: a dict of lists built per reading)."""
    index: dict[str, list[tuple]] = {}
    for word in source.user_dictionary.words:
        for reading, surface, pos in source._forms(word.reading, word.surface, word.pos):
            index.setdefault(reading, []).append((reading, surface, pos))
    found = []
    for end in range(start + 1, len(text) + 1):
        found += index.get(text[start:end], [])
    return found


KANA = "あいうかきくしる"
POS = ["名詞", "人名", "動詞一段", "動詞ワ行五段", "形容詞", "未知の品詞"]
words = st.lists(st.tuples(st.text(KANA, min_size=1, max_size=4), st.sampled_from(["語", "言", "る", "い", "う"]),
                           st.sampled_from(POS)), max_size=25)


@settings(max_examples=100, deadline=None)
@given(entries=words, text=st.text(KANA, min_size=1, max_size=8), data=st.data())
def test_property_the_index_finds_exactly_what_a_plain_table_would(system, tmp_path_factory, entries, text, data):
    path = tmp_path_factory.mktemp("ud") / "user_dictionary.tsv"
    path.write_text("".join(f"{r}\t{s}\t{p}\t\n" for r, s, p in entries), encoding="utf-8")
    source = UserWordSource(UserDictionary(path), system)
    start = data.draw(st.integers(0, len(text) - 1))
    got = [(w.reading, w.surface, w.lid) for w in source.words_at(text, start)]
    assert got == reference_words_at(source, text, start)
    assert all(w.lid == w.rid and w.cost >= 0 for w in source.words_at(text, start))


def test_an_edit_on_disk_is_found_at_the_next_lookup(system, tmp_path):
    path = tmp_path / "user_dictionary.tsv"
    path.write_text("かるかん\t軽羹\t名詞\t\n", encoding="utf-8")
    user = UserDictionary(path)
    source = UserWordSource(user, system)
    assert [w.surface for w in source.words_at("かるかん", 0)] == ["軽羹"]
    user.add("かるかん", "カルカン")
    assert [w.surface for w in source.words_at("かるかん", 0)] == ["軽羹", "カルカン"]


def test_a_big_user_dictionary_holds_no_object_per_word(system, tmp_path):
    """50,000 generated lines: the dictionary and its index take under 400 bytes a word (one
    string per line and a few array slots); the per-word objects before took about 950."""
    lines = 50_000
    path = write_user_dictionary(tmp_path / "user_dictionary.tsv", lines)
    tracemalloc.start()
    try:
        user = UserDictionary(path, pos_names=system.user_pos)
        source = UserWordSource(user, system)
        list(source.words_at("あいうえお", 0))
        held, _peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(user) == lines
    assert held / lines < 400, f"{held / lines:.0f} bytes per word"
    # and every word is there to be found
    for number in (0, lines // 2, lines - 1):
        word = user.word(number)
        assert word.surface in {w.surface for w in source.words_at(word.reading, 0)}


def test_the_readings_kept_are_bounded_and_answers_stay_the_same(system, tmp_path, monkeypatch):
    import karukan_engine.lattice.sources as sources

    monkeypatch.setattr(sources, "MAX_CACHED_READINGS", 3)
    path = tmp_path / "user_dictionary.tsv"
    path.write_text("かる\t軽\t名詞\t\nかるかん\t軽羹\t名詞\t\nかん\t缶\t名詞\t\n", encoding="utf-8")
    source = UserWordSource(UserDictionary(path), system)
    text = "かるかんかるかん"
    first = [[w.surface for w in source.words_at(text, start)] for start in range(len(text))]
    again = [[w.surface for w in source.words_at(text, start)] for start in range(len(text))]
    assert first == again and first[0] == ["軽", "軽羹"] and first[2] == ["缶"]
    assert len(source._found) <= 3
