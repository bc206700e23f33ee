"""benchmarks/startup_bench.py starts the engine in a fresh process and writes its JSON."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from karukan_engine.dictionary.system import DEFAULT_DIR

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "startup_bench.py"


@pytest.mark.skipif(not (DEFAULT_DIR / "meta.json").is_file(), reason="dictionary not built")
def test_the_bench_reports_each_fresh_start(tmp_path):
    out = tmp_path / "startup.json"
    done = subprocess.run([sys.executable, str(SCRIPT), "--runs", "2", "--no-model", "--json", str(out)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    report = json.loads(out.read_text())
    assert report["model"] is False and len(report["runs"]) == 2
    assert all(r["first_key_ms"] > 0 and r["max_rss_mb"] > 10 for r in report["runs"])
    assert "first key ms" in done.stdout
