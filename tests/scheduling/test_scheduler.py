"""The conversion scheduler: supersession, cancellation, priorities, fairness, deadlines.

The "model" here is deliberately slow: each job blocks on an event the test releases, so the
order of events is forced, not timed.
"""

import random
import threading

import pytest
from hypothesis import given, settings, strategies as st

from karukan_engine.scheduling.deadline import BudgetChooser, Option, StageTimings
from karukan_engine.scheduling.scheduler import Priority, Scheduler

WAIT = 10.0  # generous: only reached when something is broken


@pytest.fixture
def scheduler():
    s = Scheduler(workers=1)
    yield s
    s.shutdown()


def blocker(scheduler, session="gate"):
    """Occupy the single worker until the returned event is set."""
    started, release = threading.Event(), threading.Event()

    def work(ctx):
        started.set()
        release.wait(WAIT)
        return None

    scheduler.submit(session, Priority.EXPLICIT, work, lambda r: None)
    assert started.wait(WAIT)
    return release


def test_result_of_a_superseded_job_is_never_delivered(scheduler):
    started, release = threading.Event(), threading.Event()
    delivered = []

    def slow_model(ctx):
        started.set()
        release.wait(WAIT)
        return "old"

    scheduler.begin_key("s")
    scheduler.submit("s", Priority.LIVE, slow_model, delivered.append)
    assert started.wait(WAIT)
    scheduler.begin_key("s")          # the user typed another key meanwhile
    release.set()
    assert scheduler.idle(WAIT)
    assert delivered == []
    assert scheduler.stats.dropped_stale == 1


def test_running_job_is_told_to_stop(scheduler):
    started, seen = threading.Event(), threading.Event()
    delivered = []

    def cancellable(ctx):
        started.set()
        for _ in range(1000):
            if ctx.cancelled():
                seen.set()
                ctx.check()          # raises Cancelled, swallowed by the scheduler
            threading.Event().wait(0.01)
        return "never"

    scheduler.submit("s", Priority.LIVE, cancellable, delivered.append)
    assert started.wait(WAIT)
    scheduler.begin_key("s")
    assert seen.wait(WAIT)
    assert scheduler.idle(WAIT)
    assert delivered == [] and scheduler.stats.failed == 0


def test_queued_stale_jobs_never_run(scheduler):
    release = blocker(scheduler)
    ran = []
    scheduler.submit("s", Priority.LIVE, lambda ctx: ran.append("old"), lambda r: None)
    scheduler.begin_key("s")
    scheduler.submit("s", Priority.LIVE, lambda ctx: ran.append("new") or "new", lambda r: None)
    release.set()
    assert scheduler.idle(WAIT)
    assert ran == ["new"]


def test_current_result_is_delivered(scheduler):
    got = []
    scheduler.begin_key("s")
    scheduler.submit("s", Priority.LIVE, lambda ctx: "今日", got.append)
    assert scheduler.idle(WAIT)
    assert got == ["今日"]


def test_other_sessions_are_not_superseded(scheduler):
    release = blocker(scheduler)
    got = []
    scheduler.submit("a", Priority.LIVE, lambda ctx: "a", got.append)
    scheduler.begin_key("b")
    release.set()
    assert scheduler.idle(WAIT)
    assert got == ["a"]


def test_explicit_before_live_before_anticipation_before_suggestion(scheduler):
    release = blocker(scheduler)
    order = []
    for session, prio in (("w", Priority.PREPARE), ("x", Priority.SUGGESTION), ("a", Priority.ANTICIPATE),
                          ("y", Priority.LIVE), ("z", Priority.EXPLICIT)):
        scheduler.submit(session, prio, lambda ctx, p=prio: order.append(p) or p, lambda r: None)
    release.set()
    assert scheduler.idle(WAIT)
    assert order == [Priority.EXPLICIT, Priority.LIVE, Priority.ANTICIPATE, Priority.SUGGESTION, Priority.PREPARE]


def test_sessions_are_served_fairly(scheduler):
    release = blocker(scheduler)
    order = []
    for i in range(3):
        scheduler.submit("a", Priority.LIVE, lambda ctx, i=i: order.append(f"a{i}"), lambda r: None)
    scheduler.submit("b", Priority.LIVE, lambda ctx: order.append("b0"), lambda r: None)
    release.set()
    assert scheduler.idle(WAIT)
    assert order == ["a0", "b0", "a1", "a2"]


def test_late_job_expires_when_asked(scheduler):
    release = blocker(scheduler)
    ran = []
    scheduler.submit("s", Priority.LIVE, lambda ctx: ran.append(1), lambda r: None,
                     budget_s=0.0, expire_late=True)
    scheduler.submit("s", Priority.LIVE, lambda ctx: ran.append(2), lambda r: None, budget_s=0.0)
    release.set()
    assert scheduler.idle(WAIT)
    assert ran == [2] and scheduler.stats.expired == 1


def test_a_failing_job_does_not_kill_the_worker(scheduler):
    def boom(ctx):
        raise RuntimeError("model crashed")

    got = []
    scheduler.submit("s", Priority.LIVE, boom, got.append)
    scheduler.submit("s", Priority.LIVE, lambda ctx: "ok", got.append)
    assert scheduler.idle(WAIT)
    assert got == ["ok"] and scheduler.stats.failed == 1


