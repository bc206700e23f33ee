"""`karukan convert --model ID`: a model the user named must load, or the command fails (exit 1,
one line on stderr); the default model may fall back to the dictionary with a warning."""

import logging

import pytest

from karukan_engine.cli import main

READING = "きょう"
REGISTRY = """
default = "missing-local"

[models.missing-local]
name = "a local model whose files are absent"
path = "no-such-dir"
tokenizer = "tokenizer.json"
prompt = "jinen"

[models.not-downloaded]
name = "a hub model that is not in the cache"
repo = "nobody/nothing.gguf"
file = "nothing.gguf"
tokenizer = "gguf"
prompt = "jinen"
"""


@pytest.fixture(autouse=True)
def isolated(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.delenv("KARUKAN_CONFIG", raising=False)
    # (not HF_HOME / HF_HUB_OFFLINE: huggingface_hub reads them once, at import; loading never
    # downloads, so an id no cache holds is "not downloaded" without touching the network)
    registry = tmp_path / "models.toml"
    registry.write_text(REGISTRY, encoding="utf-8")
    monkeypatch.setenv("KARUKAN_MODELS_TOML", str(registry))
    return tmp_path


def convert(argv, capsys):
    code = main(["convert", *argv, READING])
    out, err = capsys.readouterr()
    return code, out, err


def broken_gguf(directory):
    path = directory / "broken.gguf"
    path.write_bytes(b"GGUF" + b"\0" * 64)
    return str(path)


@pytest.mark.parametrize("model", ["no-such-model", "missing-local", "not-downloaded",
                                   "no-such-dir/model.gguf", "BROKEN"])
def test_a_named_model_that_cannot_load_is_an_error(model, isolated, capsys):
    if model == "BROKEN":
        model = broken_gguf(isolated)
    code, out, err = convert(["--model", model], capsys)
    assert code == 1 and out == ""
    assert err.startswith("karukan: error: ") and err.count("\n") == 1


def test_without_model_the_missing_default_falls_back_to_the_dictionary(capsys, caplog):
    caplog.set_level(logging.WARNING)
    code, out, err = convert([], capsys)
    assert code == 0 and out.splitlines()
    assert out == convert(["--no-model"], capsys)[1]
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert warnings and all(READING not in r.getMessage() for r in warnings)
    # the warning says what is wrong, not only the error's type
    assert any("no-such-dir" in r.getMessage() for r in warnings), [r.getMessage() for r in warnings]
