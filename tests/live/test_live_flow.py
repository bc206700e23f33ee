"""The live update flow is one way: one supersession per event, updates travel as values.

Session -> LiveLink.begin (once per event) -> LiveService.key -> scheduler -> LateUpdate ->
the link's deliver (the context host) -> Session.apply_live_update on the session's thread.
The "model" is the gated fake of test_frontend_service, with its gate open.
"""

from __future__ import annotations

import asyncio
import dataclasses
import threading

import pytest

from ime_frontend.contexts import EngineCore
from karukan_engine.live.live_service import LateUpdate, LiveLink, LiveService
from karukan_engine.scheduling.scheduler import Priority, Scheduler
from karukan_engine.session import Session
from service_fakes import TIMEOUT_S, GatedModelConverter, live_config

RELEASE = True


class CountingScheduler(Scheduler):
    """Counts supersessions per context."""

    def __init__(self) -> None:
        super().__init__(workers=1)
        self.begun: dict[object, int] = {}

    def begin_key(self, session):
        self.begun[session] = self.begun.get(session, 0) + 1
        return super().begin_key(session)


@pytest.fixture
def live():
    converter = GatedModelConverter()
    converter.gate.set()   # the model answers at once
    scheduler = CountingScheduler()
    service = LiveService(converter, scheduler)
    yield service, scheduler
    service.shutdown()
    scheduler.shutdown()


def attached_session(service: LiveService, context: int, delivered: list) -> Session:
    session = Session(service.converter, live_config())
    session.attach_live(LiveLink(service, context, delivered.append))
    return session


def test_each_event_supersedes_exactly_once(live):
    service, scheduler = live
    delivered: list[LateUpdate] = []
    session = attached_session(service, 7, delivered)
    for ch in "kai":
        before = scheduler.begun.get(7, 0)
        session.process_key(ord(ch))
        assert scheduler.begun[7] == before + 1, "a key press is one event: one supersession"
        session.process_key(ord(ch), 0, RELEASE)
        assert scheduler.begun[7] == before + 1, "a release changes nothing: no supersession"
    session.set_surrounding_text("前", 1)
    assert scheduler.begun[7] == 3
    assert scheduler.idle(TIMEOUT_S)
    (update,) = [u for u in delivered if u.epoch == scheduler.epoch(7)]
    view = session.apply_live_update(update)
    assert view is not None and view.preedit_text == "[かい]"
    assert scheduler.begun[7] == 3, "applying an update is not an event"


def test_updates_are_immutable_values_addressed_to_a_context_and_generation(live):
    service, scheduler = live
    delivered: list[LateUpdate] = []
    session = attached_session(service, 1, delivered)
    for ch in "ka":
        session.process_key(ord(ch))
    assert scheduler.idle(TIMEOUT_S)
    (update,) = delivered
    assert (update.context, update.epoch, update.reading, update.text) == (1, scheduler.epoch(1), "か", "[か]")
    with pytest.raises(dataclasses.FrozenInstanceError):
        update.text = "other"   # type: ignore[misc]
    # Stale: another context's, an older event's, a reading no longer composed.
    assert session.apply_live_update(dataclasses.replace(update, context=2)) is None
    assert session.apply_live_update(dataclasses.replace(update, epoch=update.epoch - 1)) is None
    assert session.apply_live_update(dataclasses.replace(update, reading="き")) is None
    assert session.view.preedit_text == "か"
    assert session.apply_live_update(update).preedit_text == "[か]"
    session.process_key(ord("i"))   # a newer event: the same update is now stale
    assert session.apply_live_update(update) is None


def test_contexts_are_told_apart_by_their_ids_not_their_objects(live):
    service, scheduler = live
    first: list[LateUpdate] = []
    second: list[LateUpdate] = []
    a = attached_session(service, 1, first)
    b = attached_session(service, 2, second)
    for ch in "ka":
        a.process_key(ord(ch))
    for ch in "ki":
        b.process_key(ord(ch))
    assert scheduler.idle(TIMEOUT_S)
    assert [u.text for u in first] == ["[か]"] and [u.text for u in second] == ["[き]"]
    assert b.apply_live_update(first[0]) is None   # addressed to context 1


def test_work_for_an_older_generation_is_dropped_unrun():
    scheduler = Scheduler(workers=1)
    ran = threading.Event()
    try:
        old = scheduler.begin_key("c")
        scheduler.begin_key("c")
        scheduler.submit("c", Priority.LIVE, lambda ctx: ran.set(), lambda r: None, epoch=old)
        assert scheduler.idle(5), "dropping stale work must wake idle() waiters"
        assert not ran.is_set() and scheduler.stats.dropped_stale == 1
    finally:
        scheduler.shutdown()


def test_the_engine_numbers_its_contexts_and_closing_one_leaves_the_others_work():
    converter = GatedModelConverter()
    core = EngineCore(converter, config=live_config())

    async def body():
        loop = asyncio.get_running_loop()
        views = []
        hosts = [core.new_context(loop, views.append) for _ in range(3)]
        assert len({h.context_id for h in hosts}) == 3
        for host in hosts:
            await host.process_key(ord("k"), 0, False)
            await host.process_key(ord("a"), 0, False)
        assert await asyncio.to_thread(converter.model_started, "か")
        hosts[0].detach()   # its pending refinement is dropped; the others' still arrive
        converter.gate.set()
        assert await asyncio.to_thread(core.live.scheduler.idle, TIMEOUT_S)
        for host in hosts[1:]:
            assert (await host.get_view()).preedit_text == "[か]"
        assert [v.preedit_text for v in views] == ["[か]", "[か]"]

    try:
        asyncio.run(asyncio.wait_for(body(), TIMEOUT_S * 2))
    finally:
        core.close()
