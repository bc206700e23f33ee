"""The left-context analysis off the key path (issue 30: the first key after a commit, the first
with a left context, built the entries-by-surface index: 87-118 ms), and its cache."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from karukan_engine.core.lru import Lru
from karukan_engine.dictionary.system import DEFAULT_DIR, SystemDictionary
from karukan_engine.lattice.context import START, ContextAnalyzer

pytestmark = pytest.mark.skipif(not (DEFAULT_DIR / "meta.json").is_file(),
                                reason="compiled dictionary not built")


@pytest.fixture(scope="module")
def system():
    return SystemDictionary()


def test_prepared_index_is_the_one_every_context_uses(system):
    analyzer = ContextAnalyzer(system)
    analyzer.prepare()
    assert analyzer.prepared and analyzer.index_builds == 1
    assert analyzer.left_neighbours("東京") != START
    assert analyzer.left_neighbours("会議の") != START
    assert analyzer.index_builds == 1


def test_without_preparation_the_first_context_builds_it(system):
    analyzer = ContextAnalyzer(system)
    assert not analyzer.prepared
    analyzer.left_neighbours("東京")
    assert analyzer.index_builds == 1


def test_the_engine_builds_the_index_before_the_key_after_a_commit(tmp_path, monkeypatch):
    """The service's converter (load_in_background) prepares the index on a thread at start-up;
    the key after a learned commit (the first with a left context) finds it built, and the
    dictionary's bunsetsu table (its first multi-word live text) with it."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    from karukan_engine.conversion.factory import _dictionary_converter
    from karukan_engine.session import Session
    from karukan_engine.session.keys_cli import parse_keys

    converter = _dictionary_converter(load_in_background=True)
    try:
        assert converter.preparation is not None
        converter.preparation.join()
        analyzer = converter.context
        assert analyzer.index_builds == 1
        assert "segmenter" in vars(converter.dictionary)   # the cached bunsetsu table too
        session = Session(converter)
        for _label, keysym, modifiers in parse_keys("toukyou<Return>a"):
            session.process_key(keysym, modifiers)
        assert converter.learning.version > 0            # the commit was learned
        assert analyzer._neighbours.get("東京") is not None   # the key after it asked with 東京
        assert analyzer.index_builds == 1                 # and did not build the index again
    finally:
        converter.close()


CONTEXT_TEXT = st.text(alphabet="東京会議の昨日ですカードを見た。はいアイ 　a", max_size=12)


@settings(max_examples=60, deadline=None)
@given(contexts=st.lists(CONTEXT_TEXT, min_size=1, max_size=6))
def test_cached_answers_equal_fresh_ones(system, contexts):
    cached = ContextAnalyzer(system)
    fresh = ContextAnalyzer(system)
    fresh._neighbours = Lru(0)   # remembers nothing: every answer computed
    for context in contexts + contexts:
        assert cached.left_neighbours(context) == fresh.left_neighbours(context)


def test_the_benchmark_script_runs_and_writes_json(tmp_path):
    import json
    import subprocess
    import sys
    from pathlib import Path

    script = Path(__file__).resolve().parents[2] / "benchmarks" / "learning_keypath_bench.py"
    out = tmp_path / "bench.json"
    result = subprocess.run([sys.executable, str(script), "--rounds", "1", "--pause", "0.1", "--no-model",
                             "--json", str(out)], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    report = json.loads(out.read_text())
    assert [row["keys"] for row in report["rows"]][0] == "first key after learning"
    assert len(report["first_key_after_learning_ms"]) == 1 and not report["model"]
    assert "first key after learning" in result.stdout
