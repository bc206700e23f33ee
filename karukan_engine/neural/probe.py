"""Prove a model file in a child process before this process loads it.

llama.cpp answers some malformed GGUFs with an assertion that aborts the whole process
(`block_count` 0 or 0xFFFFFFFF at load, a NaN `layer_norm_epsilon` at the first decode). No
list of checks on known fields can be complete, so before the engine service or the CLI loads a
model, a child process loads it and decodes one token, exactly as the engine would (same
llama.cpp, same metadata overrides). If the child dies, only the child is lost: the caller gets
a ModelLoadError with one line naming the file and what killed the child, and the engine goes
on with the dictionary.

Verdicts are cached by the file's SHA-256 (plus the overrides, the llama.cpp build and this
probe's version) in `$XDG_CACHE_HOME/karukan/model-probes/` (default `~/.cache/...`), so a model
is proven once, not at every start. A crash is cached too (the same bytes crash the same way);
a timeout, a kill by another signal or a child that could not start is not. When the child
reports a clean error (a NeuralError: unreadable file, wrong architecture, ...), nothing is
cached and the caller's own load raises that error with its precise type.

    python -m karukan_engine.neural.probe MODEL.gguf [OVERRIDES_JSON]    # the child
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import signal
import stat
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from karukan_engine.neural.errors import ModelLoadError, NeuralError

PROBE_VERSION = 1
TIMEOUT_S = 300.0
CACHE_SUBDIR = "karukan/model-probes"
# A child killed by one of these died of the file (llama.cpp abort, bad memory access): the same
# bytes would kill it again, so the verdict is cached. Any other end (SIGKILL from the OOM killer,
# a timeout) says nothing certain about the file.
CRASH_SIGNALS = frozenset({signal.SIGABRT, signal.SIGSEGV, signal.SIGBUS, signal.SIGILL, signal.SIGFPE,
                           signal.SIGTRAP})
_DETAIL_CHARS = 160
_ASSERT = re.compile(r"([^/\s]+:\d+: GGML_ASSERT\(.*?\) failed)")


@dataclass(frozen=True)
class Verdict:
    ok: bool
    message: str = ""


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / CACHE_SUBDIR


def _not_regular(path: Path, mode: int) -> str | None:
    """Why a file of this mode is no model file (None for a regular file)."""
    if stat.S_ISREG(mode):
        return None
    kind = ("a directory" if stat.S_ISDIR(mode) else "a FIFO" if stat.S_ISFIFO(mode)
            else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "a socket" if stat.S_ISSOCK(mode)
            else "not a regular file")
    return f"{path.name} is {kind}, not a model file"


def file_sha256(path: Path) -> str:
    """The SHA-256 of a regular file. A FIFO, a device (a link to /dev/zero) or a directory is
    refused from stat() and fstat() before a byte is read (a FIFO would block, /dev/zero never
    ends): ModelLoadError. An unreadable file: ModelLoadError too."""
    try:
        why = _not_regular(path, os.stat(path).st_mode)
        if why:
            raise ModelLoadError(why)
        # O_NONBLOCK: should the path have become a FIFO since the stat, the open does not block
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOCTTY", 0))
    except OSError as exc:
        raise ModelLoadError(f"cannot read {path.name} ({exc.strerror or type(exc).__name__})") from None
    except ValueError:   # a NUL in the name
        raise ModelLoadError("the model file name holds a NUL") from None
    with os.fdopen(fd, "rb") as f:
        why = _not_regular(path, os.fstat(f.fileno()).st_mode)   # the file opened is the one checked
        if why:
            raise ModelLoadError(why)
        digest = hashlib.sha256()
        try:
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
        except OSError as exc:
            raise ModelLoadError(f"cannot read {path.name} ({exc.strerror or type(exc).__name__})") from None
    return digest.hexdigest()


def _llama_build() -> str:
    try:
        import llama_cpp
    except ImportError:
        return "none"
    return str(getattr(llama_cpp, "__version__", "unknown"))


def cache_key(file_hash: str, kv_overrides: Mapping[str, object], build: str) -> str:
    """One name per (file bytes, overrides, llama.cpp build, probe version)."""
    what = json.dumps({"file": file_hash, "overrides": sorted((k, repr(v)) for k, v in kv_overrides.items()),
                       "llama": build, "probe": PROBE_VERSION}, ensure_ascii=True)
    return hashlib.sha256(what.encode()).hexdigest()


def read_verdict(directory: Path, key: str) -> Verdict | None:
    try:
        data = json.loads((directory / f"{key}.json").read_text(encoding="utf-8"))
        return Verdict(bool(data["ok"]), str(data.get("message", "")))
    except (OSError, ValueError, KeyError, TypeError):
        return None   # missing or damaged: prove again


def _private_cache(directory: Path) -> None:
    """The cache names the user's model files: 0700, as the data directory is."""
    directory.parent.mkdir(mode=0o700, parents=True, exist_ok=True)   # karukan/ too, when new
    directory.mkdir(mode=0o700, exist_ok=True)
    info = directory.stat()   # one made 0755 by an older version is tightened
    if info.st_uid == os.geteuid() and stat.S_IMODE(info.st_mode) & 0o077:
        os.chmod(directory, stat.S_IMODE(info.st_mode) & ~0o077)


