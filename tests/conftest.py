"""Suite-wide setup: no test writes into the real user's cache (model probe results), and
hypothesis judges no test by its speed."""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings

# The suite asserts no timings (benchmarks do), and CI machines are shared: a slow first draw
# (imports, a busy core) is no failure. A test that lists its own health checks replaces these.
settings.register_profile("karukan", deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("karukan")


def _private_xdg_dir(variable: str, tmp_path_factory):
    # Tests that set their own (or HOME, for the end-to-end runs) keep theirs.
    if variable in os.environ:
        yield
        return
    os.environ[variable] = str(tmp_path_factory.mktemp(variable.lower()))
    try:
        yield
    finally:
        os.environ.pop(variable, None)


@pytest.fixture(autouse=True, scope="session")
def _private_cache_dir(tmp_path_factory):
    yield from _private_xdg_dir("XDG_CACHE_HOME", tmp_path_factory)


@pytest.fixture(autouse=True, scope="session")
def _private_data_dir(tmp_path_factory):
    """The suite never reads or writes the developer's own learning history, user dictionary or
    rewriter choices (user_files.data_dir), also in the programs it starts."""
    yield from _private_xdg_dir("XDG_DATA_HOME", tmp_path_factory)


# Shared by the fused-pipeline tests (a test module that needs other ones defines its own).
@pytest.fixture(scope="module")
def system():
    """The compiled system dictionary (tests using it skip when it is not built)."""
    from karukan_engine.dictionary.system import SystemDictionary

    return SystemDictionary()


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    """A tiny random-weight GGUF model (karukan_testing.tiny_models), loaded through llama.cpp;
    modules using it skip first when llama-cpp-python is missing."""
    from karukan_engine.neural.model import load_model
    from karukan_testing.tiny_models import TinyModelSpec, write_model_dir

    loaded = load_model(write_model_dir(tmp_path_factory.mktemp("tiny"), TinyModelSpec(seed=3, eos_scale=2.0)))
    yield loaded
    loaded.close()
