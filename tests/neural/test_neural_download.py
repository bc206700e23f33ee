"""Downloads through huggingface_hub against a local server that imitates the hub (no network)."""

from __future__ import annotations

import hashlib
import http.server
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

pytest.importorskip("huggingface_hub")

from karukan_engine.neural.download import fetch_entry, is_downloaded
from karukan_engine.neural.errors import DownloadError
from karukan_engine.neural.registry import parse_registry

REPO = "someone/tiny-jinen.gguf"
COMMIT = "0123456789abcdef0123456789abcdef01234567"
REPO_ROOT = Path(__file__).resolve().parents[2]


class FakeHub(http.server.ThreadingHTTPServer):
    """Serves /{repo}/resolve/{revision}/{file} with the headers hf_hub_download relies on,
    honours Range requests, and can cut the first GET of a file short to force a resume."""

    def __init__(self, files: dict[str, bytes]):
        super().__init__(("127.0.0.1", 0), _Handler)
        self.files = files
        self.other_repos: dict[str, dict[str, bytes]] = {}  # repo -> files, besides REPO
        self.ranges: list[str] = []
        self.cut_first_get_at: int | None = None
        self.gets = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args) -> None:  # keep test output clean
        pass

    def _file(self) -> bytes | None:
        parts = self.path.split("?")[0].lstrip("/").split("/")
        if len(parts) < 5 or parts[2] != "resolve":
            return None
        repo, name = "/".join(parts[:2]), "/".join(parts[4:])
        files = self.server.files if repo == REPO else self.server.other_repos.get(repo, {})
        return files.get(name)

    def _headers(self, data: bytes, status: int, length: int, extra: dict[str, str] = {}) -> None:
        self.send_response(status)
        self.send_header("X-Repo-Commit", COMMIT)
        self.send_header("ETag", '"' + hashlib.sha256(data).hexdigest() + '"')
        self.send_header("Content-Length", str(length))
        self.send_header("Accept-Ranges", "bytes")
        for k, v in extra.items():
            self.send_header(k, v)
        self.end_headers()

    def do_HEAD(self) -> None:
        data = self._file()
        if data is None:
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        self._headers(data, 200, len(data))

    def do_GET(self) -> None:
        data = self._file()
        if data is None:
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        start = 0
        rng = self.headers.get("Range")
        if rng:
            self.server.ranges.append(rng)
            start = int(rng.split("=")[1].split("-")[0])
        body = data[start:]
        if rng:
            self._headers(data, 206, len(body), {"Content-Range": f"bytes {start}-{len(data) - 1}/{len(data)}"})
        else:
            self._headers(data, 200, len(body))
        self.server.gets += 1
        cut = self.server.cut_first_get_at
        if cut is not None and len(body) > 1:
            self.server.cut_first_get_at = None
            self.wfile.write(body[:cut])
            self.wfile.flush()
            self.close_connection = True
            return
        self.wfile.write(body)


@pytest.fixture()
def hub(tmp_path):
    gguf = os.urandom(300_000)
    server = FakeHub({"tiny-Q5_K_M.gguf": b"GGUF" + gguf, "tokenizer.json": b'{"version": "1.0"}'})
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def _registry(tmp_path: Path):
    text = f"""
default = "tiny"
[models.tiny]
name = "tiny"
repo = "{REPO}"
file = "tiny-Q5_K_M.gguf"
tokenizer = "tokenizer.json"
size_mib = 0.3
"""
    (tmp_path / "models.toml").write_text(text)
    return parse_registry(text, tmp_path, tmp_path / "models.toml")


def test_download_into_cache_then_resolve_offline(hub, tmp_path):
    entry = _registry(tmp_path).get("tiny")
    cache = tmp_path / "cache"
    assert not is_downloaded(entry, cache_dir=cache)
    with pytest.raises(DownloadError, match="karukan model download tiny"):
        fetch_entry(entry, allow_download=False, cache_dir=cache, endpoint=hub.url)
    gguf, tokenizer = fetch_entry(entry, allow_download=True, cache_dir=cache, endpoint=hub.url)
    assert gguf.read_bytes() == hub.files["tiny-Q5_K_M.gguf"]
    assert tokenizer is not None and tokenizer.parent == gguf.parent  # layout: tokenizer beside
    assert is_downloaded(entry, cache_dir=cache)
    gets = hub.gets
    again, _ = fetch_entry(entry, allow_download=False, cache_dir=cache)  # cache only, no server
    assert again == gguf and hub.gets == gets


def test_interrupted_download_resumes_with_a_range_request(hub, tmp_path):
    entry = _registry(tmp_path).get("tiny")
    cache = tmp_path / "cache"
    # huggingface_hub writes 10 MiB chunks: cut the transfer after the first one has landed.
    hub.files["tiny-Q5_K_M.gguf"] = b"GGUF" + os.urandom(12_000_000)
    hub.cut_first_get_at = 11_000_000
    try:
        fetch_entry(entry, allow_download=True, cache_dir=cache, endpoint=hub.url)
    except DownloadError:
        pass  # the client may give up on the cut transfer; the next call must resume it
    gguf, _ = fetch_entry(entry, allow_download=True, cache_dir=cache, endpoint=hub.url)
    assert gguf.read_bytes() == hub.files["tiny-Q5_K_M.gguf"]
    starts = [int(r.split("=")[1].split("-")[0]) for r in hub.ranges]
    assert starts and 0 < starts[0] <= 11_000_000, hub.ranges


def test_missing_file_on_the_hub_is_a_clear_error(hub, tmp_path):
    entry = _registry(tmp_path).get("tiny")
    broken = type(entry)(**{**entry.__dict__, "file": "nope.gguf"})
    with pytest.raises(DownloadError, match="nope.gguf"):
        fetch_entry(broken, allow_download=True, cache_dir=tmp_path / "cache", endpoint=hub.url)


def test_tokenizer_json_from_another_repository(hub, tmp_path):
    """tokenizer_repo: the GGUF from its repository, tokenizer.json from the named one."""
    hub.other_repos["someone/tokenizers"] = {"tokenizer.json": b'{"from": "elsewhere"}'}
    text = f'[models.split]\nrepo = "{REPO}"\nfile = "tiny-Q5_K_M.gguf"\ntokenizer_repo = "someone/tokenizers"\n'
    entry = parse_registry(text, tmp_path).get("split")
    assert entry.tokenizer_source == "someone/tokenizers/tokenizer.json"
    gguf, tokenizer = fetch_entry(entry, allow_download=True, cache_dir=tmp_path / "cache", endpoint=hub.url)
    assert gguf.read_bytes() == hub.files["tiny-Q5_K_M.gguf"]
    assert tokenizer.read_bytes() == b'{"from": "elsewhere"}'
    assert is_downloaded(entry, cache_dir=tmp_path / "cache")


def test_cli_download_with_progress(hub, tmp_path):
    _registry(tmp_path)
    env = dict(os.environ, HF_ENDPOINT=hub.url, HF_HUB_CACHE=str(tmp_path / "cache"), KARUKAN_MODELS_TOML=str(tmp_path / "models.toml"))
    code = "import sys; from karukan_engine.cli import main; sys.exit(main(sys.argv[1:]))"
    run = subprocess.run([sys.executable, "-c", code, "model", "download", "tiny"], cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    paths = run.stdout.split()
    assert Path(paths[0]).read_bytes() == hub.files["tiny-Q5_K_M.gguf"]
    listing = subprocess.run([sys.executable, "-c", code, "model", "list"], cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert listing.returncode == 0 and "ready" in listing.stdout
