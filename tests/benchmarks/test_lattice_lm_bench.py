"""benchmarks/lattice_lm_bench.py runs end to end on a small n-gram and writes its JSON."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from karukan_engine.dictionary.system import DEFAULT_DIR
from karukan_engine.lm.char_ngram import CharNgram

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "lattice_lm_bench.py"


@pytest.mark.skipif(not (DEFAULT_DIR / "meta.json").is_file(), reason="dictionary not built")
def test_the_bench_times_each_setting(tmp_path):
    ngram = tmp_path / "lm.npz"
    CharNgram.count(["会議の資料を送ります", "今日はいい天気ですね"] * 5).pruned(1).save(ngram)
    out = tmp_path / "bench.json"
    subprocess.run([sys.executable, str(SCRIPT), "--paths", "1,4", "--repeats", "1", "--ngram", str(ngram),
                    "--json", str(out)], check=True, capture_output=True, timeout=300)
    report = json.loads(out.read_text())
    assert [r["paths"] for r in report["rows"]] == [1, 4]
    assert all(r["keys"] > 40 and 0 < r["p50_ms"] <= r["p95_ms"] <= r["max_ms"] for r in report["rows"])
