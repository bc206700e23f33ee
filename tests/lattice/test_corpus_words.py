"""Corpus nouns in the lattice (lattice/corpus_words.py) and the stage that finds them
(training/corpus_nouns.py): the file's words become lattice words with their POS's connections,
bad lines and damaged files lose nothing else, and the stage keeps only frequent nouns the
dictionary lacks, costed like the dictionary's nouns of the same frequency."""

from __future__ import annotations

import gzip
import math
import logging
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from karukan_engine.core.types import ConversionRequest
from karukan_engine.dictionary.system import DEFAULT_DIR, SystemDictionary
from karukan_engine.lattice.converter import LatticeConverter
from karukan_engine.lattice.corpus_words import CorpusWordSource
from karukan_engine.training.corpus_nouns import (
    _noun_batch,
    cost_line,
    dictionary_costs,
    missing_nouns,
    mozc_pos,
    sudachi_agrees,
    word_counts,
)

pytestmark = pytest.mark.skipif(not (DEFAULT_DIR / "meta.json").is_file(), reason="dictionary not built")


@pytest.fixture(scope="module")
def system():
    return SystemDictionary()


def write_gz(path, text: str):
    with gzip.open(path, "wt", encoding="utf-8") as handle:
        handle.write(text)
    return path


def test_the_file_s_nouns_join_the_lattice_and_bad_lines_are_skipped(system, tmp_path):
    path = write_gz(tmp_path / "nouns.tsv.gz", "ぴよぴよ\t比与比与\t名詞\t1000\n"
                                                "ぴよぴよ\t日世日世\t地名\t9000\n"
                                                "ぴよ\t比与\t名詞\tcheap\n"        # cost not a number
                                                "ぴよ\t比与\t架空の品詞\t10\n"     # no such POS
                                                "broken line\n")
    source = CorpusWordSource.load(system, path)
    assert len(source) == 2
    words = list(source.words_at("あぴよぴよ", 1))
    assert [w.surface for w in words] == ["比与比与", "日世日世"]
    assert words[0].lid == words[0].rid == system.user_pos["名詞"]
    assert list(source.words_at("あぴよぴよ", 0)) == [] and list(source.words_at("ぴよぴよ", 0, min_end=5)) == []
    converter = LatticeConverter(system, None, None, corpus_words=source)
    found = [c.surface for c in converter.candidates(ConversionRequest("ぴよぴよ"), 10)]
    assert found[0] == "比与比与" and "日世日世" in found
    assert "比与比与" not in [c.surface for c in LatticeConverter(system, None, None).candidates(
        ConversionRequest("ぴよぴよ"), 10)]


def test_a_missing_or_damaged_file_leaves_the_dictionary_alone(system, tmp_path, caplog):
    damaged = tmp_path / "damaged.tsv.gz"
    damaged.write_bytes(gzip.compress("ぴよ\t比与\t名詞\t10\n".encode())[:-6])
    for path in (tmp_path / "missing.tsv.gz", damaged):
        with caplog.at_level(logging.WARNING):
            source = CorpusWordSource.load(system, path)
        assert len(source) == 0 and "corpus nouns unavailable" in caplog.text
        caplog.clear()
        assert LatticeConverter(system, None, None, corpus_words=source).live(ConversionRequest("かいぎ")) == "会議"


@given(pos=st.tuples(st.sampled_from(["普通名詞", "固有名詞", "数詞", "*"]),
                     st.sampled_from(["一般", "人名", "地名", "サ変可能", "形状詞可能", "組織名", "*"]),
                     st.sampled_from(["一般", "姓", "名", "*"])))
def test_unidic_nouns_map_to_a_mozc_user_pos_and_others_to_none(pos):
    name = mozc_pos(*pos)
    if pos[0] not in ("普通名詞", "固有名詞"):
        assert name is None
    else:
        assert name in {"名詞", "名詞サ変", "名詞形動", "固有名詞", "人名", "姓", "名", "地名", "組織"}
        assert (name in {"人名", "姓", "名", "地名", "組織", "固有名詞"}) == (pos[0] == "固有名詞")


def test_missing_nouns_are_the_frequent_standalone_ones_the_dictionary_lacks_costed_like_its_own(system):
    counts = Counter({("かいぎ", "会議", "名詞サ変", True): 400, ("しりょう", "資料", "名詞", True): 40,
                      ("ぴよぴよ", "比与比与", "名詞", True): 300, ("ぴよぴよ", "比与比与", "名詞", False): 100,
                      ("ぴよ", "比与", "名詞", True): 40,
                      ("ぽよ", "歩与", "名詞", True): 3,                                         # rare
                      ("ぱよ", "波与", "名詞", True): 20, ("ぱよ", "波与", "名詞", False): 200,  # a compound's head
                      ("ぷよ", "不与", "名詞", True): 40,
                      ("ぴ", "比", "名詞", True): 90,      # one kanji: ten times the least count
                      ("ぺ", "辺", "名詞", True): 100})
    total, alone = word_counts(counts)
    assert total[("ぴよぴよ", "比与比与", "名詞")] == 400 and alone[("ぴよぴよ", "比与比与", "名詞")] == 300
    a, b = cost_line(total, dictionary_costs(total, system, min_count=10), min_count=10)
    assert b < 0   # the more frequent, the cheaper
    rejected = {("ぷよ", "不与")}
    rows, line = missing_nouns(counts, system, min_count=10, check=lambda pairs: set(pairs) - rejected)
    assert line == (a, b)
    assert [(r, s) for r, s, _, _ in rows] == [("ぴよ", "比与"), ("ぴよぴよ", "比与比与"), ("ぺ", "辺")]
    cost = {s: c for _, s, _, c in rows}
    assert cost["比与比与"] < cost["比与"]
    assert cost["比与比与"] == round(a + b * math.log(400))


