"""benchmarks/speculative_bench.py and benchmarks/greedy_pool_bench.py run end to end on a tiny model
(each asserts on every key that its methods give plain greedy's tokens) and write their JSON."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("llama_cpp")

from neural_support import tiny_model_dir  # noqa: E402

REPO = Path(__file__).resolve().parents[2]


def run_example(script: str, *args: str) -> None:
    run = subprocess.run([sys.executable, str(REPO / "benchmarks" / script), *args], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr


def test_speculative_bench(tmp_path):
    out = tmp_path / "spec.json"
    run_example("speculative_bench.py", "--model", str(tiny_model_dir("gpt2")), "--tokens", "4", "--sentences", "2", "--json", str(out))
    payload = json.loads(out.read_text())
    assert set(payload["methods"]) == {"plain", "auto", "always", "right draft", "wrong draft"}
    assert payload["keys"] > 16 and payload["by_change"]
    assert sum(group["keys"] for group in payload["by_change"]) == payload["keys"] - 1


def test_greedy_pool_bench(tmp_path):
    out = tmp_path / "pool.json"
    run_example("greedy_pool_bench.py", "--model", str(tiny_model_dir("llama")), "--sessions", "1,3", "--kana", "3", "--tokens", "4",
                "--drafts", "auto", "--json", str(out))
    rows = json.loads(out.read_text())["rows"]
    assert [(r["sessions"], r["method"]) for r in rows] == [(n, m) for n in (1, 3) for m in ("switching", "one by one", "batched")]
    assert all(r["median_ms_per_round"] > 0 for r in rows)
