"""The flicker measure of benchmarks/flicker_replay.py (karukan_engine/evaluation/flicker.py)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from karukan_engine.evaluation.flicker import Step, accurate, head, measure


def test_a_kana_tail_is_not_a_flicker_but_an_odd_kanji_is():
    final = "今日はいい天気"
    steps = [Step("きょう", "きょう"), Step("今日は", "きょうは"), Step("今日は良い点", "きょうはいいてん"),
             Step("今日はいいてん", "きょうはいいてん"), Step(final, "きょうはいいてんき")]
    result = measure(steps, final)
    assert result.flicker_strings == ["今日は良い点"]
    assert result.strict == 3            # きょう and 今日はいいてん are not prefixes either
    assert result.rewritten_chars == 3   # 良い点 → いいてん; kana turning into kanji is not counted


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet="今日は天気かなカナ", min_size=1, max_size=12), st.data())
def test_growing_prefixes_of_the_final_text_never_flicker(final, data):
    cuts = sorted(data.draw(st.lists(st.integers(1, len(final)), max_size=6)))
    steps = [Step(final[:c], final[:c]) for c in cuts] + [Step(final, final)]
    result = measure(steps, final)
    assert result.flickers == result.strict == result.rewritten_chars == 0


@given(st.text(alphabet="今日はきょう", max_size=8), st.text(alphabet="きょうは", max_size=8))
def test_head_and_tail_make_the_shown_string(shown, reading):
    converted = head(shown, reading)
    assert shown.startswith(converted)
    assert reading.endswith(shown[len(converted):])


def test_accuracy_is_exact_and_folded():
    assert accurate("１０時", ["10時"]) == (False, True)
    assert accurate("今日", ["今日", "京"]) == (True, True)