def test_sudachi_keeps_one_noun_read_the_same_way():
    agreed = sudachi_agrees([("ゆうき", "勇気"), ("すいぞく", "水族館"), ("ゆうき", "勇 気"), ("はしる", "走る")])
    assert agreed == {("ゆうき", "勇気")}


def test_nouns_are_counted_with_whether_they_stand_alone():
    counts = _noun_batch(["勇気を出す。", "三日間かかった", "扇風機を回す", "有機農業と勇気"])
    assert counts[("ゆうき", "勇気", "名詞", True)] == 2                 # before を, at the end
    assert counts[("かかん", "日間", "名詞", False)] == 1                # after a numeral
    assert counts[("せんぷう", "扇風", "名詞", False)] == 1              # the head of 扇風機
    assert not any(surface in ("を", "出す") for _, surface, _, _ in counts)   # nouns only


def test_alignment_reads_the_corpus_words_beside_the_dictionary(system, tmp_path):
    from karukan_engine.conversion.align import Aligner
    from karukan_engine.lattice.corpus_words import LexiconWithWords

    path = write_gz(tmp_path / "nouns.tsv.gz", "ぴよぴよ\t比与比与\t名詞\t1000\nかいぎ\t海義\t名詞\t99999\n")
    source = CorpusWordSource.load(system, path)
    lexicon = LexiconWithWords(system, source)
    assert "ぴよぴよ" in lexicon.prefixes("ぴよぴよのかいぎ") and lexicon.prefixes("かいぎ") == system.prefixes("かいぎ")
    found = lexicon.lookup("かいぎ")
    assert [e.surface for e in found][-1] == "海義" and [e.cost for e in found] == sorted(e.cost for e in found)
    assert lexicon.matrix is system.matrix and lexicon.lookup("かいぎの") == system.lookup("かいぎの")
    # the word aligns as a word (as the fused ranking and the live stabiliser align texts)
    assert Aligner(system).align("ぴよぴよのかいぎ", "比与比与の会議") is None
    aligned = Aligner(lexicon).align("ぴよぴよのかいぎ", "比与比与の会議")
    assert aligned is not None and [w.surface for w in aligned.words][0] == "比与比与"
    converter = LatticeConverter(system, None, None, corpus_words=source)
    assert converter.lexicon.words is source and LatticeConverter(system, None, None).lexicon is system


def test_predictions_offer_the_corpus_words_too(system, tmp_path):
    from karukan_engine.conversion.suggest import suggestions
    from karukan_engine.lattice.corpus_words import LexiconWithWords

    path = write_gz(tmp_path / "nouns.tsv.gz", "ぬゅぬゅ\t奴湯奴湯\t名詞\t1000\n")
    lexicon = LexiconWithWords(system, CorpusWordSource.load(system, path))
    assert lexicon.predictive("ぬゅ") == ["ぬゅぬゅ"] and system.predictive("ぬゅ") == []
    assert lexicon.predictive("かいぎ", 5) == system.predictive("かいぎ", 5)
    assert lexicon.cheapest_cost("ぬゅぬゅ") == 1000 and lexicon.cheapest_cost("かいぎ") == system.cheapest_cost("かいぎ")
    assert lexicon.cheapest_cost("ぬゅ") is None
    assert [c.surface for c in suggestions("ぬゅ", None, lexicon)] == ["奴湯奴湯"]
    assert suggestions("ぬゅ", None, system) == []


KANA = "あいうかきく"


@settings(max_examples=60, deadline=None)
@given(words=st.lists(st.tuples(st.text(KANA, min_size=1, max_size=4), st.integers(0, 9000)), max_size=12),
       text=st.text(KANA, max_size=8), data=st.data())
def test_words_at_and_the_lexicon_find_exactly_the_corpus_words_that_fit(system, tmp_path_factory, words, text, data):
    from karukan_engine.lattice.corpus_words import LexiconWithWords

    lines = "".join(f"{reading}\t比{i}\t名詞\t{cost}\n" for i, (reading, cost) in enumerate(words))
    source = CorpusWordSource.load(system, write_gz(tmp_path_factory.mktemp("w") / "n.tsv.gz", lines))
    start = data.draw(st.integers(0, len(text)))
    min_end = data.draw(st.integers(0, len(text) + 1))
    found = sorted((w.reading, w.surface) for w in source.words_at(text, start, min_end))
    expected = sorted((r, f"比{i}") for i, (r, _) in enumerate(words)
                      if text.startswith(r, start) and start + len(r) >= min_end)
    assert found == expected
    lexicon = LexiconWithWords(system, source)
    prefixes = lexicon.prefixes(text)
    assert set(prefixes) == set(system.prefixes(text)) | {r for r, _ in words if text.startswith(r)}
    assert all(len(a) <= len(b) for a, b in zip(prefixes, prefixes[1:]))
    for reading in {r for r, _ in words}:
        entries = lexicon.lookup(reading)
        assert [e.cost for e in entries] == sorted(e.cost for e in entries)
        assert len(entries) == len(system.lookup(reading)) + sum(r == reading for r, _ in words)
