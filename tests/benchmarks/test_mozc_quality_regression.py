"""benchmarks/mozc_quality_regression.py: rows parsed and scored as Mozc's quality-regression test
scores them (segments' candidates, sum of candidate indices)."""

from __future__ import annotations

import sys
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import mozc_quality_regression as qr  # noqa: E402

from karukan_engine.core.types import Candidate, Segment  # noqa: E402

ROWS = """\
# label\tkey\tvalue\tcommand
a\tきょうは\t今日は\tConversion Expected
b\tきしゃ\t帰社\tConversion Expected 2
c\tざんち\t殘置\tConversion Expected\t999
d\tかみわざ\t歯科\tConversion Not Match
e\tかいぎ\t会議\tConversion Match
f\tとうきょう\t東京ディズニーラ\tSuggestion Not Expected
g\tきしゃ\t汽車\tConversion Not Expected 1
"""


def test_rows_are_parsed_like_mozc():
    rows = qr.parse_rows(ROWS)
    assert [(r.label, r.command, r.rank) for r in rows] == [
        ("a", "expected", 0), ("b", "expected", 2), ("c", "expected", 999), ("d", "not match", 0),
        ("e", "match", 0), ("g", "not expected", 1)]


def test_spelling_rank_sums_indices_over_segments():
    lists = [["今日は", "京は", "強は"], ["いい", "良い"], ["天気", "転機"]]
    assert qr.spelling_rank("今日はいい天気", lists) == 0
    assert qr.spelling_rank("京は良い転機", lists) == 3
    assert qr.spelling_rank("今日は良い", lists) is None        # every segment must be used
    assert qr.spelling_rank("鏡はいい天気", lists) is None
    assert qr.spelling_rank("今日はいい天気", [["今日は", "今日は"], ["いい天気"]]) == 0


@settings(max_examples=200)
@given(st.data())
def test_spelling_rank_property(data):
    """With candidates that are never prefixes of each other, the rank of a spelling is exactly
    the sum of the chosen indices."""
    n = data.draw(st.integers(1, 4))
    lists, value, total = [], "", 0
    for k in range(n):
        size = data.draw(st.integers(1, 5))
        # distinct, same length, so none is a prefix of another
        words = [f"{k}{chr(0x4E00 + i)}" for i in data.draw(st.permutations(range(size)))]
        pick = data.draw(st.integers(0, size - 1))
        lists.append(words)
        value += words[pick]
        total += pick
    assert qr.spelling_rank(value, lists) == total


class Scripted:
    def __init__(self, segments):
        self.segments = segments

    def convert(self, request):
        return [Segment(r, tuple(Candidate(s) for s in surfaces)) for r, surfaces in self.segments]


def test_check_scores_each_kind():
    conv = Scripted([("きしゃ", ["記者", "汽車", "帰社"])])
    rows = {r.label: r for r in qr.parse_rows(ROWS)}
    assert qr.check(conv, rows["b"]) == (True, "記者")        # index 2 <= 2
    assert qr.check(conv, rows["g"]) == (False, "記者")       # 汽車 at index 1 <= 1: not "not expected"
    assert qr.check(Scripted([("きしゃ", ["記者", "汽車", "帰社"])]),
                    qr.Row("x", "きしゃ", "帰社", "expected", 1)) == (False, "記者")
    assert qr.check(Scripted([("かいぎ", ["会議"])]), rows["e"]) == (True, "会議")
    assert qr.check(Scripted([("かみわざ", ["神業"])]), rows["d"]) == (True, "神業")
    assert qr.check(Scripted([("きょうは", ["今日は"])]), rows["a"]) == (True, "今日は")


def test_rows_from_the_cached_source_tarball(tmp_path, monkeypatch):
    import io
    import tarfile

    from tools import dictionary_fetch

    tarball = tmp_path / "mozc.tar.xz"
    data = ROWS.encode("utf-8")
    with tarfile.open(tarball, "w:xz") as archive:
        info = tarfile.TarInfo("google-mozc-x/src/data/test/quality_regression_test/oss.tsv")
        info.size = len(data)
        archive.addfile(info, io.BytesIO(data))
    monkeypatch.setattr(dictionary_fetch, "fetch", lambda source, cache: tarball)
    assert [r.label for r in qr.tarball_rows(tmp_path)] == ["a", "b", "c", "d", "e", "g"]
