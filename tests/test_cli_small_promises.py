"""Small promises of the CLI that did not hold (issue 29, item 6): `--jsonl` never writes what
is not JSON, and `model list` says "ready" only for a model that can be loaded."""

from __future__ import annotations

import io
import json

from karukan_engine.cli import main
from karukan_engine.conversion.convert_cli import serve_jsonl
from karukan_engine.conversion.plain import PlainConverter


def test_jsonl_answers_an_id_it_cannot_echo_as_json_with_an_error():
    lines = ['{"id": 1e400, "reading": "きょう"}', '{"id": -1e400, "reading": "きょう"}',
             '{"id": [1, 2e308], "reading": "きょう"}', '{"id": 7, "reading": "きょう"}']
    out = io.StringIO()
    serve_jsonl(PlainConverter(), io.StringIO("\n".join(lines) + "\n"), out, "", 1)
    answers = [json.loads(line, parse_constant=lambda name: (_ for _ in ()).throw(ValueError(name)))
               for line in out.getvalue().splitlines()]   # every line strict JSON: no Infinity
    assert [a["id"] for a in answers] == [None, None, None, 7]
    assert all(a["error"] == "id cannot be echoed back" for a in answers[:3])
    assert "candidates" in answers[3]


def test_model_list_says_absent_for_a_directory_without_a_gguf(tmp_path, monkeypatch, capsys):
    (tmp_path / "empty").mkdir()
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "m.gguf").write_bytes(b"GGUF")
    registry = tmp_path / "models.toml"
    registry.write_text('default = "empty"\n'
                        '[models.empty]\nname = "no gguf inside"\npath = "empty"\ntokenizer = "gguf"\nprompt = "jinen"\n'
                        '[models.full]\nname = "a gguf inside"\npath = "full"\ntokenizer = "gguf"\nprompt = "jinen"\n',
                        encoding="utf-8")
    monkeypatch.setenv("KARUKAN_MODELS_TOML", str(registry))
    assert main(["model", "list"]) == 0
    rows = {line.split()[0].lstrip("*"): line.split()[1] for line in capsys.readouterr().out.splitlines()[:-1]}
    assert rows == {"empty": "absent", "full": "ready"}
