"""Helpers for tests of damaged and hostile user files (issue 17).

Tests run as root, which reads any file whatever its mode, so "unreadable" needs a real
mechanism: as_unprivileged() runs a Python snippet in a child that drops to `nobody` (when the
tests run as root) so that chmod 000 really refuses the read with EACCES.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path
from typing import Iterator

REPO = Path(__file__).resolve().parents[2]


def as_unprivileged(code: str, *args: str, open_dirs: tuple[Path, ...] = ()) -> subprocess.CompletedProcess:
    """Run `code` (python, argv[1:] = args), which calls drop_privileges() once it has imported
    what it needs; open_dirs are made writable by everyone first (the child must be able to
    create and rename files there)."""
    for directory in open_dirs:
        os.chmod(directory, 0o777)
    # The child calls drop_privileges() after its imports (the interpreter may live where
    # `nobody` cannot read).
    prelude = ("import os\ndef drop_privileges():\n    if os.geteuid() == 0:\n"
               "        os.setgroups([])\n        os.setgid(65534)\n        os.setuid(65534)\n")
    env = {**os.environ, "PYTHONPATH": str(REPO), "PYTHONDONTWRITEBYTECODE": "1"}
    return subprocess.run([sys.executable, "-c", prelude + textwrap.dedent(code), *args],
                          capture_output=True, text=True, timeout=120, env=env, cwd="/")


def aside_copies(path: Path) -> list[Path]:
    return sorted(path.parent.glob(path.name + ".corrupt-*"))


@contextlib.contextmanager
def shared_tmp() -> Iterator[Path]:
    """A temporary directory the unprivileged child can reach (pytest's tmp_path is 0700)."""
    directory = Path(tempfile.mkdtemp(prefix="karukan-damage-"))
    os.chmod(directory, 0o777)
    try:
        yield directory
    finally:
        shutil.rmtree(directory, ignore_errors=True)
