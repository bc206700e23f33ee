"""benchmarks/align_bench.py runs end to end: both ways of aligning agree and are timed."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from karukan_engine.dictionary.system import DEFAULT_DIR

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.skipif(not (DEFAULT_DIR / "meta.json").is_file(), reason="compiled dictionary not built")
def test_align_bench_aligns_both_ways_alike(tmp_path):
    out = tmp_path / "align.json"
    run = subprocess.run([sys.executable, str(REPO / "benchmarks" / "align_bench.py"), "--readings", "6",
                          "--json", str(out)], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    report = json.loads(out.read_text())
    assert report["readings"] == 6 and report["differ"] == 0
    assert set(report["results"]) == {"one at a time", "together"}
    for r in report["results"].values():
        assert 0 < r["p50_ms"] <= r["p95_ms"]
    assert 0 < report["trie_nodes"] <= report["surface_chars"]
