"""tools/lattice_error_breakdown.py: each wrong row lands in exactly the class where its gold text
first appears, and the script runs end to end on the committed dev sets."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from karukan_engine.dictionary.system import DEFAULT_DIR
from karukan_engine.lm.word_ngram import BUNDLED
from tools.lattice_error_breakdown import CLASSES, classify, kana_spelling

SCRIPT = Path(__file__).resolve().parents[2] / "tools" / "lattice_error_breakdown.py"
texts = st.text(alphabet="あいう亜伊宇", min_size=1, max_size=3)


@given(judged=st.lists(texts, min_size=1, max_size=5), extra=st.lists(texts, max_size=5),
       gold=st.sets(texts, min_size=1, max_size=3))
def test_a_row_is_classed_by_the_first_place_its_gold_text_appears(judged, extra, gold):
    deeper = judged + extra   # the deeper search starts with the judged paths
    found = classify(judged[0], judged, deeper, gold)
    assert found in CLASSES
    assert (found == "right") == (judged[0] in gold)
    if found == "judged":
        assert gold & set(judged)
    if found == "deeper":
        assert not gold & set(judged) and gold & set(extra)
    if found == "absent":
        assert not gold & set(deeper)


def test_the_gold_text_among_the_judged_paths_is_the_scorers_miss_not_the_searchs():
    assert classify("会議", ["会議", "快技"], ["会議", "快技", "回技"], {"快技"}) == "judged"
    assert classify("会議", ["会議", "快技"], ["会議", "快技", "回技"], {"回技"}) == "deeper"
    assert classify("会議", ["会議"], ["会議"], {"かいぎ"}) == "absent"


@pytest.mark.skipif(not ((DEFAULT_DIR / "meta.json").is_file() and BUNDLED.is_file()),
                    reason="dictionary or word model not built")
def test_the_breakdown_counts_every_odd_row_of_every_set(tmp_path):
    out = tmp_path / "breakdown.json"
    env = {**os.environ, "KARUKAN_WORK_DIR": str(tmp_path / "work")}   # committed sets only
    subprocess.run([sys.executable, str(SCRIPT), "--limit", "16", "--deeper", "24", "--json", str(out)],
                   check=True, capture_output=True, timeout=600, env=env)
    report = json.loads(out.read_text())
    assert set(report["sets"]) >= {"mozc_evaluation", "anthy_corpus", "anthy_context"}
    for row in report["sets"].values():
        assert row["rows"] == 8 and sum(row[c] for c in CLASSES) == 8
    assert sum(report["total"].values()) == sum(r["rows"] for r in report["sets"].values())


def test_a_kana_spelling_differs_only_where_one_side_is_kana():
    assert kana_spelling("いろいろ試して", "色々試して")
    assert kana_spelling("この後は", "このあとは")
    assert kana_spelling("分かります", "わかります")
    assert not kana_spelling("戦闘が", "銭湯が")
    assert not kana_spelling("型の屋根が", "形の屋根が")
    assert not kana_spelling("同じ", "同じ")
