"""A key's reply leaves out a suggestion list the previous reply already carried (ime_frontend.wire):
typing with the list open sends it once, and every receiver still reads the whole list."""

from __future__ import annotations

import asyncio

import pytest
from dbus_fast import Message, MessageType
from dbus_fast.aio import MessageBus
from hypothesis import given, settings
from hypothesis import strategies as st

import ime_frontend.contexts as contexts
from ime_frontend import wire
from ime_frontend.client import EngineClient
from ime_frontend.contexts import EngineCore
from ime_frontend.service import serve
from karukan_engine.config import Config, SessionSettings
from karukan_engine.session.keys_cli import parse_keys
from karukan_engine.session.view import CandidateItem, CandidatePage, PreeditSpan, View
from karukan_testing.headless import HeadlessDesktop
from session_fakes import SuggestingConverter

TIMEOUT_S = 30
COMPLETIONS = [("ありがとう", "有難う"), ("ありがたい", "有り難い"), ("あるく", "歩く")]

# A small pool, so that consecutive views often carry the same list.
_LISTS = [None,
          CandidatePage((CandidateItem("1", "有難う"),), None, 0, 1, 1),
          CandidatePage((CandidateItem("1", "有難う"), CandidateItem("2", "有り難い")), None, 0, 1, 2),
          CandidatePage((CandidateItem("1", "有難う"), CandidateItem("2", "有り難い")), 1, 0, 1, 2)]
# (what is sent: "key" / "other" reply or a "signal", its list)
_messages = st.lists(st.tuples(st.sampled_from(["key", "other", "signal"]), st.sampled_from(_LISTS)), max_size=30)


def _view(suggestions: CandidatePage | None) -> View:
    return View(True, (PreeditSpan("あり"),), 2, suggestions=suggestions)


@settings(max_examples=200, deadline=None)
@given(_messages, st.randoms())
def test_every_reply_decodes_to_the_view_sent_and_an_unchanged_list_is_not_resent(messages, rnd):
    encoder, decoder = wire.ViewEncoder(), wire.ViewDecoder()
    sent: list[tuple[str, View, list]] = []
    previous_reply: CandidatePage | None = None
    for kind, suggestions in messages:
        view = _view(suggestions)
        fields = wire.encode_view(view) if kind == "signal" else encoder.encode_reply(view, kind == "key")
        if kind != "signal":
            resent = bool(fields[12])
            # A key's reply sends its list only when it differs from the previous reply's.
            assert resent == (suggestions is not None and (kind != "key" or suggestions != previous_reply))
            previous_reply = suggestions
        else:
            assert fields[13] != wire.SUGGESTIONS_UNCHANGED   # a signal always carries its list
        sent.append((kind, view, fields))
    # Replies are read in order; signals may be read before or after the replies around them
    # (fcitx5 queues signals during a blocking call, a Python client reads them first).
    replies = [m for m in sent if m[0] != "signal"]
    signals = [m for m in sent if m[0] == "signal"]
    for kind, view, fields in _interleave(replies, signals, rnd):
        decoded = decoder.decode_reply(fields) if kind != "signal" else wire.decode_view(fields)
        assert decoded == view


def _interleave(replies: list, signals: list, rnd) -> list:
    """Replies in their order, signals put anywhere among them."""
    out = list(replies)
    for signal in signals:
        out.insert(rnd.randint(0, len(out)), signal)
    return out


def test_a_forgotten_reply_makes_the_next_list_whole():
    encoder = wire.ViewEncoder()
    listed = _view(_LISTS[1])
    assert encoder.encode_reply(listed, key_reply=True)[12]
    encoder.forget()                     # that reply could not be sent
    assert encoder.encode_reply(listed, key_reply=True)[12]
    assert encoder.encode_reply(listed, key_reply=True)[12:14] == [[], wire.SUGGESTIONS_UNCHANGED]


# --- through the engine service, as a key sequence --------------------------------------------------

