"""Placement: the kana forms keep their first-page place; symbol letters go to the end."""

from hypothesis import given
from hypothesis import strategies as st


@given(st.lists(st.sampled_from("あいうえおかきくけこ"), min_size=1, max_size=14, unique=True),
       st.lists(st.sampled_from("ABCDEFGHIJ"), max_size=10, unique=True),
       st.integers(0, 13), st.sets(st.sampled_from("あいうえおかきくけこ"), max_size=2))
def test_kana_forms_on_the_first_page_stay_there(before, added, at, pinned):
    from karukan_engine.core.types import Candidate
    from karukan_engine.rewriters.placement import Addition, add, keep_on_first_page

    page = 9
    listed = [Candidate(s) for s in before]
    after = keep_on_first_page(listed, add(listed, [Addition(tuple(Candidate(s) for s in added), at)]), pinned, page)
    surfaces = [c.surface for c in after]
    assert sorted(surfaces) == sorted(before + added)                 # nothing lost, nothing doubled
    assert surfaces[0] == before[0]                                   # the first stays first
    for s in pinned:
        if s in before[:page]:
            assert surfaces.index(s) < page                           # still on the first page
    others = [s for s in surfaces if s not in pinned]
    assert others == [s for s in [c.surface for c in add(listed, [Addition(tuple(Candidate(s) for s in added), at)])]
                      if s not in pinned]                              # the rest keeps its order


def test_symbol_letters_go_to_the_end_marks_come_early():
    from karukan_engine.rewriters.symbols import is_mark

    assert all(is_mark(s) for s in ("→", "○", "「」", "★", "〃", "Ⅳ"))
    assert not any(is_mark(s) for s in ("丿", "Χ", "々", "ゝ", "\U0001b099", ""))
