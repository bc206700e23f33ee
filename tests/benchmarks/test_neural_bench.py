"""benchmarks/beam_bench.py runs end to end and writes the documented JSON schema (tiny model)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("llama_cpp")

from neural_support import tiny_model_dir

REPO = Path(__file__).resolve().parents[2]


def test_bench_writes_rows_in_the_documented_schema(tmp_path):
    out = tmp_path / "bench.json"
    cmd = [
        sys.executable, str(REPO / "benchmarks" / "beam_bench.py"),
        "--model", str(tiny_model_dir("gpt2")), "--threads", "1", "--beams", "1,2",
        "--full-eval-beams", "2", "--repeats", "2", "--full-eval-repeats", "1", "--tokens", "3",
        "--json", str(out),
    ]
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert "EOS ignored" in run.stdout
    payload = json.loads(out.read_text())
    rows = payload["rows"]
    assert {r["method"] for r in rows} == {"greedy", "beam", "full_eval", "greedy_incremental"}
    for row in rows:
        assert set(row) == {"model", "threads", "method", "beam", "median_ms", "p95_ms"}
        assert isinstance(row["model"], str) and isinstance(row["threads"], int) and isinstance(row["beam"], int)
        assert 0 < row["median_ms"] <= row["p95_ms"]
    assert {r["model"] for r in rows} == {"tiny-gpt2", "tiny-gpt2+ctx"}
    # the target ratios are derived from the rows (beam 3/5 were not run, so only typed kana)
    for ratio in payload["target_ratios"]:
        assert set(ratio) == {"model", "threads", "typed_kana_over_greedy"}
        assert ratio["typed_kana_over_greedy"] > 0
