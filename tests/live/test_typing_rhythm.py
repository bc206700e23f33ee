"""A pause is judged by the context's own rhythm (karukan_engine/live/rhythm.py), and Space's
preparation waits for such a pause (LiveService.prepare_delay)."""

import statistics

import pytest
from hypothesis import given, strategies as st

from karukan_engine.conversion.plain import PlainConverter
from karukan_engine.core.types import ConversionRequest
from karukan_engine.live.live_service import MAX_PREPARE_DELAY_S, PREPARE_DELAY_S, LiveLink, LiveService
from karukan_engine.live.rhythm import FACTOR, WINDOW, TypingRhythm

gaps = st.lists(st.floats(min_value=0.0, max_value=5.0, allow_nan=False), max_size=30)


def fed(rhythm: TypingRhythm, context, steps) -> None:
    at = 100.0
    rhythm.event(context, at)
    for gap in steps:
        at += gap
        rhythm.event(context, at)


@given(gaps, st.floats(0.0, 0.5), st.floats(0.0, 1.0))
def test_the_pause_stays_within_its_bounds(steps, floor, more):
    rhythm = TypingRhythm(floor, floor + more)
    fed(rhythm, "c", steps)
    assert floor <= rhythm.pause_s("c") <= floor + more


@given(gaps)
def test_the_pause_is_twice_the_median_of_the_recent_gaps(steps):
    rhythm = TypingRhythm(0.0, 100.0)
    fed(rhythm, "c", steps)
    recent = steps[-WINDOW:]
    expected = FACTOR * statistics.median(recent) if len(recent) >= 2 else 0.0
    assert rhythm.pause_s("c") == pytest.approx(expected)


@given(gaps, st.floats(1.0, 4.0))
def test_slower_typing_never_means_a_shorter_pause(steps, slower):
    fast, slow = TypingRhythm(0.1, 0.3), TypingRhythm(0.1, 0.3)
    fed(fast, "c", steps)
    fed(slow, "c", [gap * slower for gap in steps])
    assert slow.pause_s("c") >= fast.pause_s("c")


def test_contexts_keep_their_own_rhythm_and_a_closed_one_is_forgotten():
    rhythm = TypingRhythm(0.1, 0.3)
    fed(rhythm, "fast", [0.05] * 8)
    fed(rhythm, "slow", [0.14] * 8)
    assert rhythm.pause_s("fast") == 0.1                    # the floor: 2 x 50 ms
    assert rhythm.pause_s("slow") == pytest.approx(0.28)
    rhythm.forget("slow")
    assert rhythm.pause_s("slow") == 0.1
    rhythm.event("slow", 1.0)
    rhythm.event("slow", 0.5)                               # a clock that went back is no gap
    assert rhythm.pause_s("slow") == 0.1


def test_one_long_pause_does_not_make_the_next_one_long():
    rhythm = TypingRhythm(0.1, 0.3)
    fed(rhythm, "c", [0.1] * 5 + [4.0] + [0.1] * 2)
    assert rhythm.pause_s("c") == pytest.approx(0.2)


def test_bad_bounds_are_refused():
    with pytest.raises(ValueError):
        TypingRhythm(0.3, 0.1)
    with pytest.raises(ValueError):
        TypingRhythm(0.1, 0.3, factor=0)


class Clock:
    def __init__(self):
        self.now = 50.0

    def __call__(self):
        return self.now


def test_a_typist_at_ten_keys_a_second_gets_no_preparation_between_their_keys():
    clock = Clock()
    service = LiveService(PlainConverter(), clock=clock)
    deferred = []
    link = LiveLink(service, 7, lambda update: None, lambda epoch, work, after_s: deferred.append(after_s))
    try:
        link.prepare(link.begin(), ConversionRequest("か"))
        assert deferred == [PREPARE_DELAY_S]                 # nothing known of the rhythm yet
        for _ in range(10):                                  # keys 100 ms apart
            clock.now += 0.1
            epoch = link.begin()
        deferred.clear()
        link.prepare(epoch, ConversionRequest("かいぎの"))
        assert deferred == [pytest.approx(0.2)]              # a pause is longer than their gaps
        for _ in range(10):                                  # a slow typist: capped
            clock.now += 0.5
            link.begin()
        assert service.prepare_delay(7) == MAX_PREPARE_DELAY_S
        service.close_context(7)
        assert service.prepare_delay(7) == PREPARE_DELAY_S
    finally:
        service.shutdown()
