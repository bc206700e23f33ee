"""tools/dictionary_margin_fit.py runs end to end on the committed dev sets and its simulation of
each margin agrees with the converter's own choice at the shipped margin."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from karukan_engine.dictionary.system import DEFAULT_DIR
from karukan_engine.lattice.word_lm import WordLmWeights
from karukan_engine.lm.word_ngram import BUNDLED

SCRIPT = Path(__file__).resolve().parents[2] / "tools" / "dictionary_margin_fit.py"


@pytest.mark.skipif(not ((DEFAULT_DIR / "meta.json").is_file() and BUNDLED.is_file()),
                    reason="dictionary or word model not built")
def test_the_fit_reports_every_margin_and_the_shipped_one_matches_its_simulation(tmp_path):
    shipped = WordLmWeights().dictionary_margin
    out = tmp_path / "fit.json"
    env = {**os.environ, "KARUKAN_WORK_DIR": str(tmp_path / "work")}   # committed sets only
    subprocess.run([sys.executable, str(SCRIPT), "--limit", "16", "--grid", f"0,{shipped:g},1e9",
                    "--json", str(out)], check=True, capture_output=True, timeout=600, env=env)
    report = json.loads(out.read_text())
    assert report["fitted_margin"] in (0.0, shipped, 1e9)
    assert set(report["sets"]) >= {"mozc_evaluation", "anthy_corpus", "anthy_context"}
    for row in report["sets"].values():
        assert row[str(float(shipped))] == row["shipped"]
        # an endless margin is the dictionary alone
        assert row["1000000000.0"]["fixed"] == row["1000000000.0"]["broken"] == 0


@given(st.dictionaries(st.integers(0, 50).map(float), st.tuples(st.floats(0, 100), st.integers(0, 30)), min_size=1),
       st.floats(0, 5))
def test_the_fitted_value_breaks_least_among_those_near_the_best(results, tolerance):
    sys.path.insert(0, str(SCRIPT.parents[1]))
    from tools.dictionary_margin_fit import fitted_value

    grid = list(results)
    fitted = fitted_value(grid, lambda v, parity: results[v][0], lambda v, parity: results[v][1], tolerance)
    best = max(acc for acc, _ in results.values())
    near = [v for v in grid if results[v][0] >= best - tolerance]
    assert fitted in near
    assert all((results[fitted][1], fitted) <= (results[v][1], v) for v in near)
