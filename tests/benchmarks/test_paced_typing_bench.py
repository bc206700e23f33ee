"""benchmarks/paced_typing_bench.py types on a real private bus against the real engine service,
one row per pace for a sentence's first letter and for the others."""

import shutil
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import paced_typing_bench  # noqa: E402
from karukan_engine.dictionary.system import DEFAULT_DIR  # noqa: E402

pytestmark = [pytest.mark.skipif(not (DEFAULT_DIR / "meta.json").is_file(), reason="compiled dictionary not built"),
              pytest.mark.skipif(shutil.which("dbus-daemon") is None, reason="dbus-daemon not installed")]


def test_every_letter_is_timed_per_pace(monkeypatch):
    for name in ("SETTLE_S", "PAUSE_BEFORE_SPACE_S", "AFTER_SPACE_S"):
        monkeypatch.setattr(paced_typing_bench, name, 0.0)
    results = paced_typing_bench.run([1.0, 2.0], repeats=1, use_model=False)
    letters = sum(map(len, paced_typing_bench.SENTENCES))
    assert list(results) == ["1 ms, first letter", "1 ms, other letters", "2 ms, first letter", "2 ms, other letters"]
    for pace in ("1 ms", "2 ms"):
        assert results[f"{pace}, first letter"]["n"] == len(paced_typing_bench.SENTENCES)
        assert results[f"{pace}, other letters"]["n"] == letters - len(paced_typing_bench.SENTENCES)
    for row in results.values():
        assert 0 < row["p50_ms"] <= row["p95_ms"] <= row["max_ms"]
