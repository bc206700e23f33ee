"""`karukan convert -n` and `karukan keys` show the rewriters' candidates with their annotations;
convert's plain output stays one surface a line."""

from __future__ import annotations

import io
import json
import sys
from datetime import date

from karukan_engine.cli import main
from karukan_engine.conversion.convert_cli import convert_one, serve_jsonl
from karukan_engine.rewriters import RewriterStage
from karukan_engine.rewriters.choice_memory import ChoiceMemory
from rewriter_support import NOON_AFTER, SEGMENTS, WORDS, Clock
from session_fakes import ScriptedConverter


def run(argv, capsys, stdin=None, monkeypatch=None):
    if stdin is not None:
        monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
    code = main(argv)
    out, _ = capsys.readouterr()
    return code, out


def test_convert_one_places_the_rewriters_within_n():
    stage = RewriterStage(clock=Clock(), memory=ChoiceMemory())
    found = convert_one(ScriptedConverter(WORDS, SEGMENTS), "きょう", "", 3, stage)
    assert [c.surface for c in found] == ["今日", "2026/12/02", "2026-12-02"]
    assert found[1].annotation == "今日の日付"


def test_jsonl_answers_carry_annotations_only_when_asked():
    stage = RewriterStage(clock=Clock(NOON_AFTER), memory=ChoiceMemory())
    line = json.dumps({"id": 1, "reading": "ねこ", "n": 12}) + "\n"
    plain, annotated = io.StringIO(), io.StringIO()
    serve_jsonl(ScriptedConverter(WORDS, SEGMENTS), io.StringIO(line), plain, "", 5, stage)
    serve_jsonl(ScriptedConverter(WORDS, SEGMENTS), io.StringIO(line), annotated, "", 5, stage, annotations=True)
    first, second = json.loads(plain.getvalue()), json.loads(annotated.getvalue())
    assert list(first) == ["id", "candidates", "ms"] and "🐱" in first["candidates"]
    notes = dict(zip(second["candidates"], second["annotations"]))
    assert notes["🐱"] == "絵文字" and len(second["annotations"]) == len(second["candidates"])


def test_convert_cli_lists_the_cat_emoji_and_todays_date(capsys):
    code, out = run(["convert", "--no-model", "-n", "12", "ねこ"], capsys)
    assert code == 0 and "🐱" in out.splitlines() and "\t" not in out
    code, out = run(["convert", "--no-model", "-n", "12", "--annotations", "ねこ"], capsys)
    rows = [line.split("\t") for line in out.splitlines()]
    assert all(len(row) == 2 for row in rows) and ["🐱", "絵文字"] in rows
    code, out = run(["convert", "--no-model", "-n", "4", "きょう"], capsys)
    today = date.today()
    lines = out.splitlines()
    assert lines[0] != f"{today:%Y/%m/%d}" and f"{today:%Y/%m/%d}" in lines


def test_keys_cli_prints_the_annotations(capsys):
    code, out = run(["keys", "--no-model", "--no-live", "100 "], capsys)
    assert code == 0 and "壱百  大字" in out
