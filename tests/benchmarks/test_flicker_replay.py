"""benchmarks/flicker_replay.py runs end to end and its stabilized run flickers less than the raw one."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from karukan_engine.dictionary.system import DEFAULT_DIR

REPO = Path(__file__).resolve().parents[2]


def replay(tmp_path, name, *options):
    out = tmp_path / f"{name}.json"
    env = {**os.environ, "XDG_DATA_HOME": str(tmp_path / "data"), "XDG_CONFIG_HOME": str(tmp_path / "config")}
    run = subprocess.run([sys.executable, str(REPO / "benchmarks" / "flicker_replay.py"), "--count", "12",
                          "--sets", "mozc", "--json", str(out), *options],
                         capture_output=True, text=True, timeout=300, env=env)
    assert run.returncode == 0, run.stderr
    return json.loads(out.read_text())


@pytest.mark.skipif(not (DEFAULT_DIR / "meta.json").is_file(), reason="compiled dictionary not built")
def test_the_replay_counts_flicker_and_the_stabilizer_lowers_it_at_equal_accuracy(tmp_path):
    raw = replay(tmp_path, "raw", "--no-stabilize")
    steady = replay(tmp_path, "steady")
    assert raw["info"]["stabilized"] is False and steady["info"]["stabilized"] is True
    (raw_row,), (steady_row,) = raw["rows"], steady["rows"]
    assert raw_row["sentences"] == steady_row["sentences"] == 12
    assert steady_row["flickers"] < raw_row["flickers"]
    assert [s["final"] for s in steady["sentences"]] == [s["final"] for s in raw["sentences"]]
    assert not (tmp_path / "data" / "karukan").exists()   # no learning file written
