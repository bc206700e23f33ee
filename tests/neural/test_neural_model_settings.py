"""A model's `threads` and `gpu_layers` (models.toml) reach llama.cpp: the model parameters it
is loaded with and every context made for it (greedy, beam, NLL and the pipeline's shared
greedy pool); the caller's options win over the entry's."""

import pytest

llama_cpp = pytest.importorskip("llama_cpp")

from karukan_engine.conversion.model_slot import ModelSlot  # noqa: E402
from karukan_engine.neural.model import ModelOptions  # noqa: E402
from karukan_engine.neural.registry import load_model_by_id_or_path, parse_registry  # noqa: E402
from neural_support import tiny_model_dir  # noqa: E402


@pytest.fixture
def seen(monkeypatch):
    """What llama.cpp was asked for: model params' n_gpu_layers, contexts' thread counts."""
    record = {"gpu_layers": [], "threads": [], "contexts": []}
    load, init = llama_cpp.llama_model_load_from_file, llama_cpp.llama_init_from_model

    def spy_load(path, params):
        record["gpu_layers"].append(params.n_gpu_layers)
        return load(path, params)

    def spy_init(model, params):
        record["threads"].append((params.n_threads, params.n_threads_batch))
        ctx = init(model, params)
        record["contexts"].append(ctx)
        return ctx

    monkeypatch.setattr(llama_cpp, "llama_model_load_from_file", spy_load)
    monkeypatch.setattr(llama_cpp, "llama_init_from_model", spy_init)
    return record


def _registry(tmp_path):
    return parse_registry(f'[models.tiny]\npath = "{tiny_model_dir("llama")}"\nthreads = 3\ngpu_layers = 7\n', tmp_path)


def test_threads_and_gpu_layers_of_the_entry_reach_llama_cpp(tmp_path, seen):
    model = load_model_by_id_or_path("tiny", registry=_registry(tmp_path))
    slot = ModelSlot(model, "tiny")
    try:
        assert seen["gpu_layers"] == [7]
        assert (model.options.n_threads, model.options.gpu_layers) == (3, 7)
        model.greedy("かんじ", max_new=2)
        model.beam("かんじ", beam=2, max_new=2)
        model.score("かんじ", "", "漢字")
        slot.greedy("かんじ", max_new=2)
        assert len(seen["threads"]) >= 4 and set(seen["threads"]) == {(3, 3)}
        # and llama.cpp runs them with that many
        assert {llama_cpp.llama_n_threads(ctx) for ctx in seen["contexts"]} == {3}
        assert {llama_cpp.llama_n_threads_batch(ctx) for ctx in seen["contexts"]} == {3}
    finally:
        slot.close()


def test_the_callers_options_win(tmp_path, seen):
    with load_model_by_id_or_path("tiny", ModelOptions(n_threads=1, gpu_layers=0), _registry(tmp_path)) as model:
        model.greedy("かんじ", max_new=2)
    assert seen["gpu_layers"] == [0] and set(seen["threads"]) == {(1, 1)}


def test_without_settings_the_defaults_apply(seen):
    from karukan_engine.neural.model import load_model
    from karukan_engine.neural.threads import AUTO_THREADS, default_threads

    with load_model(tiny_model_dir("llama")) as model:
        model.greedy("かんじ", max_new=2)
    # no thread count set: each context follows the free cores, up to default_threads()
    assert model.options.n_threads == AUTO_THREADS
    assert seen["gpu_layers"] == [0] and seen["threads"]
    assert all(1 <= n == batch <= default_threads() for n, batch in seen["threads"])
