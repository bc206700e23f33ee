"""Suggestions through the context host, as the IBus engine and the engine service get them:
the key's reply comes first and carries none; the host starts the search from its event loop
once the reply is out, and the list reaches on_update as a late view. Keys typed before that
supersede the request, so they cost no search."""

from __future__ import annotations

import asyncio
import threading
import time

import ime_frontend.contexts as contexts
from ime_frontend.contexts import EngineCore
from karukan_engine.config import Config, SessionSettings
from karukan_engine.session.keys_cli import parse_keys
from session_fakes import SuggestingConverter

COMPLETIONS = [("ありがとう", "有難う"), ("ありがたい", "有り難い"), ("あるく", "歩く")]


def test_the_list_follows_the_reply_and_older_requests_cost_nothing(monkeypatch):
    monkeypatch.setattr(contexts, "SUGGESTION_DELAY_S", 0.3)   # keys below come well within it
    converter = SuggestingConverter(COMPLETIONS)
    core = EngineCore(converter, config=Config(session=SessionSettings(live_conversion=False)))

    async def body():
        late = []
        host = core.new_context(asyncio.get_running_loop(), late.append)
        replies = []
        for _label, keysym, mods in parse_keys("ari"):
            replies.append(await host.process_key(keysym, mods, False))
        assert all(v.suggestions is None for v in replies) and converter.asked == []
        deadline = time.monotonic() + 10
        while not late and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
        assert [i.text for i in late[-1].suggestions.items] == ["有難う", "有り難い"]
        assert converter.asked == ["あり"]              # the requests for あ were superseded unrun
        tab = await host.process_key(0xFF09, 0, False)
        assert tab.suggestions.cursor == 0 and tab.preedit_text == "有難う"
        await host.close()

    try:
        asyncio.run(body())
    finally:
        core.close()


def test_keys_waiting_for_the_session_workers_go_first(monkeypatch):
    monkeypatch.setattr(contexts, "SUGGESTION_DELAY_S", 0.05)
    converter = SuggestingConverter(COMPLETIONS)
    core = EngineCore(converter, config=Config(session=SessionSettings(live_conversion=False)))

    async def body():
        late = []
        host = core.new_context(asyncio.get_running_loop(), late.append)
        for _label, keysym, mods in parse_keys("ari"):
            await host.process_key(keysym, mods, False)
        gate = threading.Event()
        core.executor.submit(gate.wait, 10)        # the worker is busy with another client's call
        core.executor.submit(lambda: None)         # and a call waits behind it
        await asyncio.sleep(0.4)                   # eight delays: the search waited every time
        assert converter.asked == [] and not late
        gate.set()
        deadline = time.monotonic() + 10
        while not late and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
        assert converter.asked == ["あり"] and late[-1].suggestions is not None
        await host.close()

    try:
        asyncio.run(body())
    finally:
        core.close()