@pytest.fixture(scope="module")
def bus_address():
    with HeadlessDesktop() as desktop:
        yield desktop.start_session_bus()


def _call(member: str, signature: str, body: list) -> Message:
    return Message(destination=wire.BUS_NAME, path=wire.OBJECT_PATH, interface=wire.INTERFACE, member=member,
                   signature=signature, body=body)


def test_typing_with_the_list_open_sends_it_once_and_focus_in_sends_it_whole(bus_address, monkeypatch):
    monkeypatch.setattr(contexts, "SUGGESTION_DELAY_S", 0.3)   # the keys below come well within it
    core = lambda: EngineCore(SuggestingConverter(COMPLETIONS),   # noqa: E731
                              config=Config(session=SessionSettings(live_conversion=False)))

    async def body():
        ready = asyncio.get_running_loop().create_future()
        stop = asyncio.Event()
        task = asyncio.ensure_future(serve(core, bus_address, ready=ready.set_result, stop=stop))
        await asyncio.wait_for(ready, TIMEOUT_S)
        bus = await MessageBus(bus_address=bus_address).connect()
        late: list[list] = []
        bus.add_message_handler(lambda m: late.append(m.body[2]) if m.member == "ViewUpdated" else None)
        try:
            (ctx,) = (await bus.call(_call("CreateContext", "s", ["test"]))).body
            decoder = wire.ViewDecoder()

            async def press(keys: str) -> list[list]:
                """Press and release each key; the replies' wire fields."""
                out = []
                for _label, keysym, mods in parse_keys(keys):
                    for release in (False, True):
                        reply = await bus.call(_call("ProcessKey", "uuuub", [ctx, keysym, 0, mods, release]))
                        assert reply.message_type == MessageType.METHOD_RETURN, reply.body
                        out.append(reply.body[0])
                        assert decoder.decode_reply(reply.body[0]).suggestions == shown()
                return out

            listed: list[str] = []

            def shown() -> CandidatePage | None:
                return CandidatePage(tuple(CandidateItem(str(i + 1), t) for i, t in enumerate(listed)),
                                     None, 0, 1, len(listed)) if listed else None

            await press("ari")
            for _ in range(200):                  # the list for あり follows as a late view
                if late and late[-1][12]:
                    break
                await asyncio.sleep(0.02)
            assert [text for _label, text, _note in late[-1][12]] == ["有難う", "有り難い"]
            assert late[-1][13] == -1              # a signal carries its list whole
            listed[:] = ["有難う", "有り難い"]
            first, *rest = await press("k<BackSpace>")   # a pending k and its removal: same list
            assert [text for _label, text, _note in first[12]] == listed     # the first reply carries it
            assert [list(fields[12:14]) for fields in rest] == [[[], wire.SUGGESTIONS_UNCHANGED]] * 3   # then never again
            refocused = (await bus.call(_call("FocusIn", "u", [ctx]))).body[0]
            assert [text for _label, text, _note in refocused[12]] == listed  # a refocused client gets it whole
            assert decoder.decode_reply(refocused).suggestions == shown()
            # And a Python client (the IBus engine forwarding to the service) reads full views.
            client = await EngineClient.connect(bus_address)
            remote = await client.create_context("python")
            for _label, keysym, mods in parse_keys("ari"):
                await remote.process_key(keysym, mods, False)
            for _ in range(200):
                view = await remote.process_key(ord("k"), 0, True)   # a release: changes nothing
                if view.suggestions is not None and len(view.suggestions.items) == 2:
                    break
                await asyncio.sleep(0.02)
            again = await remote.process_key(ord("k"), 0, True)
            assert again.suggestions == view.suggestions and len(view.suggestions.items) == 2
            client.disconnect()
        finally:
            bus.disconnect()
            stop.set()
            assert await asyncio.wait_for(task, TIMEOUT_S) == 0

    asyncio.run(asyncio.wait_for(body(), TIMEOUT_S * 2))
