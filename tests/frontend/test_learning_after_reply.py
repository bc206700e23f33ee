"""A commit's choices are learned after its reply (issue 30: nothing from learning on the key
path): through the context host the Return's view comes back before the converter records
anything, the record follows a few ms later without another call, and any event learns what is
still pending before it converts. Without a host (`karukan keys`) learning is immediate."""

from __future__ import annotations

import asyncio

from hypothesis import given, settings
from hypothesis import strategies as st

from ime_frontend.contexts import LEARN_AFTER_S, EngineCore
from karukan_engine.config import Config, SessionSettings
from karukan_engine.live.live_service import LiveLink, LiveService
from karukan_engine.session import Session
from karukan_engine.session.keys_cli import parse_keys
from session_fakes import SuggestingConverter

WORDS = {"かいぎ": ["会議", "回議"], "あめ": ["雨", "飴"]}
CONFIG = Config(session=SessionSettings(live_conversion=False))


def press(session: Session, keys: str):
    view = None
    for _, keysym, mods in parse_keys(keys):
        view = session.process_key(keysym, mods)
    return view


def hosted(body) -> SuggestingConverter:
    """Run body(host, converter) with one context of an engine core over the fake converter."""
    converter = SuggestingConverter([], words=WORDS)
    core = EngineCore(converter, config=CONFIG)

    async def run():
        await body(core.new_context(asyncio.get_running_loop()), converter)

    try:
        asyncio.run(run())
    finally:
        core.close()
    return converter


def test_through_the_host_the_reply_comes_first_and_the_record_follows():
    async def body(host, converter):
        for _, keysym, mods in parse_keys("kaigi<space><space>"):
            await host.process_key(keysym, mods, False)
        _, keysym, mods = next(iter(parse_keys("<Return>")))
        view = await host.process_key(keysym, mods, False)
        assert view.commit == "回議" and converter.recorded == []      # answered, not learned yet
        await asyncio.sleep(LEARN_AFTER_S + 0.2)
        assert converter.recorded == [([("かいぎ", "回議")], "")]   # learned with no other call
        await host.close()

    hosted(body)


def test_a_context_closed_right_after_a_commit_learns_it_first():
    async def body(host, converter):
        for _, keysym, mods in parse_keys("ame<space><Return>"):
            await host.process_key(keysym, mods, False)
        await host.close()
        assert converter.recorded == [([("あめ", "雨")], "")]   # before close returned

    hosted(body)


@settings(max_examples=30, deadline=None)
@given(then=st.lists(st.sampled_from(["a", "<space>", "<Return>", "<BackSpace>", "<Escape>", "kaigi", "ame",
                                      "ame<space><Return>", "kaigi<space><space><Return>"]), max_size=6))
def test_an_event_learns_what_is_pending_before_it_converts(then):
    # A session whose link never runs the host's learning: every event must learn first, so the
    # converter sees the same records in the same order as a session that learns at once.
    linked, direct = SuggestingConverter([], words=WORDS), SuggestingConverter([], words=WORDS)
    service = LiveService(linked)
    try:
        with_link = Session(linked, CONFIG)
        with_link.attach_live(LiveLink(service, 1, lambda update: None, lambda epoch, work, after_s: None))
        without = Session(direct, CONFIG)
        for keys in ["kaigi<space><space><Return>", *then]:
            press(with_link, keys)
            press(without, keys)
            # the same records in the same order, behind by at most this event's own commit
            assert linked.recorded == direct.recorded[:len(linked.recorded)]
            assert len(direct.recorded) - len(linked.recorded) <= 1
        with_link.learn_pending()
        assert linked.recorded == direct.recorded
    finally:
        service.shutdown()


def test_the_service_shutting_down_right_after_a_commit_learns_it_first():
    from ime_frontend.service import EngineService

    class Bus:   # what EngineService needs of a bus here: nothing is sent
        connected = False

    converter = SuggestingConverter([], words=WORDS)
    core = EngineCore(converter, config=CONFIG)

    async def body():
        service = EngineService(Bus(), core)
        (ctx_id,) = await service.create_context(":1.app", ["test"])
        host = service._context(":1.app", ctx_id)
        for _, keysym, mods in parse_keys("ame<space><Return>"):
            await host.process_key(keysym, mods, False)
        service.close()
        await service.close_contexts()
        assert converter.recorded == [([("あめ", "雨")], "")] and service.context_count == 0

    try:
        asyncio.run(body())
    finally:
        core.close()
