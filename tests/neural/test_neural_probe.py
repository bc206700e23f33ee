"""Model files are proven in a child process before the engine loads them: GGUFs that make
llama.cpp abort (block_count 0 / 0xFFFFFFFF at load, a NaN layer-norm epsilon at the first
decode) cost only the child; the CLI fails with one line and the service stays on the dictionary.

Every crash here happens in a child process, never in the test process.
"""

from __future__ import annotations

import asyncio
import json
import math
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ime_frontend.flood import quiet_typist
from karukan_testing.headless import HeadlessDesktop
from karukan_engine.neural import probe
from karukan_engine.neural.errors import ModelLoadError
from karukan_testing.tiny_models import TinyModelSpec, write_model_dir

PACKAGE_ROOT = Path(__file__).resolve().parents[2]


def _patched(source: Path, target: Path, key: str, fmt: str, value) -> Path:
    """A copy of the GGUF `source` with the scalar metadata value of `key` replaced."""
    data = source.read_bytes()
    raw = key.encode()
    at = data.index(struct.pack("<Q", len(raw)) + raw) + 8 + len(raw) + 4   # past the value type
    target.write_bytes(data[:at] + struct.pack(fmt, value) + data[at + struct.calcsize(fmt):])
    return target


@pytest.fixture(scope="module")
def good_gguf(tmp_path_factory) -> Path:
    directory = write_model_dir(tmp_path_factory.mktemp("good"), TinyModelSpec(tokenizer_json=False))
    return directory / "tiny.gguf"


MALFORMED = {
    "no-layers": ("llama.block_count", "<I", 0),
    "too-many-layers": ("llama.block_count", "<I", 0xFFFFFFFF),
    "nan-epsilon": ("llama.attention.layer_norm_rms_epsilon", "<f", math.nan),
}


@pytest.fixture(params=sorted(MALFORMED))
def bad_gguf(request, good_gguf, tmp_path) -> Path:
    key, fmt, value = MALFORMED[request.param]
    return _patched(good_gguf, tmp_path / f"{request.param}.gguf", key, fmt, value)


def test_a_good_model_is_proven_once_then_taken_from_the_cache(good_gguf, tmp_path, monkeypatch):
    assert probe.prove_model(good_gguf, directory=tmp_path).ok
    assert len(list(tmp_path.glob("*.json"))) == 1

    def no_child(*_args, **_kwargs):
        raise AssertionError("a proven file was probed again")

    monkeypatch.setattr(probe, "run_child", no_child)
    assert probe.prove_model(good_gguf, directory=tmp_path).ok


def test_a_model_that_aborts_llama_cpp_is_refused_with_one_line(bad_gguf, tmp_path, monkeypatch):
    with pytest.raises(ModelLoadError) as info:
        probe.prove_model(bad_gguf, directory=tmp_path)
    message = str(info.value)
    assert bad_gguf.name in message and "SIGABRT" in message and "GGML_ASSERT" in message
    assert "\n" not in message and "/" not in message.split("(", 1)[1]   # no build directory
    # The same bytes crash the same way: the verdict is cached, no second child.
    monkeypatch.setattr(probe, "run_child", lambda *a, **k: (_ for _ in ()).throw(AssertionError("re-probed")))
    with pytest.raises(ModelLoadError) as again:
        probe.prove_model(bad_gguf, directory=tmp_path)
    assert str(again.value) == message


def test_overrides_are_part_of_the_proof(good_gguf, tmp_path):
    # block_count is fine in the file; an override that sets it to 0 crashes the child instead.
    assert probe.prove_model(good_gguf, directory=tmp_path).ok
    with pytest.raises(ModelLoadError):
        probe.prove_model(good_gguf, {"llama.block_count": 0}, directory=tmp_path)
    assert len(list(tmp_path.glob("*.json"))) == 2


def test_a_clean_error_in_the_child_is_left_to_the_callers_load(tmp_path):
    text = tmp_path / "text.gguf"
    text.write_text("not a model")
    verdict = probe.prove_model(text, directory=tmp_path / "cache")
    assert not verdict.ok and verdict.message == ""
    assert not (tmp_path / "cache").exists()   # nothing cached: the file may be fixed


def test_a_timeout_or_a_kill_is_not_cached(good_gguf, tmp_path, monkeypatch):
    monkeypatch.setattr(probe, "run_child", lambda *a, **k: (probe.Verdict(False, "tiny.gguf: timed out"), False))
    with pytest.raises(ModelLoadError):
        probe.prove_model(good_gguf, directory=tmp_path)
    assert list(tmp_path.glob("*.json")) == []


def test_a_damaged_cache_entry_is_proven_again(good_gguf, tmp_path):
    probe.prove_model(good_gguf, directory=tmp_path)
    (entry,) = tmp_path.glob("*.json")
    entry.write_text("{not json")
    assert probe.prove_model(good_gguf, directory=tmp_path).ok
    assert json.loads(entry.read_text())["ok"] is True


