"""Where each pipeline stage keeps its cached output."""

from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
PACKAGE_MODEL_DIR = REPO_ROOT / "karukan_engine" / "data" / "model"


def work_dir() -> Path:
    """Root of the cache; KARUKAN_WORK_DIR overrides the gitignored default."""
    return Path(os.environ.get("KARUKAN_WORK_DIR", REPO_ROOT / "work_data"))


def stage_dir(name: str) -> Path:
    path = work_dir() / name
    path.mkdir(parents=True, exist_ok=True)
    return path


def kept_output(corpus_dir: Path | None, out: Path, force: bool) -> bool:
    """For a stage that reads the corpus and writes `out`: True when `out` exists and is kept
    (said on stdout); a clear error when there is no corpus to build it from."""
    if corpus_dir is None:
        raise FileNotFoundError("no corpus directory: pass --corpus DIR (see docs/training.md)")
    if out.exists() and not force:
        print(f"{out.name} exists; --force rebuilds it")
        return True
    return False
