"""Where per-user data lives, and how it is written without ever losing the previous copy."""

from __future__ import annotations

import logging
import os
import threading
import time
from pathlib import Path

log = logging.getLogger(__name__)


def data_dir() -> Path:
    """$XDG_DATA_HOME/karukan (default ~/.local/share/karukan)."""
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "karukan"


def write_atomic(path: Path, data: bytes) -> None:
    """Replace path with data: write a temporary file beside it, fsync, rename, fsync the dir.

    On any failure (a full disk, a crash) the old file stays as it was; a temporary file left by
    a crash is named .<name>.tmp-<pid>-<thread> and is ignored by readers.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}-{threading.get_ident()}")
    try:
        with open(tmp, "wb") as stream:
            stream.write(data)
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    try:
        fd = os.open(path.parent, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def set_aside(path: Path, why: str) -> Path:
    """Move an unreadable file out of the way (never delete what the user may want back)."""
    target = path.with_name(f"{path.name}.corrupt-{time.strftime('%Y%m%d-%H%M%S')}")
    os.replace(path, target)
    log.warning("%s was unreadable (%s); moved it to %s and started afresh", path.name, why, target.name)
    return target
