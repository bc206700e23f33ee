"""models.toml and model resolution (no llama.cpp needed)."""

from pathlib import Path

import pytest

from karukan_engine.neural.errors import DownloadError, ModelNotFoundError, NeuralError, UnknownModelError
from karukan_engine.neural.registry import default_registry_path, load_registry, parse_registry, resolve_model

JINEN = ["jinen-v1-xsmall-q5", "jinen-v1-small-q5", "jinen-v1.1-beta-q5", "jinen-v2-xsmall-q5", "jinen-v2-small-q5"]
# (id, repository, file, architecture) as published
PUBLISHED = [
    ("jinen-v1-xsmall-q5", "togatogah/jinen-v1-xsmall.gguf", "jinen-v1-xsmall-Q5_K_M.gguf", "gpt2"),
    ("jinen-v1-small-q5", "togatogah/jinen-v1-small.gguf", "jinen-v1-small-Q5_K_M.gguf", "gpt2"),
    ("jinen-v1.1-beta-q5", "togatogah/jinen-v1.1-beta.gguf", "jinen-v1.1-beta-Q5_K_M.gguf", "qwen3"),
    ("jinen-v2-xsmall-q5", "togatogah/jinen-v2-xsmall.gguf", "jinen-v2-xsmall-Q5_K_M.gguf", "qwen3"),
    ("jinen-v2-small-q5", "togatogah/jinen-v2-small.gguf", "jinen-v2-small-Q5_K_M.gguf", "qwen3"),
    ("zenz-v3_1-small-q5", "Miwa-Keita/zenz-v3.1-small-gguf", "ggml-model-Q5_K_M.gguf", "gpt2"),
    ("zenz-v3_1-xsmall-q5", "Miwa-Keita/zenz-v3.1-xsmall-gguf", "ggml-model-Q5_K_M.gguf", "gpt2"),
]


def test_repository_registry_lists_the_models():
    registry = load_registry(default_registry_path())
    assert registry.source is not None and registry.source.name == "models.toml"
    for model_id in JINEN:
        entry = registry.get(model_id)
        assert entry.source_kind == "hub" and entry.file.endswith("Q5_K_M.gguf")
        assert entry.repo.startswith("togatogah/") and entry.tokenizer == "tokenizer.json"
    assert any(e.prompt == "zenz-v3" and e.kv_overrides for e in registry.entries.values())
    bundled = registry.get(registry.default_id)
    assert bundled.source_kind == "package" and bundled.local_path().parts[-2:] == ("data", "model")


@pytest.mark.parametrize("model_id, repo, file, arch", PUBLISHED)
def test_entries_name_the_published_files_and_their_tokenizer(model_id, repo, file, arch):
    entry = load_registry(default_registry_path()).get(model_id)
    assert (entry.repo, entry.file, entry.arch) == (repo, file, arch)
    if model_id.startswith("jinen"):  # tokenizer.json from the GGUF's own repository
        assert entry.tokenizer == "tokenizer.json" and entry.tokenizer_repo is None
        assert entry.tokenizer_source == f"{repo}/tokenizer.json"
    else:  # zenz: the GGUF's vocabulary (the 6,000-symbol tokenizer)
        assert entry.tokenizer == "gguf" and entry.n_vocab == 6000
        assert entry.tokenizer_source == "the GGUF's own vocabulary"


def test_bad_entries_are_reported():
    with pytest.raises(NeuralError, match="exactly one"):
        parse_registry('[models.x]\nrepo = "a/b"\n', Path("."))
    with pytest.raises(NeuralError, match="exactly one"):
        parse_registry('[models.x]\nrepo = "a/b"\nfile = "m.gguf"\npath = "m.gguf"\n', Path("."))
    with pytest.raises(NeuralError, match="tokenizer"):
        parse_registry('[models.x]\npath = "m.gguf"\ntokenizer = "sentencepiece"\n', Path("."))
    with pytest.raises(NeuralError, match="default"):
        parse_registry('default = "y"\n[models.x]\npath = "m.gguf"\n', Path("."))
    with pytest.raises(NeuralError, match="TOML"):
        parse_registry("[models.x\n", Path("."))
    with pytest.raises(NeuralError, match="n_vocab"):
        parse_registry('[models.x]\npath = "m.gguf"\nn_vocab = "6000"\n', Path("."))
    with pytest.raises(NeuralError, match="n_vocab"):
        parse_registry('[models.x]\npath = "m.gguf"\nn_vocab = 0\n', Path("."))
    with pytest.raises(NeuralError, match="tokenizer_repo"):
        parse_registry('[models.x]\npath = "m.gguf"\ntokenizer_repo = "a/b"\n', Path("."))


def test_resolve_paths_and_ids(tmp_path):
    model_dir = tmp_path / "mine"
    model_dir.mkdir()
    (model_dir / "m.gguf").write_bytes(b"GGUF")
    (model_dir / "tokenizer.json").write_text("{}")
    registry = parse_registry(
        '[models.local]\npath = "mine"\n[models.bare]\npath = "mine/m.gguf"\ntokenizer = "gguf"\n'
        '[models.gone]\npath = "elsewhere"\n[models.hub]\nrepo = "nobody/not-a-real-repo-4242"\nfile = "x.gguf"\n',
        tmp_path,
    )
    local = resolve_model("local", registry)
    assert local.gguf == model_dir / "m.gguf" and local.tokenizer == model_dir / "tokenizer.json"
    assert resolve_model("bare", registry).tokenizer is None
    by_path = resolve_model(str(model_dir), registry)
    assert by_path.gguf == model_dir / "m.gguf" and by_path.tokenizer is not None
    with pytest.raises(ModelNotFoundError):
        resolve_model("gone", registry)
    with pytest.raises(UnknownModelError):
        resolve_model("no-such-model", registry)
    with pytest.raises(ModelNotFoundError):
        resolve_model(str(tmp_path / "missing.gguf"), registry)
    with pytest.raises(DownloadError, match="karukan model download hub"):
        resolve_model("hub", registry)  # never downloads implicitly
    with pytest.raises(UnknownModelError):
        resolve_model(None, registry)  # no default


