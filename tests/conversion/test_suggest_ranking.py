"""The order of the model's suggestion list (issue 30 item 8): the dictionary's best completion
first, the n-gram's continuation after it, and the model reordering only completions near the
best one's cost (suggest.shown_order, suggest.blended)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from karukan_engine.conversion.suggest import DICTIONARY_LIMIT, blended, model_pool, shown_order
from karukan_engine.core.types import Completion, Source
from karukan_engine.dictionary.system import DEFAULT_DIR, SystemDictionary


def completion(surface: str, source: Source = Source.DICTIONARY) -> Completion:
    return Completion(surface, source=source, reading="よみ" + surface)


def surfaces(items) -> list[str]:
    return [c.surface for c in items]


def test_the_continuation_follows_the_best_completion_and_takes_no_slot_when_it_repeats_one():
    ranked = [completion(s) for s in ("ありがとう", "ありがとうございます", "ありがとうございました", "ありがとぅ")]
    continued = [completion("ありがとうございます", Source.MODEL)]
    # Before: the continuation first, and its repeat gave a fourth slot to ありがとぅ.
    assert surfaces(shown_order([], ranked, continued, 6)) == ["ありがとう", "ありがとうございます", "ありがとうございました"]
    new = [completion("ありがとうね", Source.MODEL)]
    assert surfaces(shown_order([], ranked, new, 6)) == ["ありがとう", "ありがとうね", "ありがとうございます",
                                                         "ありがとうございました"]
    learned = [completion("有難う", Source.LEARNING)]
    assert surfaces(shown_order(learned, ranked, new, 3)) == ["有難う", "ありがとう", "ありがとうね"]


@pytest.mark.skipif(not (DEFAULT_DIR / "meta.json").is_file(), reason="compiled dictionary not built")
def test_a_model_that_likes_short_spellings_does_not_lift_far_entries():
    """ありがと: the dictionary's completions, scored as a model that finds the odd short
    spellings (ありがとぅ, ありがとう的) far likelier, as the bundled model's whole-spelling NLL
    can. Unbounded (margin inf, the rule before) they rose into the three shown."""
    pool = model_pool("ありがと", [], SystemDictionary())
    shown = [c.surface for _cost, c in pool][:DICTIONARY_LIMIT]
    assert shown == ["ありがとう", "ありがとうございます", "ありがとうございました"]
    junk = {"ありがとぅ", "ありがとう的"}
    assert junk <= {c.surface for _cost, c in pool}
    nats = [0.5 if c.surface in junk else 8.0 + len(c.surface) for _cost, c in pool]
    assert junk & set(surfaces(blended(pool, nats, float("inf"))[:DICTIONARY_LIMIT]))   # the old rule
    assert surfaces(blended(pool, nats)[:DICTIONARY_LIMIT]) == shown


_surfaces = st.sampled_from(["あ", "い", "う", "え", "お", "か", "き"])
_lists = st.lists(_surfaces, max_size=6)


@settings(max_examples=300, deadline=None)
@given(_lists, _lists, _lists, st.integers(0, 8))
def test_shown_order_keeps_the_best_completion_first_after_the_learned(learned, ranked, continued, limit):
    learned_c = [completion(s, Source.LEARNING) for s in learned]
    ranked_c = [completion(s) for s in ranked]
    continued_c = [completion(s, Source.MODEL) for s in continued]
    out = shown_order(learned_c, ranked_c, continued_c, limit)
    texts = surfaces(out)
    assert len(texts) == len(set(texts)) and len(out) <= limit
    assert len(out) <= len(set(learned)) + len(set(continued)) + DICTIONARY_LIMIT
    assert set(texts) <= set(learned) | set(ranked[:DICTIONARY_LIMIT]) | set(continued)
    # learned first, as they came (once each)
    firsts = list(dict.fromkeys(learned))[:limit]
    assert texts[:len(firsts)] == firsts
    # then the dictionary's best, unless learned already shows it: no continuation before it
    if ranked and ranked[0] not in learned and len(out) > len(firsts):
        assert out[len(firsts)].surface == ranked[0] and out[len(firsts)].source == Source.DICTIONARY
    # the ranked ones keep their order
    kept = [c.surface for c in out if c.source == Source.DICTIONARY]
    assert kept == [s for s in dict.fromkeys(ranked[:DICTIONARY_LIMIT]) if s in kept]
