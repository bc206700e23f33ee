"""Promises of the whole stage over any reading and any list (the committed tables, dates
included, a fixed and a random clock): the first candidate stays first, no surface twice, never
an exception; and what placement does with offsets and the converter's tail."""

from __future__ import annotations

from datetime import datetime

from hypothesis import given
from hypothesis import strategies as st

from karukan_engine.core.types import Candidate, Source
from karukan_engine.rewriters import RewriterStage, dates, tables
from karukan_engine.rewriters.choice_memory import ChoiceMemory
from karukan_engine.rewriters.placement import Addition, add

KANA = st.characters(min_codepoint=0x3041, max_codepoint=0x3096)
KNOWN = sorted(set(tables.shared().emoji) | set(tables.shared().symbols) | set(tables.shared().emoticons)
               | dates.READINGS | {"ひゃく", "にせんにじゅうろく", "100", "12", ":smile", ":+1", "かおもじ"})
READINGS = st.one_of(st.sampled_from(KNOWN), st.text(KANA, min_size=1, max_size=8),
                     st.text(min_size=0, max_size=12))
SURFACES = st.one_of(st.sampled_from(["今日", "猫", "矢印", "百", "100", "→", "🐱", "2026/12/02", "京"]),
                     st.text(min_size=1, max_size=4))
CLOCKS = st.datetimes(min_value=datetime(1900, 1, 1), max_value=datetime(2999, 12, 30))


def stage(now: datetime) -> RewriterStage:
    return RewriterStage(clock=lambda: now, memory=ChoiceMemory())


@given(READINGS, st.lists(SURFACES, min_size=1, max_size=12, unique=True), CLOCKS)
def test_the_first_word_of_a_reading_stays_first_and_nothing_repeats(reading, surfaces, now):
    if reading.startswith(":"):
        surfaces = ["顔"] + surfaces   # a word the converter found, not the typed query itself
    listed = [Candidate(s, "", Source.DICTIONARY) for s in surfaces]
    out = stage(now).rewrite(reading, listed)
    assert out[0].surface == listed[0].surface
    assert len({c.surface for c in out}) == len(out)
    assert {c.surface for c in listed} <= {c.surface for c in out}


@given(READINGS, st.lists(SURFACES, max_size=6), CLOCKS)
def test_never_raises_on_any_reading(reading, surfaces, now):
    stage(now).rewrite(reading, [Candidate(s) for s in surfaces])


@given(st.lists(SURFACES, max_size=8), st.lists(st.tuples(st.lists(SURFACES, max_size=5),
                                                          st.one_of(st.none(), st.integers(-2, 12))), max_size=4))
def test_placement_keeps_the_head_and_each_surface_once(surfaces, additions):
    listed = [Candidate(s) for s in surfaces]
    out = add(listed, [Addition(tuple(Candidate(s, "n") for s in group), at) for group, at in additions])
    if listed:
        assert out[0].surface == listed[0].surface
    assert len({c.surface for c in out}) == len(out)


def test_placement_moves_a_tail_candidate_up_and_leaves_an_earlier_one():
    listed = [Candidate(s) for s in ["矢印", "や", "→", "x", "y", "←"]]
    out = add(listed, [Addition((Candidate("→", "[記号]"), Candidate("←", "[記号]")), 2)])
    assert [c.surface for c in out] == ["矢印", "や", "→", "←", "x", "y"]
    assert out[2].annotation == "[記号]"


def test_only_a_lead_addition_may_take_the_first_place():
    listed = [Candidate("今日")]
    assert add(listed, [Addition((Candidate("a"),), 0)])[0].surface == "今日"
    assert add(listed, [Addition((Candidate("a"),), 0, may_lead=True)])[0].surface == "a"


def test_a_failing_rewriter_costs_nothing(monkeypatch):
    from karukan_engine.rewriters import stage as stage_module

    def broken(request):
        raise RuntimeError("boom")

    monkeypatch.setattr(stage_module, "_REWRITERS", (("emoji", broken),))
    listed = [Candidate("猫")]
    assert RewriterStage(memory=ChoiceMemory()).rewrite("ねこ", listed) == listed
