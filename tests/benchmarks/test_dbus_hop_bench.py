"""benchmarks/dbus_hop_bench.py times every layer's round trip on a real private bus: the daemon,
another process through it, a raw socket, and the engine service's Ping, dispatch and key."""

import shutil
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import dbus_hop_bench  # noqa: E402
from karukan_engine.dictionary.system import DEFAULT_DIR  # noqa: E402

pytestmark = [pytest.mark.skipif(not (DEFAULT_DIR / "meta.json").is_file(), reason="compiled dictionary not built"),
              pytest.mark.skipif(shutil.which("dbus-daemon") is None, reason="dbus-daemon not installed")]


def test_every_layer_is_timed(monkeypatch):
    monkeypatch.setattr(dbus_hop_bench, "SETTLE_S", 0.0)
    results = dbus_hop_bench.run(calls=12, pace_ms=1.0)
    assert list(results) == ["raw socket", "bus daemon", "echo process", "service Ping", "service GetInfo",
                             "service key"]
    for row in results.values():
        assert row["n"] == 12 and 0 < row["p50_ms"] <= row["p95_ms"]
