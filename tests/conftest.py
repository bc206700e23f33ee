"""Suite-wide setup: no test writes into the real user's cache (model probe results)."""

from __future__ import annotations

import os

import pytest


@pytest.fixture(autouse=True, scope="session")
def _private_cache_dir(tmp_path_factory):
    # Tests that set their own XDG_CACHE_HOME (or HOME, for the end-to-end runs) keep theirs.
    if "XDG_CACHE_HOME" in os.environ:
        yield
        return
    os.environ["XDG_CACHE_HOME"] = str(tmp_path_factory.mktemp("xdg-cache"))
    try:
        yield
    finally:
        os.environ.pop("XDG_CACHE_HOME", None)
