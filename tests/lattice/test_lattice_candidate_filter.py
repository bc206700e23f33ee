"""The segment candidate filter: Mozc's cost rule, and what it does to real segment lists."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from karukan_engine.core.types import ConversionRequest
from karukan_engine.dictionary.system import DEFAULT_DIR
from karukan_engine.lattice.candidate_filter import COST_OFFSET, MIN_COST, STRUCTURE_OFFSET, SegmentFilter, Spelling

costs = st.integers(-5000, 40000)
spellings = st.builds(Spelling, surface=st.text("あいう亜伊宇", min_size=1, max_size=4), cost=costs,
                      structure=costs, words=st.integers(1, 4), personal=st.booleans())


@given(top=spellings, rest=st.lists(spellings, max_size=8))
def test_a_spelling_is_dropped_exactly_when_far_costlier_in_both_total_and_structure(top, rest):
    chooser = SegmentFilter()
    assert chooser.keep(top)   # the best spelling is always shown
    for spelling in rest:
        protected = spelling.personal or spelling.words == 1 or len(spelling.surface) == 1
        dropped = (spelling.cost > max(MIN_COST, top.cost) + COST_OFFSET
                   and spelling.structure > max(MIN_COST, top.structure) + STRUCTURE_OFFSET)
        assert chooser.keep(spelling) == (protected or not dropped)


@given(top=spellings, spelling=spellings, extra=st.integers(0, 20000))
def test_a_costlier_spelling_is_never_kept_where_a_cheaper_one_is_dropped(top, spelling, extra):
    from dataclasses import replace

    first, second = SegmentFilter(), SegmentFilter()
    first.keep(top)
    second.keep(top)
    costlier = replace(spelling, cost=spelling.cost + extra, structure=spelling.structure + extra)
    assert not (second.keep(costlier) and not first.keep(spelling))


@pytest.mark.skipif(not (DEFAULT_DIR / "meta.json").is_file(), reason="compiled dictionary not built")
def test_word_salad_leaves_the_segment_list_and_real_spellings_stay(tmp_path):
    from karukan_engine.dictionary.learning import LearningStore
    from karukan_engine.dictionary.system import SystemDictionary
    from karukan_engine.dictionary.user_dictionary import UserDictionary
    from karukan_engine.lattice.converter import LatticeConverter

    dictionary = SystemDictionary()
    user = UserDictionary(tmp_path / "user.tsv", pos_names=dictionary.user_pos)
    converter = LatticeConverter(dictionary, user, LearningStore(tmp_path / "learning.json"))
    listed = [c.surface for c in converter.convert(ConversionRequest("あめです"))[0].candidates]
    assert {"雨です", "飴です", "天です", "アメです", "あめです"} <= set(listed)
    assert not {"在目です", "有目です"} & set(listed)
    # The user's own word shows in the segment list (the rule never drops it: property test above).
    user.add("あめ", "亜女", "名詞")
    listed = [c.surface for c in converter.convert(ConversionRequest("あめです"))[0].candidates]
    assert "亜女です" in listed


@pytest.mark.skipif(not (DEFAULT_DIR / "meta.json").is_file(), reason="compiled dictionary not built")
def test_the_segment_list_evaluation_scores_gold_bunsetsu():
    import importlib.util
    from pathlib import Path

    from karukan_engine.dictionary.system import SystemDictionary
    from karukan_engine.lattice.converter import LatticeConverter

    root = Path(__file__).resolve().parents[2]
    spec = importlib.util.spec_from_file_location("segment_candidates_eval", root / "benchmarks" / "segment_candidates_eval.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    rows = script.parse_anthy_segments("|きょうは|いい|てんき| |今日は|いい|天気|\n|あめです| |鮨です|\n")
    result = script.evaluate(LatticeConverter(SystemDictionary(), None, None), rows)
    assert result["segments"] == 4
    assert result["listed"] == 0.75 and result["first"] == 0.75   # 鮨です is no spelling of あめです
    assert result["mean_list"] > 1 and result["mean_rank_found"] == 0
