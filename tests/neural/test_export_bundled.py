"""The shipped model: present in the package, loadable by the runtime, vocabularies consistent.

Needs only the `neural` extra (llama-cpp-python, tokenizers), not torch.
"""

from __future__ import annotations

import json

import pytest

from karukan_engine.training.paths import PACKAGE_MODEL_DIR

MODEL_NAME = "karukan-bundled"


def test_bundled_model_files_are_in_the_package():
    assert (PACKAGE_MODEL_DIR / f"{MODEL_NAME}.gguf").is_file()
    assert (PACKAGE_MODEL_DIR / "tokenizer.json").is_file()
    assert (PACKAGE_MODEL_DIR / "NOTICE.md").is_file()
    assert sorted(p.name for p in PACKAGE_MODEL_DIR.glob("*.gguf")) == [f"{MODEL_NAME}.gguf"]
    assert (PACKAGE_MODEL_DIR / f"{MODEL_NAME}.gguf").stat().st_size <= 30 * 2**20


def test_bundled_model_loads_and_converts():
    pytest.importorskip("llama_cpp", reason="llama-cpp-python (the `neural` extra) is not installed")
    from karukan_engine.neural.model import ModelOptions, load_model

    with load_model(PACKAGE_MODEL_DIR, ModelOptions(n_threads=1)) as model:
        assert model.n_ctx_train == 128
        greedy = model.greedy("かいぎ")
        assert greedy.finished and greedy.text
        beams = model.beam("かいぎ", beam=3)
        assert 1 <= len(beams) <= 3 and all(b.text for b in beams)


def test_gguf_vocabulary_matches_tokenizer_json():
    gguf = pytest.importorskip("gguf", reason="gguf (the `neural` extra) is not installed")
    reader = gguf.GGUFReader(str(PACKAGE_MODEL_DIR / f"{MODEL_NAME}.gguf"))
    field = reader.fields["tokenizer.ggml.tokens"]
    tokens = [bytes(field.parts[i]).decode("utf-8") for i in field.data]
    vocab = json.loads((PACKAGE_MODEL_DIR / "tokenizer.json").read_text(encoding="utf-8"))["model"]["vocab"]
    assert {token: i for i, token in enumerate(tokens)} == vocab
    assert tokens[4:7] == ["\uee02", "\uee00", "\uee01"]


def test_bundled_model_declares_its_licence():
    gguf = pytest.importorskip("gguf", reason="gguf (the `neural` extra) is not installed")
    reader = gguf.GGUFReader(str(PACKAGE_MODEL_DIR / f"{MODEL_NAME}.gguf"))
    field = reader.fields["general.license"]
    assert bytes(field.parts[field.data[0]]).decode("utf-8") == "CC-BY-SA-4.0"
    assert "CC BY-SA 4.0" in (PACKAGE_MODEL_DIR / "NOTICE.md").read_text(encoding="utf-8")
