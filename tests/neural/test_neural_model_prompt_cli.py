"""`karukan model prompt`: the exact prompt text and tokens a model gets. On a zenz mimic there
is no U+EE02 before an empty context and a full-width space is the U+3000 token (567); on a
jinen mimic U+EE02 is always there and the context is NFKC."""

import json
from pathlib import Path

import pytest

pytest.importorskip("llama_cpp")

from karukan_engine.cli import main  # noqa: E402
from karukan_testing import mimic  # noqa: E402

ZENZ_TOKENIZER = Path(__file__).resolve().parents[1] / "fixtures" / "zenz-char-tokenizer" / "tokenizer.json"
TINY = dict(n_layer=1, n_embd=128, n_head=4, n_ctx_train=256)
ZENZ_SPACE = 567  # U+3000 in the zenz vocabulary


@pytest.fixture(scope="module")
def mimics(tmp_path_factory):
    root = tmp_path_factory.mktemp("prompt-cli")
    return {kind: mimic.build(mimic.small(name, **TINY), root / kind, ZENZ_TOKENIZER, n_threads=1).parent
            for kind, name in (("zenz", "zenz-v3-xsmall"), ("jinen-v1", "jinen-v1-xsmall"))}


def _json(capsys, *args):
    assert main(["model", "prompt", "--json", *args]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    return json.loads(out)


def test_zenz_gets_no_context_mark_before_an_empty_context(mimics, capsys):
    view = _json(capsys, "--model", str(mimics["zenz"]), "きょう")
    assert view["family"] == "zenz-v3" and view["context_chars"] == 40 and view["max_new_tokens"] == 50
    assert view["text"] == "\uee00キョウ\uee01" and "\uee02" not in view["text"]
    assert view["ids"] == [172, 120, 202, 436, 504, 400, 172, 120, 203]
    assert [t["id"] for t in view["tokens"]] == view["ids"]
    assert [t["text"] for t in view["tokens"][:4]] == ["<EE>", "<B8>", "<80>", "キ"]  # a mark in bytes


def test_zenz_gets_a_full_width_space_as_its_own_token(mimics, capsys):
    view = _json(capsys, "--model", str(mimics["zenz"]), "--context", "今日は 晴れ\n、（笑）", "はれ")
    assert view["context"] == "今日は\u3000晴れ、（笑）"  # space to U+3000, newline dropped, no NFKC
    assert ZENZ_SPACE in view["ids"] and view["text"].startswith("\uee02今日は\u3000")


def test_jinen_keeps_the_context_mark_and_normalises(mimics, capsys):
    view = _json(capsys, "--model", str(mimics["jinen-v1"]), "--context", "（笑）", "きょう")
    assert view["family"] == "jinen" and view["context_chars"] == 10
    assert view["text"] == "\uee02(笑)\uee00キョウ\uee01"
    assert view["ids"][0] == 6 and view["ids"][-1] == 5  # single-token marks


def test_the_table_shows_marks_and_spaces_escaped(mimics, capsys):
    assert main(["model", "prompt", "--model", str(mimics["zenz"]), "--context", "今日は　", "はれ"]) == 0
    out = capsys.readouterr().out
    assert "text: \\uEE02今日は\\u3000\\uEE00ハレ\\uEE01" in out
    assert f"{ZENZ_SPACE:>6}" in out and "zenz-v3" in out
