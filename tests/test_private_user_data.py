"""Neither the suite nor a benchmark touches the user's own data directory (learning history,
user dictionary, rewriter choices)."""

import os
import sys
from pathlib import Path

from karukan_engine.core.user_files import data_dir

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

from private_user_data import private_user_data  # noqa: E402


def test_the_suite_has_a_data_directory_of_its_own():
    home = Path.home() / ".local" / "share" / "karukan"
    assert data_dir().resolve() != home.resolve()


def test_a_benchmark_gets_a_fresh_one_and_leaves_the_old_in_place(monkeypatch):
    monkeypatch.setenv("XDG_DATA_HOME", "/somewhere/else")
    with private_user_data() as home:
        assert data_dir() == Path(home) / "karukan" and not any(Path(home).iterdir())
    assert os.environ["XDG_DATA_HOME"] == "/somewhere/else" and not Path(home).exists()
    monkeypatch.delenv("XDG_DATA_HOME")
    with private_user_data():
        assert "XDG_DATA_HOME" in os.environ
    assert "XDG_DATA_HOME" not in os.environ
