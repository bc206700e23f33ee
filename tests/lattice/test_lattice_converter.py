"""LatticeConverter over the bundled Mozc dictionary: the Converter contract, resize, variants."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from karukan_engine.core.types import ConversionRequest, Converter, check_segments
from karukan_engine.dictionary.learning import LearningStore
from karukan_engine.dictionary.system import DEFAULT_DIR, SystemDictionary
from karukan_engine.dictionary.user_dictionary import UserDictionary
from karukan_engine.lattice.converter import LatticeConverter

pytestmark = pytest.mark.skipif(not (DEFAULT_DIR / "meta.json").is_file(),
                                reason="compiled dictionary not built")


@pytest.fixture(scope="module")
def system():
    return SystemDictionary()


@pytest.fixture
def converter(system, tmp_path):
    user = UserDictionary(tmp_path / "user.tsv", pos_names=system.user_pos)
    converter = LatticeConverter(system, user, LearningStore(tmp_path / "learning.json"))
    yield converter
    converter.close()


def test_implements_the_protocol(converter):
    assert isinstance(converter, Converter)


def test_load_default_reads_user_data_from_xdg(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    converter = LatticeConverter.load_default()
    assert converter.learning.path == tmp_path / "karukan" / "learning.json"
    assert converter.user_dictionary.path == tmp_path / "karukan" / "user_dictionary.tsv"


def test_load_default_without_data_raises_file_not_found(tmp_path):
    with pytest.raises(FileNotFoundError):
        LatticeConverter.load_default(tmp_path)


@pytest.mark.parametrize("reading, expected", [
    ("きょうはいいてんきですね", "今日はいい天気ですね"),
    ("わたしはがくせいです", "私は学生です"),
    ("こうえんにいく", "公園に行く"),
])
def test_best_conversion(converter, reading, expected):
    request = ConversionRequest(reading)
    assert converter.live(request) == expected
    assert converter.candidates(request, 5)[0].surface == expected
    assert "".join(s.best.surface for s in converter.convert(request)) == expected


def test_nbest_is_distinct_and_ordered(converter):
    cands = converter.candidates(ConversionRequest("こうえんにいく"), 10)
    surfaces = [c.surface for c in cands]
    assert len(surfaces) == 10 == len(set(surfaces))
    assert surfaces[:3] == ["公園に行く", "公演に行く", "講演に行く"]


def test_segments_and_alternatives(converter):
    segments = converter.convert(ConversionRequest("きょうはいいてんきですね"))
    check_segments("きょうはいいてんきですね", segments)
    assert segments[0].reading == "きょうは"
    first = [c.surface for c in segments[0].candidates]
    assert first[0] == "今日は" and "きょうは" in first and "キョウハ" in first
    assert len(first) == len(set(first))


def test_resize_keeps_fixed_lengths_and_reconverts_the_rest(converter):
    reading = "きょうはいいてんきですね"
    segments = converter.convert(ConversionRequest(reading, fixed_lengths=(3,)))
    check_segments(reading, segments, (3,))
    assert segments[0].reading == "きょう" and segments[0].best.surface == "今日"
    assert segments[1].reading.startswith("は")
    longer = converter.convert(ConversionRequest(reading, fixed_lengths=(6, 2)))
    check_segments(reading, longer, (6, 2))


@pytest.fixture(scope="module")
def plain_converter(system):
    return LatticeConverter(system)


@settings(max_examples=40, deadline=None)
@given(reading=st.text(alphabet="かきくけこあいうえおんはをー1a", min_size=1, max_size=12), data=st.data())
def test_segments_always_cover_the_reading(plain_converter, reading, data):
    converter = plain_converter
    fixed = tuple(data.draw(st.lists(st.integers(1, 3), max_size=2)))
    if sum(fixed) > len(reading):
        fixed = ()
    segments = converter.convert(ConversionRequest(reading, fixed_lengths=fixed))
    check_segments(reading, segments, fixed)
    for segment in segments:
        surfaces = [c.surface for c in segment.candidates]
        assert len(surfaces) == len(set(surfaces))


def test_number_and_symbol_variants(converter):
    segments = converter.convert(ConversionRequest("123えんです"))
    first = {c.surface: c.annotation for c in segments[0].candidates}
    assert first.get("１２３") == "[全]数字"
    assert "百二十三" in first and "一二三" in first
    arrows = converter.convert(ConversionRequest("やじるし"))
    assert any(c.surface == "→" for c in arrows[0].candidates)


def test_user_word_enters_the_lattice(converter):
    assert converter.live(ConversionRequest("かるかん")) != "軽患"
    converter.user_dictionary.add("かるかん", "軽患", "名詞")
    cands = converter.candidates(ConversionRequest("かるかん"), 5)
    assert cands[0].surface == "軽患" and cands[0].source == "user"


def test_learning_moves_a_committed_conversion_up(converter):
    request = ConversionRequest("きしゃ")
    assert converter.live(request) == "記者"
    assert converter.convert(request)[0].candidates[0].surface == "記者"   # fills the caches
    converter.record([("きしゃ", "帰社")])
    assert converter.live(request) == "帰社"
    assert converter.convert(request)[0].candidates[0].surface == "帰社"
    assert converter.learning.saves == 0 and converter.learning.dirty   # nothing written on the key
    assert converter.save() and converter.learning.path.is_file()
    assert LearningStore(converter.learning.path).lookup("きしゃ") == ["帰社"]


def test_multi_word_learned_segment_joins_a_sentence(converter):
    converter.record([("きしゃが", "帰社が")])
    assert converter.live(ConversionRequest("きしゃがきた")).startswith("帰社が")


def test_repeated_convert_is_stable(converter):
    request = ConversionRequest("きょうはいいてんきですね", fixed_lengths=(3,))
    assert converter.convert(request) == converter.convert(request)
    converter.clear_cache()
    assert converter.convert(request) == converter.convert(ConversionRequest(request.reading, fixed_lengths=(3,)))


def test_the_reading_and_its_cut_lattices_are_both_kept(converter, monkeypatch):
    from karukan_engine.lattice.converter import ANALYSIS_CACHE_SIZE

    built: list[tuple] = []
    real = converter.builder.build
    monkeypatch.setattr(converter.builder, "build", lambda reading, cuts: built.append((reading, tuple(cuts)))
                        or real(reading, cuts))
    extend = converter.builder.extend   # a reading that continues a cached one is built from it
    monkeypatch.setattr(converter.builder, "extend", lambda base, reading: built.append((reading, ()))
                        or extend(base, reading))
    whole, cut = ConversionRequest("きょうはいいてんきですね"), ConversionRequest("きょうはいいてんきですね", fixed_lengths=(3,))
    expected = [converter.convert(whole), converter.convert(cut)]
    assert [converter.convert(whole), converter.convert(cut)] == expected and len(built) == 2   # as a fused Space asks
    converter.record([("きょう", "京")])          # the user's data changed: analysed again
    converter.convert(whole)
    assert len(built) == 3
    for i in range(ANALYSIS_CACHE_SIZE):           # bounded: the oldest go first
        converter.convert(ConversionRequest("あめ" * (i + 1)))
    converter.convert(whole)
    assert len(built) == 3 + ANALYSIS_CACHE_SIZE + 1


def test_left_context_connects_the_first_word(converter):
    reading = "みずにせんげんする"
    assert converter.live(ConversionRequest(reading)) == "水に宣言する"
    assert converter.live(ConversionRequest(reading, left_context="カードを")) == "見ずに宣言する"
    # after a sentence end the context changes nothing
    assert converter.live(ConversionRequest(reading, left_context="カードを見た。")) == "水に宣言する"
    segments = converter.convert(ConversionRequest(reading, left_context="カードを"))
    assert segments[0].best.surface == "見ずに"


def test_context_analyzer_choices(system):
    from karukan_engine.lattice.context import START, ContextAnalyzer

    analyzer = ContextAnalyzer(system)
    assert analyzer.left_neighbours("") == START and analyzer.left_neighbours("です。") == START
    choices = dict(analyzer.left_neighbours("会議の"))
    assert min(choices.values()) == 0 and len(choices) > 1
    kanji = dict(analyzer.left_neighbours("昨日"))
    assert kanji and all(rid > 0 for rid in kanji)


def test_user_verb_conjugates(converter):
    assert "軽羹" not in converter.live(ConversionRequest("かるかんったらわかった"))
    converter.user_dictionary.add("かるかんる", "軽羹る", "動詞ラ行五段")
    assert converter.live(ConversionRequest("かるかんったらわかった")).startswith("軽羹ったら")
    assert converter.live(ConversionRequest("かるかんらない")).startswith("軽羹らない")


def test_benchmark_script_runs_and_writes_json(tmp_path):
    import json
    import subprocess
    import sys
    from pathlib import Path

    script = Path(__file__).resolve().parents[2] / "benchmarks" / "lattice_bench.py"
    out = tmp_path / "bench.json"
    result = subprocess.run([sys.executable, str(script), "--repeats", "1", "--per-length", "2", "--history", "3",
                             "--json", str(out)], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    report = json.loads(out.read_text())
    assert [row["kana"] for row in report["conversion"]] == [5, 10, 20, 40]
    assert all(row["n"] == 2 and row["full_median_ms"] > 0 for row in report["conversion"])
    assert all(row["focused_cpu_median_ms"] > 0 and row["all_p95_ms"] > 0 for row in report["conversion"])
    assert report["load"]["peak_rss_mb"] > 0
    assert report["learning"]["record_median_ms"] > 0 and report["learning"]["files_written"] == 2
    assert "learning history: " in result.stdout and " pairs from 3 sentences" in result.stdout


def test_return_in_a_session_learns_without_writing_and_close_persists(converter):
    from karukan_engine.session import Session
    from karukan_engine.session.keys_cli import parse_keys

    session = Session(converter)
    for _, keysym, mods in parse_keys("kisha<space><space><return>"):
        view = session.process_key(keysym, mods)
    assert view.commit and converter.learning.lookup("きしゃ") == [view.commit]
    assert converter.learning.saves == 0 and not converter.learning.path.exists()
    converter.close()
    assert LearningStore(converter.learning.path).lookup("きしゃ") == [view.commit]


def test_keys_cli_writes_the_learning_before_it_exits(tmp_path):
    import os
    import subprocess
    import sys

    env = {**os.environ, "XDG_DATA_HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path)}
    result = subprocess.run([sys.executable, "-m", "karukan_engine.cli", "keys", "--no-model",
                             "kyouhaiitenkidesune<space><return>"],
                            capture_output=True, text=True, timeout=120, env=env)
    assert result.returncode == 0, result.stderr
    assert "commit: 今日はいい天気ですね" in result.stdout
    learned = LearningStore(tmp_path / "karukan" / "learning.json", save_delay=None)
    assert learned.lookup("きょうは") == ["今日は"]