@settings(max_examples=60, deadline=None)
@given(stderr=st.text(max_size=400), line=st.integers(1, 99999),
       cond=st.text(st.characters(blacklist_characters="\n\r()"), min_size=1, max_size=60))
def test_the_detail_is_one_line_without_the_build_directory(stderr, line, cond):
    text = f"{stderr}\n/some/build/dir/vendor/llama.cpp/src/llama-model.cpp:{line}: GGML_ASSERT({cond}) failed\n"
    detail = probe._detail(text)
    assert detail.startswith(f"llama-model.cpp:{line}: GGML_ASSERT(") and "\n" not in detail
    assert len(detail) <= probe._DETAIL_CHARS


@settings(max_examples=40, deadline=None)
@given(a=st.dictionaries(st.text(max_size=8), st.booleans() | st.integers() | st.text(max_size=8), max_size=4),
       b=st.dictionaries(st.text(max_size=8), st.booleans() | st.integers() | st.text(max_size=8), max_size=4))
def test_cache_keys_differ_exactly_when_the_inputs_do(a, b):
    same = {k: (type(v), v) for k, v in a.items()} == {k: (type(v), v) for k, v in b.items()}
    assert (probe.cache_key("f", a, "1") == probe.cache_key("f", b, "1")) == same
    assert probe.cache_key("f", a, "1") != probe.cache_key("g", a, "1")
    assert probe.cache_key("f", a, "1") != probe.cache_key("f", a, "2")


# --- the callers: the CLI and the service, in their own processes ---------------------------


def _env(tmp_path: Path) -> dict[str, str]:
    import os

    env = {k: v for k, v in os.environ.items() if not k.startswith("XDG_")}
    env.update(XDG_CACHE_HOME=str(tmp_path / "cache"), XDG_CONFIG_HOME=str(tmp_path / "config"),
               XDG_DATA_HOME=str(tmp_path / "data"), HOME=str(tmp_path), OMP_NUM_THREADS="1",
               PYTHONPATH=str(PACKAGE_ROOT))
    env.pop("KARUKAN_CONFIG", None)
    return env


def test_convert_with_a_crashing_model_exits_1_with_one_line(bad_gguf, tmp_path):
    main = "import sys; from karukan_engine.cli import main; sys.exit(main(sys.argv[1:]))"
    done = subprocess.run([sys.executable, "-c", main, "convert", "--model", str(bad_gguf), "きょう"],
                          env=_env(tmp_path), capture_output=True, text=True, timeout=300)
    assert done.returncode == 1, (done.returncode, done.stderr[-500:])
    assert done.stdout == ""
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and bad_gguf.name in lines[0] and "crash" in lines[0]


@pytest.mark.parametrize("how", ["--model", "default"])
def test_the_service_with_a_crashing_model_keeps_typing_on_the_dictionary(how, good_gguf, tmp_path):
    bad = _patched(good_gguf, tmp_path / "no-layers.gguf", *MALFORMED["no-layers"])
    with HeadlessDesktop() as desktop:
        address = desktop.start_session_bus()
        if how == "default":   # the registry's default model, as a user's models.toml may name it
            registry = tmp_path / "models.toml"
            registry.write_text('default = "broken"\n\n[models.broken]\nname = "a broken file"\n'
                                'path = "no-layers.gguf"\ntokenizer = "gguf"\nprompt = "jinen"\n', encoding="utf-8")
            desktop.env["KARUKAN_MODELS_TOML"] = str(registry)
            service = desktop.start_service([])
        else:
            service = desktop.start_service(["--model", str(bad)])
        # The model loads in the background after READY; before the probe, llama.cpp's abort took
        # the service (and every client) down 0.3 s later. Type until the load has been tried.
        deadline = time.monotonic() + 300   # a bound against hanging (the child's own limit), not a timing check
        while "unavailable" not in desktop.log_tail("engine-service") and time.monotonic() < deadline:
            typed = asyncio.run(asyncio.wait_for(quiet_typist(address, 3, pause_s=0.05), 60))
            assert typed.failures == 0 and service.poll() is None, desktop.log_tail("engine-service")
        log = desktop.log_tail("engine-service")
        assert service.poll() is None, log
        assert log.count("no-layers.gguf makes llama.cpp crash") == 1, log
        desktop.stop(service)
        assert service.returncode == 0


# --- model paths that are not model files (issue 29, item 1) -----------------------------------
# Before: the probe hashed the path before any check, so a link to /dev/zero spun for ever and a
# FIFO blocked, in `convert` and in the service's model loader alike (no log line).

NOT_FILES = ["fifo", "dev-zero", "empty-directory", "fifo-in-directory"]
HANG_GUARD_S = 60   # a bound against hanging (the old code never ended), not a timing check


def _not_a_file(kind: str, tmp_path: Path) -> tuple[Path, str]:
    """(the path to pass as the model, the name its error names)."""
    import os

    if kind == "fifo":
        os.mkfifo(tmp_path / "fifo.gguf")
        return tmp_path / "fifo.gguf", "fifo.gguf"
    if kind == "dev-zero":
        (tmp_path / "zero.gguf").symlink_to("/dev/zero")
        return tmp_path / "zero.gguf", "zero.gguf"
    directory = tmp_path / "model-dir"
    directory.mkdir()
    if kind == "empty-directory":
        return directory, "model-dir"
    os.mkfifo(directory / "model.gguf")
    return directory, "model.gguf"


