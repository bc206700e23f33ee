"""Benchmarks run with a user data directory of their own (a temporary XDG_DATA_HOME): the user's
learning history, user dictionary and rewriter choices are neither read (every run starts
equal) nor written (a benchmark's typing must not become the user's learned choices)."""

from __future__ import annotations

import os
import tempfile
from contextlib import contextmanager


@contextmanager
def private_user_data():
    saved = os.environ.get("XDG_DATA_HOME")
    with tempfile.TemporaryDirectory(prefix="karukan-bench-data-") as home:
        os.environ["XDG_DATA_HOME"] = home
        try:
            yield home
        finally:
            if saved is None:
                os.environ.pop("XDG_DATA_HOME", None)
            else:
                os.environ["XDG_DATA_HOME"] = saved
