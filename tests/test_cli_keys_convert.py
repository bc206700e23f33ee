import json
import subprocess
import sys
from pathlib import Path

import pytest

from karukan_engine.cli import main
from karukan_engine.session.keys_cli import parse_keys

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def no_user_config(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    monkeypatch.delenv("KARUKAN_CONFIG", raising=False)


def run(argv, capsys, stdin=None, monkeypatch=None):
    if stdin is not None:
        import io

        monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def commit_lines(out: str) -> list[str]:
    return [line.split("commit: ", 1)[1] for line in out.splitlines() if line.startswith("  commit: ")]


@pytest.mark.parametrize("keys, committed", [
    ("konnnichiha<return>", "こんにちは"),
    ("kyoutoninaru<F7><return>", "キョウトニナル"),
    ("tokyo<F10><return>", "tokyo"),
])
def test_keys_done_when(keys, committed, capsys):
    code, out, _ = run(["keys", "--no-model", keys], capsys)
    assert code == 0 and commit_lines(out) == [committed]


def test_keys_output_format(capsys):
    code, out, _ = run(["keys", "--no-model", "kan<Left><space><Down><Escape><Escape><F1>"], capsys)
    assert code == 0
    blocks = out.split("key ")[1:]
    assert blocks[0] == "1: k\n  preedit: ｋ|\n"
    assert blocks[3] == "4: <Left>\n  preedit: か|ん\n"
    assert "preedit: [" in blocks[4] and "candidates: page 1/" in blocks[4] and "  > 1. " in blocks[4]
    assert "  > 2. " in blocks[5]
    assert blocks[7].startswith("8: <Escape>") and "preedit" not in blocks[7]
    assert blocks[8] == "9: <F1> (not handled)\n"


def test_keys_parsing():
    keys = list(parse_keys("aA<C-u><S-Left><return><space>\n<lone"))
    assert [k[0] for k in keys] == ["a", "A", "<C-u>", "<S-Left>", "<return>", "<space>", "<Return>",
                                    "<", "l", "o", "n", "e"]
    assert keys[1][2] == 1 and keys[2][2] == 4 and keys[4][1] == 0xFF0D


@pytest.mark.parametrize("argv", [["keys", "ka<NoSuchKey>"], ["convert"], ["convert", "-n", "0", "かな"],
                                  ["convert", "--jsonl", "かな"], ["convert", "  "]])
def test_bad_usage_exits_2(argv, capsys):
    code, out, err = run(argv, capsys)
    assert code == 2 and out == "" and err.startswith("karukan: ") and err.count("\n") == 1


def test_keys_bad_config_exits_2(tmp_path, capsys):
    bad = tmp_path / "c.toml"
    bad.write_text("[input]\nmode = 5\n", encoding="utf-8")
    code, _, err = run(["keys", "--config", str(bad), "a"], capsys)
    assert code == 2 and "input.mode" in err


def test_keys_live_flag(capsys):
    code, out, _ = run(["keys", "--no-model", "--live", "<C-S-l>"], capsys)
    assert code == 0 and "ライブ変換: オフ" in out


def preedits(out: str) -> list[str]:
    return [line.split("preedit: ", 1)[1] for line in out.splitlines() if line.startswith("  preedit: ")]


def test_keys_live_conversion_is_on_by_default(capsys):
    code, out, _ = run(["keys", "--no-model", "kyou"], capsys)
    assert code == 0 and preedits(out)[-1] != "きょう|"     # the conversion, not the reading
    code, out, _ = run(["keys", "--no-model", "--no-live", "kyou"], capsys)
    assert code == 0 and preedits(out)[-1] == "きょう|"
    code, out, _ = run(["keys", "--no-model", "--no-live", "<C-S-l>"], capsys)
    assert code == 0 and "ライブ変換: オン" in out


def test_convert_prints_candidates(capsys):
    code, out, _ = run(["convert", "--no-model", "-n", "3", "カナ"], capsys)
    lines = out.splitlines()
    assert code == 0 and 1 <= len(lines) <= 3 and len(set(lines)) == len(lines)
    assert "かな" in lines or "カナ" in lines or len(lines) == 3
    code, out2, _ = run(["convert", "--no-model", "-n", "3", "かな"], capsys)
    assert out2 == out                       # katakana and hiragana readings are the same
    code, out3, _ = run(["convert", "--no-model", "-n", "3", "ｶﾅ"], capsys)
    assert out3 == out


def test_convert_jsonl(capsys, monkeypatch):
    stdin = "\n".join([
        json.dumps({"id": "a", "reading": "かな", "n": 2}),
        "not json",
        json.dumps({"id": 2, "reading": 5}),
        json.dumps({"id": 3, "reading": "カナ", "context": 7}),
        json.dumps({"id": 4, "reading": "かな", "n": 0}),
        "[1, 2]",
        "",
        json.dumps({"id": {"x": 1}, "reading": "きょう", "context": "今日は"}),
    ]) + "\n"
    code, out, _ = run(["convert", "--jsonl", "--no-model", "-n", "4"], capsys, stdin, monkeypatch)
    answers = [json.loads(line) for line in out.splitlines()]
    assert code == 0 and len(answers) == 7
    assert answers[0]["id"] == "a" and 1 <= len(answers[0]["candidates"]) <= 2 and answers[0]["ms"] >= 0
    assert answers[1] == {"id": None, "error": answers[1]["error"]} and "JSON" in answers[1]["error"]
    assert answers[2]["id"] == 2 and "reading" in answers[2]["error"]
    assert answers[3]["id"] == 3 and "context" in answers[3]["error"]
    assert answers[4]["id"] == 4 and "n must" in answers[4]["error"]
    assert answers[5]["id"] is None and "object" in answers[5]["error"]
    assert answers[6]["id"] == {"x": 1} and 1 <= len(answers[6]["candidates"]) <= 4


def test_console_entry_point_runs_in_a_fresh_process(tmp_path):
    env = {"XDG_CONFIG_HOME": str(tmp_path), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    code = "import sys; from karukan_engine.cli import main; sys.exit(main(sys.argv[1:]))"
    proc = subprocess.run([sys.executable, "-c", code, "keys", "--no-model", "konnnichiha<Return>"],
                          capture_output=True, text=True, env=env, timeout=120, cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    assert commit_lines(proc.stdout) == ["こんにちは"]
    proc = subprocess.run([sys.executable, "-c", code, "keys", "<Bogus>"], capture_output=True, text=True,
                          env=env, timeout=120, cwd=REPO)
    assert proc.returncode == 2 and "unknown key" in proc.stderr
