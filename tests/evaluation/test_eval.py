"""Evaluation metrics, file formats, the dev sets and `karukan eval`."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from karukan_engine.cli import main
from karukan_engine.dictionary.system import DEFAULT_DIR
from karukan_engine.evaluation.metrics import EvalItem, Scores, char_error_rate, edit_distance, load_items

from tools import build_devsets  # noqa: E402

EVAL_DIR = DEFAULT_DIR.parent / "eval"
texts = st.text(alphabet="あいう亜伊ab", max_size=8)


@given(texts, texts, texts)
def test_edit_distance_is_a_metric(a, b, c):
    assert edit_distance(a, b) == edit_distance(b, a)
    assert (edit_distance(a, b) == 0) == (a == b)
    assert edit_distance(a, c) <= edit_distance(a, b) + edit_distance(b, c)
    assert abs(len(a) - len(b)) <= edit_distance(a, b) <= max(len(a), len(b))


def test_scores():
    scores = Scores()
    scores.add(EvalItem("きょう", ("今日",)), ["今日", "京"], 0.002)
    scores.add(EvalItem("いち", ("1", "一")), ["１", "1"], 0.004)      # right only after NFKC
    scores.add(EvalItem("かく", ("書く",)), ["核", "角"], 0.0)
    s = scores.summary()
    assert s["items"] == 3
    assert s["acc1_exact"] == pytest.approx(1 / 3)
    assert s["acc1_nfkc"] == pytest.approx(2 / 3)
    assert s["recall5"] == pytest.approx(2 / 3)
    assert s["mean_min_cer"] == pytest.approx((0 + 1 + 1) / 3)
    assert s["ms_per_item"] == pytest.approx(2.0)
    assert char_error_rate("核", "書く") == 1.0
    assert [m["reading"] for m in scores.misses] == ["いち", "かく"]


def test_load_tsv_and_jsonl(tmp_path):
    tsv = tmp_path / "a.tsv"
    tsv.write_text("# comment\nきょう\t今日\t京\n\nかく\t書く\n", encoding="utf-8")
    assert load_items(tsv) == [EvalItem("きょう", ("今日", "京")), EvalItem("かく", ("書く",))]
    jsonl = tmp_path / "a.jsonl"
    jsonl.write_text('{"reading": "かく", "outputs": ["書く"], "context": "字を"}\n'
                     '{"reading": "きょう", "output": "今日"}\n', encoding="utf-8")
    assert load_items(jsonl) == [EvalItem("かく", ("書く",), "字を"), EvalItem("きょう", ("今日",))]
    bad = tmp_path / "b.tsv"
    bad.write_text("onlyonefield\n", encoding="utf-8")
    with pytest.raises(ValueError):
        load_items(bad)


def test_devset_parsers():
    mozc = ("# status\tinput\toutput\tcommand\targument\tversion\n"
            "OK:\tきょう\t今日\tConversion Expected\t今日\t2.26\n"
            # A failed row's output is Mozc's error: the argument is the answer.
            "FAILED:\tあせをすいそうなので\t汗を水槽なので\tConversion Expected\t汗を吸いそうなので\t2.26\n"
            # These only constrain the first candidate (a substring, or the argument within N).
            "OK:\tきざな\tきざな\tConversion Expected 2\tキザな\t2.26\n"
            "OK:\tしょっぱいあじがした\tしょっぱい味がした\tConversion Not Match\t下\t2.26\n"
            "OK:\tでびあんを\tデビアンを\tConversion Match\tデビアン\t2.26\n")
    assert build_devsets.parse_mozc_evaluation(mozc) == [("きょう", "今日"), ("あせをすいそうなので", "汗を吸いそうなので")]
    anthy = ("|#comment|\n|かいぎの|しりょうを| |会議の|資料を|\n|かくことは| |~各個とは|\n"
             "|あ|い| |亜|\n")
    assert build_devsets.parse_anthy_corpus(anthy) == [("かいぎのしりょうを", "会議の資料を")]


def test_committed_devsets_are_well_formed():
    for name, at_least in (("mozc_evaluation.tsv", 150), ("anthy_corpus.tsv", 300)):
        items = load_items(EVAL_DIR / name)
        assert len(items) >= at_least and all(item.outputs for item in items)
    assert "Anthy" in (EVAL_DIR / "NOTICE.md").read_text()


@pytest.mark.skipif(not (DEFAULT_DIR / "meta.json").is_file(), reason="compiled dictionary not built")
def test_eval_cli(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    data = tmp_path / "set.tsv"
    data.write_text("きょうはいいてんきですね\t今日はいい天気ですね\nこうえんにいく\t講演に行く\n", encoding="utf-8")
    out = tmp_path / "r.json"
    assert main(["eval", "--no-model", str(data), "--json", str(out)]) == 0
    line = capsys.readouterr().out
    assert "Acc@1 50.0%" in line and "Recall@5 100.0%" in line
    report = json.loads(out.read_text())["sets"]["set.tsv"]
    assert report["items"] == 2 and report["misses"][0]["got"] == "公園に行く"
    assert main(["eval", "--no-model", str(tmp_path / "missing.tsv")]) == 2
