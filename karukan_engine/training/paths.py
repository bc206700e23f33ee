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