def write_verdict(directory: Path, key: str, verdict: Verdict, file_name: str) -> None:
    """Atomically; a cache that cannot be written only costs a probe at the next start."""
    record = json.dumps({"ok": verdict.ok, "message": verdict.message, "file": file_name})
    try:
        _private_cache(directory)
        fd, tmp = tempfile.mkstemp(prefix=f".{key}.", dir=directory)
    except OSError:
        return
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(record)
        os.replace(tmp, directory / f"{key}.json")
    except OSError:
        Path(tmp).unlink(missing_ok=True)


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def _detail(stderr: str) -> str:
    """The line of the child's stderr that says why (llama.cpp's GGML_ASSERT / error line)."""
    found = _ASSERT.search(stderr)
    if found:   # "llama-model.cpp:1328: GGML_ASSERT(...) failed", without the build directory
        return found.group(1)[:_DETAIL_CHARS]
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    for line in reversed(lines):
        lowered = line.lower()
        if "assert" in lowered or "error" in lowered or "abort" in lowered:
            return line[-_DETAIL_CHARS:]
    return lines[-1][-_DETAIL_CHARS:] if lines else ""


def run_child(gguf: Path, kv_overrides: Mapping[str, object], timeout_s: float) -> tuple[Verdict | None, bool]:
    """(verdict, cacheable). verdict None: the child reported a clean NeuralError (the caller's
    own load will raise it)."""
    env = dict(os.environ)
    package_parent = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [package_parent, env.get("PYTHONPATH")]))
    env.setdefault("OMP_NUM_THREADS", "1")
    env["GGML_NO_BACKTRACE"] = "1"   # ggml would otherwise attach a debugger to print a backtrace
    argv = [sys.executable, "-m", "karukan_engine.neural.probe", str(gguf), json.dumps(dict(kv_overrides))]
    try:
        done = subprocess.run(argv, env=env, stdin=subprocess.DEVNULL, capture_output=True,
                              timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return Verdict(False, f"{gguf.name}: the model check did not finish within {timeout_s:.0f} s"), False
    except OSError as exc:
        return Verdict(False, f"{gguf.name}: the model check could not start ({type(exc).__name__})"), False
    stderr = done.stderr.decode("utf-8", errors="replace")
    if done.returncode == 0:
        try:
            report = json.loads(done.stdout.decode("utf-8", errors="replace").strip().splitlines()[-1])
        except (ValueError, IndexError):
            report = None
        if isinstance(report, dict) and report.get("ok") is True:
            return Verdict(True), True
        if isinstance(report, dict) and report.get("ok") is False:
            return None, False
    if done.returncode < 0:
        number = -done.returncode
        detail = _detail(stderr)
        message = (f"{gguf.name} makes llama.cpp crash ({_signal_name(number)}"
                   + (f": {detail}" if detail else "") + "); not loaded")
        return Verdict(False, message), number in CRASH_SIGNALS
    detail = _detail(stderr)
    return Verdict(False, f"{gguf.name}: the model check failed (exit {done.returncode}"
                          + (f": {detail}" if detail else "") + ")"), False


def prove_model(gguf: str | Path, kv_overrides: Mapping[str, object] | None = None,
                directory: Path | None = None, timeout_s: float = TIMEOUT_S) -> Verdict:
    """Prove `gguf` (cached); raise ModelLoadError when a child could not load and decode it.

    Returns the verdict (ok, or not ok with no message when the child reported a clean error that
    the caller's own load will raise)."""
    path = Path(gguf)
    overrides = dict(kv_overrides or {})
    file_hash = file_sha256(path)   # ModelLoadError for what is not a readable regular file
    directory = directory or cache_dir()
    key = cache_key(file_hash, overrides, _llama_build())
    verdict = read_verdict(directory, key)
    if verdict is None:
        verdict, cacheable = run_child(path, overrides, timeout_s)
        if verdict is None:
            return Verdict(False)
        if cacheable:
            write_verdict(directory, key, verdict, path.name)
    if not verdict.ok:
        raise ModelLoadError(verdict.message or f"{path.name} failed the model check")
    return verdict


# --- the child ---------------------------------------------------------------------------------


def _child(argv: list[str]) -> int:
    from karukan_engine.neural.runtime import ContextSize, LlamaContext, LlamaModel

    path = Path(argv[0])
    overrides = json.loads(argv[1]) if len(argv) > 1 else {}
    try:
        model = LlamaModel(path, overrides)
        try:
            ctx = LlamaContext(model, ContextSize(n_ctx=16, n_batch=4, n_seq_max=1), n_threads=1)
            try:
                token = max(0, min(model.eos_id, model.n_vocab - 1))
                ctx.decode_run([token], 0)
            finally:
                ctx.free()
        finally:
            model.free()
    except NeuralError as exc:
        print(json.dumps({"ok": False, "error": str(exc)}), flush=True)
        return 0
    print(json.dumps({"ok": True}), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(_child(sys.argv[1:]))
