"""What the candidate window shows beside the list: each candidate's annotation (the script forms
labelled wherever they stand), the page indicator (Mozc's 2/37) and the suggestion list's hint."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from karukan_engine.core.types import Candidate, Segment
from karukan_engine.session.output import candidate_page
from karukan_engine.session.segments import Conversion, SegmentChoice
from karukan_engine.session.suggestions import SuggestionList
from karukan_engine.session.view import SUGGESTION_HINT, View
from karukan_engine.transliteration import Form, script_variants


def conversion_at(total: int, page_size: int, index: int) -> Conversion:
    candidates = [Candidate(f"候補{i}") for i in range(total)]
    return Conversion("こうほ", [SegmentChoice("こうほ", candidates, index)], page_size)


@given(st.integers(1, 60), st.integers(1, 9), st.data())
def test_the_indicator_counts_the_selected_candidate_over_all_pages(total, page_size, data):
    index = data.draw(st.integers(0, total - 1))
    page = candidate_page(conversion_at(total, page_size, index))
    assert page.items[page.cursor].text == f"候補{index}"
    assert page.position == index + 1
    assert View(True, candidates=page).candidate_footer == f"[{index + 1}/{total}]"


def test_a_suggestion_list_shows_the_hint_until_it_is_entered():
    items = (Candidate("ありがとう"), Candidate("ありがとうございます"))
    shown = SuggestionList("ありが", items)
    assert View(True, suggestions=shown.page()).candidate_footer == SUGGESTION_HINT
    assert View(True, suggestions=shown.entered().page()).candidate_footer == "[1/2]"
    assert View(True, suggestions=shown.entered().moved(1).page()).candidate_footer == "[2/2]"
    assert View(True).candidate_footer == ""


def test_the_kana_forms_in_the_converters_list_carry_their_form():
    segment = Segment("かんじ", (Candidate("漢字"), Candidate("カンジ"), Candidate("かんじ"), Candidate("感じ", "[形]")))
    listed = SegmentChoice("かんじ", segment=segment).candidates
    notes = {c.surface: c.annotation for c in listed}
    assert notes["カンジ"] == Form.KATAKANA.label and notes["かんじ"] == Form.HIRAGANA.label
    assert notes["漢字"] == "" and notes["感じ"] == "[形]"          # an annotation of its own stays
    assert [c.surface for c in listed[:4]] == ["漢字", "カンジ", "かんじ", "感じ"]


kana = st.text(st.sampled_from("かんじカンジｶﾝｼﾞabc"), min_size=1, max_size=4)


@given(kana, st.lists(st.tuples(kana, st.sampled_from(["", "[形]"])), min_size=1, max_size=8))
def test_every_listed_script_form_is_annotated_and_the_order_is_kept(reading, offered):
    segment = Segment(reading, tuple(Candidate(s, note) for s, note in offered))
    listed = SegmentChoice(reading, segment=segment).candidates
    surfaces = [c.surface for c in listed]
    assert len(surfaces) == len(set(surfaces))
    first_seen = list(dict.fromkeys(s for s, _note in offered if s))
    assert surfaces[:len(first_seen)] == first_seen
    forms = {c.surface for c in script_variants(reading)}
    assert all(c.annotation for c in listed if c.surface in forms)
