"""The cyclic garbage collector runs while the user pauses: frozen start-up objects, a raised
allocation threshold, and a collection once no call came for a while."""

from __future__ import annotations

import asyncio
import gc
import weakref

from hypothesis import given
from hypothesis import strategies as st

import ime_frontend.idle_gc as idle_gc
from ime_frontend.idle_gc import BACKSTOP_ALLOCATIONS, MIN_YOUNG, IdleCollector, generation_due


class Node:
    def __init__(self) -> None:
        self.other = self   # a cycle: only the collector frees it


@given(st.tuples(st.integers(0, 10**6), st.integers(0, 100), st.integers(0, 100)),
       st.tuples(st.integers(1, 10**6), st.integers(1, 100), st.integers(1, 100)))
def test_the_generation_due(counts, thresholds):
    due = generation_due(counts, thresholds)
    if counts[0] < MIN_YOUNG:
        assert due is None
    else:
        assert due == (2 if counts[2] >= thresholds[2] else 1)


def test_start_freezes_what_exists_and_raises_the_threshold(monkeypatch):
    monkeypatch.setattr(idle_gc, "_started", False)
    before = gc.get_threshold()
    try:
        IdleCollector.start()
        assert gc.get_freeze_count() > 0 and gc.get_threshold()[0] == BACKSTOP_ALLOCATIONS
        frozen = gc.get_freeze_count()
        IdleCollector.start()                        # once per process
        assert gc.get_freeze_count() == frozen
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)


def test_collects_once_the_calls_pause_and_never_while_they_come():
    async def body():
        loop = asyncio.get_running_loop()
        collector = IdleCollector(quiet_s=0.5)
        gc.collect()
        cycles = [Node() for _ in range(MIN_YOUNG * 2)]
        probe = weakref.ref(cycles[0])
        del cycles
        for _ in range(40):                          # a call every 20 ms for 0.8 s
            collector.activity(loop)
            await asyncio.sleep(0.02)
        assert collector.collections == 0 and probe() is not None
        await asyncio.sleep(1.5)
        assert collector.collections == 1 and probe() is None

    enabled = gc.isenabled()
    gc.disable()   # only the collector may free the cycles here
    try:
        asyncio.run(body())
    finally:
        if enabled:
            gc.enable()


def test_every_call_of_a_context_postpones_the_collection(monkeypatch):
    from ime_frontend.contexts import EngineCore
    from karukan_engine.config import Config, SessionSettings
    from session_fakes import SuggestingConverter

    core = EngineCore(SuggestingConverter([]), config=Config(session=SessionSettings(live_conversion=False)))
    scheduled = []
    monkeypatch.setattr(core.collector, "activity", lambda loop: scheduled.append(loop))

    async def body():
        host = core.new_context(asyncio.get_running_loop())
        await host.process_key(ord("a"), 0, False)
        await host.process_key(ord("i"), 0, False)
        assert scheduled == [asyncio.get_running_loop()] * 2
        await host.close()

    try:
        asyncio.run(body())
    finally:
        core.close()
