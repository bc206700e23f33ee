"""Model downloads through huggingface_hub into its standard cache (resumable, with progress).

Nothing is downloaded unless asked for (`karukan model download ID`); loading a hub model that
is not in the cache raises DownloadError with the command to run.
"""

from __future__ import annotations

import os
from pathlib import Path

from karukan_engine.neural.errors import DownloadError
from karukan_engine.neural.registry import ModelEntry


def _files(entry: ModelEntry) -> list[tuple[str, str]]:
    """(repository, file name) of what a hub model needs: the GGUF, then its tokenizer.json."""
    assert entry.file is not None and entry.repo is not None
    files = [(entry.repo, entry.file)]
    if entry.tokenizer == "tokenizer.json":
        files.append((entry.tokenizer_repo or entry.repo, "tokenizer.json"))
    return files


def _hub_download(entry: ModelEntry, repo: str, filename: str, local_only: bool, cache_dir: Path | None, endpoint: str | None) -> Path:
    try:
        from huggingface_hub import hf_hub_download
    except ImportError as exc:
        raise DownloadError("huggingface_hub is not installed (pip install 'karukan[neural]')") from exc
    try:
        path = hf_hub_download(
            repo_id=repo,
            filename=filename,
            # a pinned revision belongs to the GGUF's repository
            revision=entry.revision if repo == entry.repo else None,
            cache_dir=cache_dir,
            local_files_only=local_only,
            endpoint=endpoint or os.environ.get("HF_ENDPOINT") or None,
        )
    except Exception as exc:  # hub errors, network errors, missing cache entries
        if local_only:
            raise DownloadError(f"model {entry.id!r} is not downloaded; run `karukan model download {entry.id}`") from exc
        raise DownloadError(f"downloading {filename} for {entry.id!r} failed: {type(exc).__name__}: {exc}") from exc
    return Path(path)


def fetch_entry(entry: ModelEntry, allow_download: bool = False, cache_dir: Path | None = None, endpoint: str | None = None) -> tuple[Path, Path | None]:
    """(GGUF path, tokenizer.json path or None) in the hub cache; downloads only when allowed.
    Files of one repo revision share a snapshot directory, so tokenizer.json from the GGUF's own
    repository lies beside the GGUF; one from `tokenizer_repo` lies in that repository's."""
    if entry.source_kind != "hub":
        raise DownloadError(f"model {entry.id!r} is not a hub model")
    paths = [_hub_download(entry, repo, f, not allow_download, cache_dir, endpoint) for repo, f in _files(entry)]
    return paths[0], (paths[1] if len(paths) > 1 else None)


def is_downloaded(entry: ModelEntry, cache_dir: Path | None = None) -> bool:
    if entry.source_kind != "hub":
        location = entry.local_path()
        return location is not None and location.exists()
    try:
        fetch_entry(entry, allow_download=False, cache_dir=cache_dir)
    except DownloadError:
        return False
    return True
