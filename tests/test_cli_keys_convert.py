import json
import subprocess
import sys
from pathlib import Path

import pytest

from karukan_engine.cli import main
from karukan_engine.dictionary.system import DEFAULT_DIR
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


def test_keys_output_format(capsys, tmp_path):
    config = tmp_path / "no-suggestions.toml"   # the dictionary's completions would vary the blocks
    config.write_text("[suggest]\nenabled = false\n", encoding="utf-8")
    code, out, _ = run(["keys", "--no-model", "--config", str(config),
                        "kan<Left><space><Down><Escape><Escape><F1>"], capsys)
    assert code == 0
    blocks = out.split("key ")[1:]
    assert blocks[0] == "1: k\n  preedit: ｋ|\n"
    assert blocks[3] == "4: <Left>\n  preedit: か|ん\n"
    assert "preedit: [" in blocks[4] and "candidates: page 1/" in blocks[4] and "  > 1. " in blocks[4]
    assert "  > 2. " in blocks[5]
    assert blocks[7].startswith("8: <Escape>") and "preedit" not in blocks[7]
    assert blocks[8] == "9: <F1> (not handled)\n"


@pytest.mark.skipif(not (DEFAULT_DIR / "meta.json").is_file(), reason="compiled dictionary not built")
def test_keys_shows_suggestions_and_tab_return_commits_one(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))   # what it learns stays here
    code, out, _ = run(["keys", "--no-model", "--no-live", "arigato<Tab><Return>"], capsys)
    assert code == 0
    blocks = out.split("key ")[1:]
    typed = blocks[6].splitlines()
    assert typed[:2] == ["7: o", "  preedit: ありがと|"] and typed[2] == "  suggestions:"
    first = typed[3]
    assert first.startswith("    1. ") and "> " not in first
    chosen = first.split("1. ", 1)[1]
    assert f"  > 1. {chosen}" in blocks[7] and f"  preedit: [{chosen}]" in blocks[7]
    assert commit_lines(out) == [chosen]


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


def test_keys_bad_config_value_is_reported_and_typing_goes_on(tmp_path, capsys):
    bad = tmp_path / "c.toml"
    bad.write_text("[input]\nmode = 5\n", encoding="utf-8")
    code, out, err = run(["keys", "--no-model", "--config", str(bad), "a"], capsys)
    assert code == 0 and "input.mode" in err and err.count("\n") == 1 and "preedit: あ" in out
    code, _, err = run(["keys", "--config", str(tmp_path / "none.toml"), "a"], capsys)
    assert code == 2 and "no such config" in err          # a missing explicit file is bad usage


@pytest.mark.parametrize("content", [
    "a = " + "[" * 50000 + "]" * 50000 + "\n",     # RecursionError in the TOML parser
    "[session\n",
    "\udcff",                                       # not UTF-8 (written with surrogateescape)
    "dir", "fifo",
])
def test_keys_types_with_any_damaged_config(tmp_path, capsys, content):
    import os

    path = tmp_path / "c.toml"
    if content == "dir":
        path.mkdir()
    elif content == "fifo":
        os.mkfifo(path)
    else:
        path.write_text(content, encoding="utf-8", errors="surrogateescape")
    code, out, err = run(["keys", "--no-model", "--config", str(path), "kanji<F6><return>"], capsys)
    assert code == 0 and commit_lines(out) == ["かんじ"]
    assert err.count("\n") == 1 and "learning off" in err   # one clear message


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