def test_missing_registry_file_gives_an_empty_registry(tmp_path):
    assert load_registry(tmp_path / "none.toml").entries == {}


def test_model_cli_usage_and_list(capsys):
    from karukan_engine.cli import main

    assert main(["model"]) == 2
    assert main(["model", "download", "no-such-model"]) == 2
    assert main(["model", "list"]) == 0
    out = capsys.readouterr().out
    assert "*karukan-bundled" in out and "jinen-v2-small-q5" in out


def test_registry_ships_with_the_package(monkeypatch):
    """The package's data/models.toml (package data, so a wheel carries a copy) is the root file."""
    monkeypatch.delenv("KARUKAN_MODELS_TOML", raising=False)
    repo_root = Path(__file__).resolve().parents[2]
    packaged = repo_root / "karukan_engine" / "data" / "models.toml"
    assert packaged.exists() and packaged.resolve() == (repo_root / "models.toml").resolve()
    assert default_registry_path() == (repo_root / "models.toml").resolve()


@pytest.mark.parametrize("damage", ["fifo", "directory", "deep", "not-utf8", "huge"])
def test_a_damaged_registry_file_is_refused_with_one_line_and_never_blocks(tmp_path, damage):
    import os
    import threading

    from karukan_engine.neural.errors import NeuralError

    path = tmp_path / "models.toml"
    if damage == "fifo":
        os.mkfifo(path)   # nothing ever writes: a blocking read would hang
    elif damage == "directory":
        path.mkdir()
    elif damage == "deep":
        path.write_text("x = " + "[" * 50_000 + "]" * 50_000 + "\n")
    elif damage == "not-utf8":
        path.write_bytes(b"default = \"\xff\"\n")
    else:
        path.write_bytes(b"#" * (5 << 20))
    outcome = []

    def load():
        try:
            load_registry(path)
            outcome.append("loaded")
        except NeuralError as exc:
            outcome.append(str(exc))

    worker = threading.Thread(target=load, daemon=True)
    worker.start()
    worker.join(30)
    assert outcome and outcome[0].startswith("models.toml") and "\n" not in outcome[0]


def test_the_prompt_field_chooses_the_family_and_its_settings():
    registry = parse_registry(
        '[models.z]\npath = "m.gguf"\nprompt = "zenz-v3"\n'
        '[models.j]\npath = "m.gguf"\ncontext_chars = 4\nthreads = 3\ngpu_layers = 99\n', Path("."))
    zenz, jinen = registry.get("z"), registry.get("j")
    assert (zenz.family.name, zenz.family.context_chars, zenz.family.context_mark_always) == ("zenz-v3", 40, False)
    assert (jinen.family.name, jinen.family.context_chars, jinen.family.nfkc) == ("jinen", 4, True)
    assert (jinen.threads, jinen.gpu_layers, zenz.threads, zenz.gpu_layers) == (3, 99, None, None)
    shipped = load_registry(default_registry_path())
    assert shipped.get("zenz-v3_1-small-q5").family.name == "zenz-v3"
    assert shipped.get("jinen-v2-xsmall-q5").family.context_chars == 10
    assert shipped.get("karukan-bundled").family.context_chars == 20  # what it was trained with


@pytest.mark.parametrize("field, value", [("context_chars", "-1"), ("threads", "0"), ("gpu_layers", "-2"),
                                          ("threads", '"4"'), ("gpu_layers", "true"), ("prompt", '"gpt"')])
def test_bad_model_settings_are_reported(field, value):
    with pytest.raises(NeuralError, match=field):
        parse_registry(f'[models.x]\npath = "m.gguf"\n{field} = {value}\n', Path("."))


def test_the_callers_options_win_over_the_entrys():
    from karukan_engine.neural.model import ModelOptions
    from karukan_engine.neural.registry import entry_options

    entry = parse_registry('[models.x]\npath = "m.gguf"\nprompt = "zenz-v3"\ncontext_chars = 7\nthreads = 3\n'
                           'gpu_layers = 5\n', Path(".")).get("x")
    filled = entry_options(entry, ModelOptions())
    assert (filled.prompt, filled.max_context_chars, filled.n_threads, filled.gpu_layers) == ("zenz-v3", 7, 3, 5)
    mine = entry_options(entry, ModelOptions(n_threads=1, gpu_layers=0, max_context_chars=2, prompt="jinen"))
    assert (mine.prompt, mine.max_context_chars, mine.n_threads, mine.gpu_layers) == ("jinen", 2, 1, 0)


def test_sizes_are_in_mib_as_the_files_are():
    registry = load_registry(default_registry_path())
    assert registry.get("jinen-v2-xsmall-q5").size_mib == 26.95  # the model card writes "28 MB"
    assert registry.get("jinen-v2-small-q5").size_mib == 77.36
    assert registry.get("jinen-v1-xsmall-q5").size_mib == 29.73  # 31,178,432 bytes
