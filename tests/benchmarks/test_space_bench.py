"""benchmarks/space_bench.py runs end to end: Space timed with the dictionary and with the bundled model."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("llama_cpp")

from karukan_engine.dictionary.system import DEFAULT_DIR  # noqa: E402

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.skipif(not (DEFAULT_DIR / "meta.json").is_file(), reason="compiled dictionary not built")
def test_space_bench_times_space_with_and_without_the_model(tmp_path):
    out, profile = tmp_path / "space.json", tmp_path / "space.prof"
    env = {**os.environ, "XDG_DATA_HOME": str(tmp_path / "data"), "XDG_CONFIG_HOME": str(tmp_path / "config")}
    run = subprocess.run([sys.executable, str(REPO / "benchmarks" / "space_bench.py"), "--sentences", "4",
                          "--profile", str(profile), "--json", str(out)],
                         capture_output=True, text=True, timeout=300, env=env)
    assert run.returncode == 0, run.stderr
    results = json.loads(out.read_text())["results"]
    assert set(results) == {"dictionary", "bundled model"}
    for r in results.values():
        assert r["n"] == r["converted"] == 4   # every Space showed a candidate page
        assert 0 <= r["wall_p50_ms"] <= r["wall_p95_ms"] and 0 <= r["cpu_p50_ms"] <= r["cpu_p95_ms"]
    assert profile.stat().st_size > 0 and "conversion/fused/" in run.stderr   # the model's Space calls, profiled


@pytest.mark.skipif(not (DEFAULT_DIR / "meta.json").is_file(), reason="compiled dictionary not built")
def test_space_bench_times_the_quick_spaces_model_conversion(tmp_path):
    out = tmp_path / "space.json"
    env = {**os.environ, "XDG_DATA_HOME": str(tmp_path / "data"), "XDG_CONFIG_HOME": str(tmp_path / "config")}
    run = subprocess.run([sys.executable, str(REPO / "benchmarks" / "space_bench.py"), "--sentences", "4",
                          "--pause-ms", "0", "--json", str(out)],
                         capture_output=True, text=True, timeout=300, env=env)
    assert run.returncode == 0, run.stderr
    report = json.loads(out.read_text())
    assert report["quick_space"]
    quick = report["results"]["bundled model, pause 0 ms"]
    # no pause: nothing was prepared, so every Space answered at once and asked for the model's
    assert quick["n"] == quick["converted"] == 4 and quick["prepared"] == 0
    assert 1 <= quick["model_conversions"] <= 4 and quick["model_changed"] <= quick["model_conversions"]
    assert quick["model_p50_ms"] <= quick["model_p95_ms"]
    assert report["results"]["dictionary, pause 0 ms"]["model_conversions"] == 0
