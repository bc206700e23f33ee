"""tools/lattice_ab.py: the converter against itself without a part, end to end on the committed
dev sets; a part's fixed / broken rows account for the change in accuracy, and --context
replaces every row's left context (the sets' no-context copies left out)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from karukan_engine.dictionary.system import DEFAULT_DIR
from karukan_engine.lm.word_ngram import BUNDLED

SCRIPT = Path(__file__).resolve().parents[2] / "tools" / "lattice_ab.py"
COMMITTED = {"mozc_evaluation", "anthy_corpus", "anthy_context"}


def run(tmp_path, *extra: str) -> dict:
    out = tmp_path / "ab.json"
    env = {**os.environ, "KARUKAN_WORK_DIR": str(tmp_path / "work")}   # committed sets only
    subprocess.run([sys.executable, str(SCRIPT), "--without", "lone-word", "--limit", "24", "--json", str(out),
                    *extra], check=True, capture_output=True, timeout=600, env=env)
    return json.loads(out.read_text())


@pytest.mark.skipif(not ((DEFAULT_DIR / "meta.json").is_file() and BUNDLED.is_file()),
                    reason="dictionary or word model not built")
def test_the_ab_accounts_for_every_changed_row_as_given_and_at_a_line_start(tmp_path):
    given = run(tmp_path)
    assert given["context"] is None
    assert set(given["sets"]) == COMMITTED | {"anthy_context (no context)"}
    at_line_start = run(tmp_path, "--context", "\n")
    assert at_line_start["context"] == "\n" and set(at_line_start["sets"]) == COMMITTED
    for report in (given, at_line_start):
        for row in report["sets"].values():
            assert row["n"] == 12
            assert round((row["with"] - row["without"]) * row["n"]) == row["fixed"] - row["broken"]
            assert len(row["changed"]) >= row["fixed"] + row["broken"]
        assert (report["fixed"], report["broken"]) == (sum(r["fixed"] for r in report["sets"].values()),
                                                       sum(r["broken"] for r in report["sets"].values()))