@pytest.mark.parametrize("kind", NOT_FILES)
def test_convert_with_a_model_path_that_is_no_file_exits_1_at_once(kind, tmp_path):
    model, name = _not_a_file(kind, tmp_path)
    main = "import sys; from karukan_engine.cli import main; sys.exit(main(sys.argv[1:]))"
    done = subprocess.run([sys.executable, "-c", main, "convert", "--model", str(model), "きょう"],
                          env=_env(tmp_path), capture_output=True, text=True, timeout=HANG_GUARD_S)
    assert done.returncode == 1 and done.stdout == "", done.stderr[-500:]
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and name in lines[0], lines


@pytest.fixture
def hang_guard():
    """Fail instead of hanging the suite if the probe blocks on a FIFO or reads /dev/zero."""
    import signal

    def expired(*_):
        raise TimeoutError("the probe blocked on a path that is no file")

    old = signal.signal(signal.SIGALRM, expired)
    signal.alarm(HANG_GUARD_S)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def test_prove_model_refuses_what_is_not_a_regular_file_without_reading_it(tmp_path, hang_guard):
    for kind in ("fifo", "dev-zero"):
        model, name = _not_a_file(kind, tmp_path)
        with pytest.raises(ModelLoadError, match=name):
            probe.prove_model(model, directory=tmp_path / "cache")
    with pytest.raises(ModelLoadError, match="directory"):
        probe.prove_model(tmp_path, directory=tmp_path / "cache")


def test_an_unreadable_model_file_is_one_line_and_exit_1(good_gguf):
    from damage_support import as_unprivileged, shared_tmp

    with shared_tmp() as tmp:
        model = tmp / "locked.gguf"
        model.write_bytes(good_gguf.read_bytes())
        model.chmod(0)
        done = as_unprivileged("""
            import contextlib, io, os, sys
            from karukan_engine.cli import main
            import karukan_engine.neural.probe
            os.environ.update(XDG_CACHE_HOME=sys.argv[2], XDG_DATA_HOME=sys.argv[2], XDG_CONFIG_HOME=sys.argv[2])
            with contextlib.redirect_stderr(io.StringIO()):   # imports all convert needs while it can
                main(["convert", "--model", "absent.gguf", "きょう"])
            drop_privileges()
            sys.exit(main(["convert", "--model", sys.argv[1], "きょう"]))
        """, str(model), str(tmp))
    assert done.returncode == 1 and done.stdout == "", done.stderr[-500:]
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "locked.gguf" in lines[0] and "ermission" in lines[0], lines


def test_the_probe_cache_is_private(good_gguf, tmp_path):
    directory = tmp_path / "cache" / probe.CACHE_SUBDIR
    assert probe.prove_model(good_gguf, directory=directory).ok
    assert (directory.stat().st_mode & 0o777) == 0o700
    assert (directory.parent.stat().st_mode & 0o777) == 0o700   # karukan/, made here too
    directory.chmod(0o755)   # as an older version made it
    probe.write_verdict(directory, "k", probe.Verdict(True), "x.gguf")
    assert (directory.stat().st_mode & 0o777) == 0o700


@pytest.mark.parametrize("where", ["default", "light_model"])
def test_the_service_with_a_model_path_that_is_no_file_logs_once_and_types(where, good_gguf, tmp_path):
    model, name = _not_a_file("dev-zero" if where == "default" else "fifo", tmp_path)
    with HeadlessDesktop() as desktop:
        address = desktop.start_session_bus()
        registry = tmp_path / "models.toml"
        default = model.name if where == "default" else str(good_gguf)
        registry.write_text(f'default = "chosen"\n\n[models.chosen]\nname = "the default"\npath = "{default}"\n'
                            'tokenizer = "gguf"\nprompt = "jinen"\n', encoding="utf-8")
        desktop.env["KARUKAN_MODELS_TOML"] = str(registry)
        if where == "light_model":
            config = Path(desktop.env["XDG_CONFIG_HOME"]) / "karukan" / "config.toml"
            config.parent.mkdir(parents=True, exist_ok=True)
            config.write_text(f'[conversion]\nlight_model = "{model}"\n', encoding="utf-8")
        service = desktop.start_service([])
        deadline = time.monotonic() + HANG_GUARD_S
        while name not in desktop.log_tail("engine-service") and time.monotonic() < deadline:
            typed = asyncio.run(asyncio.wait_for(quiet_typist(address, 3, pause_s=0.05), 60))
            assert typed.failures == 0 and typed.preedits_right and service.poll() is None
        log = desktop.log_tail("engine-service")
        assert service.poll() is None, log
        assert len([line for line in log.splitlines() if name in line]) == 1, log
        desktop.stop(service)
        assert service.returncode == 0