def test_remaining_budget_is_visible_to_the_work(scheduler):
    seen = []
    scheduler.submit("s", Priority.LIVE, lambda ctx: seen.append(ctx.remaining()), lambda r: None,
                     budget_s=5.0)
    scheduler.submit("s", Priority.LIVE, lambda ctx: seen.append(ctx.remaining()), lambda r: None)
    assert scheduler.idle(WAIT)
    assert 0 < seen[0] <= 5.0 and seen[1] == float("inf")


@given(st.lists(st.tuples(st.integers(0, 2), st.sampled_from(["key", "live", "suggest"])),
                min_size=1, max_size=40),
       st.integers(1, 3), st.integers(0, 2**32 - 1))
@settings(max_examples=40, deadline=None)
def test_no_stale_result_is_ever_shown(events, workers, seed):
    """Random keys and jobs over several sessions and workers; a client tracks its current key.

    Delivery happens under the session lock that begin_key takes too, so the client's check
    below is exact: a result tagged with an older key would be a stale update on screen.
    """
    rng = random.Random(seed)
    sched = Scheduler(workers=workers)
    current = {}
    stale = []
    delivered = []
    try:
        for session, kind in events:
            if kind == "key":
                current[session] = sched.begin_key(session)
                continue
            tag = current.get(session, 0)
            delay = rng.choice([0, 0, 0.001, 0.003])
            prio = Priority.LIVE if kind == "live" else Priority.SUGGESTION

            def work(ctx, tag=tag, delay=delay):
                threading.Event().wait(delay)
                return tag

            def deliver(tag, session=session):
                delivered.append(tag)
                if tag != current.get(session, 0):
                    stale.append((session, tag))

            sched.submit(session, prio, work, deliver)
            if rng.random() < 0.3:
                threading.Event().wait(0.001)
        assert sched.idle(WAIT)
    finally:
        sched.shutdown()
    assert stale == []
    stats = sched.stats
    assert stats.delivered == len(delivered)
    assert stats.delivered + stats.dropped_stale + stats.empty == stats.submitted


def test_budget_chooser_degrades_to_what_fits():
    timings = StageTimings(window=8, quantile=1.0, margin=1.0)
    chooser = BudgetChooser(timings, retry_after=1000)
    model = Option("model", (("prefill", 10), ("decode/1", 10)))
    light = Option("light", (("light/prefill", 10), ("light/decode/1", 10)))
    options = [model, light]
    # Never measured: try the best option, that is how it gets measured.
    assert chooser.choose(options, 0.05) is model
    timings.observe("prefill", 0.010, units=10)      # 1 ms per token
    timings.observe("decode/1", 0.050, units=10)     # 5 ms per step -> 60 ms in all
    timings.observe("light/prefill", 0.001, units=10)
    timings.observe("light/decode/1", 0.010, units=10)  # 11 ms in all
    assert chooser.choose(options, 0.100) is model
    assert chooser.choose(options, 0.050) is light
    assert chooser.choose(options, 0.005) is None   # keep the dictionary result


def test_budget_chooser_retries_a_refused_option_eventually():
    timings = StageTimings(margin=1.0)
    timings.observe("model", 1.0)
    chooser = BudgetChooser(timings, retry_after=3)
    model = Option("model", (("model", 1),))
    picks = []
    for _ in range(6):
        picks.append(chooser.choose([model], 0.01))
        if picks[-1] is model:
            timings.observe("model", 1.0)  # the retry ran and was still slow
    assert picks == [None, None, model, None, None, model]


def test_a_retry_measures_afresh_so_a_slow_spell_is_forgotten():
    timings = StageTimings(margin=1.0)
    for _ in range(10):
        timings.observe("model", 1.0)      # a slow spell fills the window
    chooser = BudgetChooser(timings, retry_after=3)
    model = Option("model", (("model", 1),))
    assert [chooser.choose([model], 0.05) for _ in range(3)] == [None, None, model]
    timings.observe("model", 0.01)         # the retry was fast: the spell is over
    assert [chooser.choose([model], 0.05) for _ in range(3)] == [model, model, model]


@given(st.lists(st.floats(0.0, 1.0), min_size=1, max_size=40), st.floats(0.0, 1.0))
def test_forgotten_stages_are_estimated_from_new_samples_only(old, new):
    timings = StageTimings(window=16, quantile=0.9, margin=1.2)
    for seconds in old:
        timings.observe("s", seconds)
    timings.forget(["s"])
    assert timings.estimate([("s", 1)]) is None
    timings.observe("s", new)
    assert timings.per_unit("s") == pytest.approx(new * 1.2)


def test_stage_timings_use_a_high_quantile_with_margin():
    timings = StageTimings(window=4, quantile=0.75, margin=1.5)
    for ms in (1, 2, 3, 100, 4):   # the window keeps the last four: 2, 3, 100, 4
        timings.observe("s", ms / 1000)
    assert timings.per_unit("s") == pytest.approx(0.004 * 1.5)
    assert timings.estimate([("s", 2), ("never", 0)]) == pytest.approx(0.012)
    assert timings.estimate([("unknown", 1)]) is None


def test_unsupersedable_job_survives_newer_keys(scheduler):
    release = blocker(scheduler)
    got = []
    scheduler.submit("s", Priority.EXPLICIT, lambda ctx: (ctx.cancelled(), "explicit"), got.append,
                     supersedable=False)
    scheduler.submit("s", Priority.LIVE, lambda ctx: "live", got.append)
    scheduler.begin_key("s")
    release.set()
    assert scheduler.idle(WAIT)
    assert got == [(False, "explicit")]