def test_convert_jsonl_answers_every_bad_line_and_goes_on(capsys, monkeypatch):
    # Issue 17 item 9: a deeply nested line ended the run (only syntax errors were caught).
    from karukan_engine.conversion import convert_cli

    monkeypatch.setattr(convert_cli, "MAX_LINE_CHARS", 300000)
    lines = [
        "[" * 100000 + "]" * 100000,                                     # RecursionError
        '{"id": 1, "reading": "かな", "context": ' + "[" * 100000 + "]" * 100000 + "}",
        '{"id": NaN, "reading": "かな"}',                                 # NaN cannot be echoed
        '{"id": 3, "reading": "' + "か" * (convert_cli.MAX_READING_CHARS + 1) + '"}',
        '{"id": 4, "reading": "\\ud800"}',                             # a lone surrogate
        '{"id": 5, "reading": "か", "context": "' + "x" * (convert_cli.MAX_CONTEXT_CHARS + 1) + '"}',
        "x" * 400000,                                                    # over the line cap
        '{"id": 7, "reading": "' + "か" * 500 + '"',                    # truncated
        json.dumps({"id": 8, "reading": "かな", "n": 2}),
    ]
    code, out, _ = run(["convert", "--jsonl", "--no-model"], capsys, "\n".join(lines) + "\n", monkeypatch)
    answers = [json.loads(line) for line in out.splitlines()]
    assert code == 0 and len(answers) == len(lines)
    assert all("error" in a for a in answers[:-1]) and "candidates" in answers[-1]
    assert "nested" in answers[0]["error"] and "nested" in answers[1]["error"]
    assert answers[3] == {"id": 3, "error": answers[3]["error"]} and "longer than" in answers[3]["error"]
    assert answers[4]["id"] == 4 and "surrogate" in answers[4]["error"]
    assert answers[5]["id"] == 5 and "context" in answers[5]["error"]
    assert "line longer" in answers[6]["error"] and answers[8]["id"] == 8


def test_convert_refuses_an_overlong_reading_with_a_clear_error(capsys):
    from karukan_engine.conversion.convert_cli import MAX_READING_CHARS

    code, out, err = run(["convert", "--no-model", "か" * (MAX_READING_CHARS + 1)], capsys)
    assert code == 2 and out == "" and f"longer than {MAX_READING_CHARS}" in err and err.count("\n") == 1
    code, out, _ = run(["convert", "--no-model", "-n", "1", "か" * MAX_READING_CHARS], capsys)
    assert code == 0 and len(out.splitlines()) == 1


def test_jsonl_bytes_that_are_not_utf8_get_an_error(tmp_path):
    env = {"XDG_CONFIG_HOME": str(tmp_path), "XDG_DATA_HOME": str(tmp_path), "PATH": "/usr/bin:/bin",
           "HOME": str(tmp_path), "PYTHONPATH": str(REPO)}
    data = b'{"id": 1, "reading": "\xff\xfe"}\n' + json.dumps({"id": 2, "reading": "かな"}).encode() + b"\n"
    result = subprocess.run([sys.executable, "-m", "karukan_engine.cli", "convert", "--jsonl", "--no-model"],
                            input=data, capture_output=True, timeout=120, env=env, cwd=str(REPO))
    answers = [json.loads(line) for line in result.stdout.decode().splitlines()]
    assert result.returncode == 0, result.stderr
    assert answers[0]["id"] == 1 and "error" in answers[0] and answers[1]["id"] == 2 and answers[1]["candidates"]


from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(alphabet="ab\r", max_size=12), max_size=8), st.integers(1, 6), st.booleans())
def test_bounded_lines_yield_short_lines_and_flag_long_ones(lines, limit, final_newline):
    import io

    from karukan_engine.conversion.convert_cli import _bounded_lines

    text = "\n".join(lines) + ("\n" if final_newline and lines else "")
    got = list(_bounded_lines(io.StringIO(text), limit))
    expected = [line for line in io.StringIO(text)]
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        fits = len(e) <= limit + e.endswith("\n")   # the newline may come on top of the limit
        assert g == e if fits else g is None


def test_keys_says_a_bad_keymap_once(tmp_path):
    keymap = tmp_path / "keymap.toml"
    keymap.write_text('[direct]\n"No_Such_Key" = "toggle_ime"\n', encoding="utf-8")
    config = tmp_path / "config.toml"
    config.write_text(f'[session]\nkeymap = "{keymap}"\n', encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "karukan_engine.cli", "keys", "--no-model", "--config",
                           str(config), "a<Return>"], capture_output=True, text=True, cwd=REPO,
                          env={"XDG_CONFIG_HOME": str(tmp_path), "XDG_DATA_HOME": str(tmp_path),
                               "PATH": "/usr/bin:/bin"}, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("No_Such_Key") == 1, done.stderr
    assert "commit: あ" in done.stdout
