"""Clients take turns on the session workers: the turn order (properties), the executor, and the
engine service giving a quiet client its turn while another floods sixteen contexts."""

from __future__ import annotations

import asyncio
import contextvars
import threading
from collections import Counter, defaultdict

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dbus_fast import Message

from ime_frontend import wire
from ime_frontend.bus import MessageBus
from ime_frontend.contexts import ContextHost, EngineCore
from ime_frontend.fair import CLIENT, FairExecutor, NestedTurns, TurnQueue
from karukan_testing.headless import HeadlessDesktop
from ime_frontend.service import EngineService, serve
from karukan_engine.conversion.plain import PlainConverter
from karukan_engine.session import Session

TIMEOUT_S = 60

# --- TurnQueue: pure ordering -----------------------------------------------------------------

LANES = st.sampled_from("abcdef")


def round_robin(pushes: list[str]) -> list[tuple[str, int]]:
    """The reference order: round r serves the r-th item of every lane that has one, lanes in
    the order they first appeared."""
    per_lane: dict[str, list[int]] = defaultdict(list)
    for i, lane in enumerate(pushes):
        per_lane[lane].append(i)
    order = list(dict.fromkeys(pushes))
    out = []
    for r in range(max((len(v) for v in per_lane.values()), default=0)):
        out += [(lane, per_lane[lane][r]) for lane in order if r < len(per_lane[lane])]
    return out


@given(pushes=st.lists(LANES, max_size=80))
def test_everything_queued_at_once_is_served_round_robin(pushes):
    queue: TurnQueue[int] = TurnQueue()
    for i, lane in enumerate(pushes):
        queue.push(lane, i)
    assert len(queue) == len(pushes)
    served = [queue.pop() for _ in range(len(pushes))]
    assert served == round_robin(pushes)
    assert len(queue) == 0
    with pytest.raises(IndexError):
        queue.pop()


@settings(max_examples=200)
@given(ops=st.lists(st.one_of(LANES, st.just(None)), max_size=120))
def test_a_waiting_lane_is_served_before_any_other_lane_is_served_twice(ops):
    """Interleaved pushes (a lane name) and pops (None): each lane's items come out in order, and
    while a lane waits, no other lane is served twice (so at most one turn per other lane)."""
    queue: TurnQueue[int] = TurnQueue()
    pushed: dict[str, list[int]] = defaultdict(list)
    popped: dict[str, list[int]] = defaultdict(list)
    served_while_waiting: dict[str, Counter] = {}
    for n, op in enumerate(ops):
        if op is not None:
            queue.push(op, n)
            pushed[op].append(n)
            served_while_waiting.setdefault(op, Counter())
            continue
        if not len(queue):
            continue
        lane, item = queue.pop()
        popped[lane].append(item)
        served_while_waiting[lane] = Counter()           # its turn came: the wait starts over
        for other, counts in served_while_waiting.items():
            if other != lane and len(popped[other]) < len(pushed[other]):
                counts[lane] += 1
                assert counts[lane] <= 1, (other, lane)
        for other in list(served_while_waiting):
            if len(popped[other]) == len(pushed[other]):
                served_while_waiting[other] = Counter()   # not waiting any more
    for lane, items in popped.items():
        assert items == pushed[lane][: len(items)]


@given(pushes=st.lists(st.tuples(st.sampled_from("ab"), st.sampled_from("xyz")), max_size=60))
def test_nested_turns_take_turns_between_clients_then_between_their_contexts(pushes):
    queue: NestedTurns[int] = NestedTurns()
    for i, (client, ctx) in enumerate(pushes):
        queue.push(client, ctx, i)
    served = [queue.pop() for _ in range(len(pushes))]
    assert len(queue) == 0
    # Between clients: round robin, as TurnQueue does with whole clients.
    assert [c for c, _x, _i in served] == [lane for lane, _ in round_robin([c for c, _x in pushes])]
    # Inside each client: its contexts take turns in the same way.
    for client in "ab":
        mine = [(x, i) for c, x, i in served if c == client]
        contexts = [x for c, x in pushes if c == client]
        indices = [i for i, (c, _x) in enumerate(pushes) if c == client]
        expected = [(x, indices[j]) for x, j in round_robin(contexts)]
        assert mine == expected


# --- FairExecutor ---------------------------------------------------------------------------


def _submit_in_lane(executor, lane: str, fn, *args):
    context = contextvars.copy_context()
    context.run(CLIENT.set, lane)
    return context.run(executor.submit, fn, *args)


def _order_after_a_busy_worker(executor) -> list[str]:
    """Block the worker, queue 16 calls from a flooding client then one from a quiet one;
    the order the calls ran in."""
    gate, started = threading.Event(), threading.Event()
    ran: list[str] = []

    def hold() -> None:
        started.set()
        gate.wait(TIMEOUT_S)

    first = _submit_in_lane(executor, "flood", hold)
    assert started.wait(TIMEOUT_S)
    futures = [_submit_in_lane(executor, "flood", ran.append, "flood") for _ in range(16)]
    futures.append(_submit_in_lane(executor, "quiet", ran.append, "quiet"))
    gate.set()
    for f in [first, *futures]:
        f.result(TIMEOUT_S)
    return ran


def test_the_engines_workers_give_a_quiet_client_the_next_turn():
    core = EngineCore(PlainConverter())
    try:
        ran = _order_after_a_busy_worker(core.executor)
    finally:
        core.close()
    # FIFO would run the quiet client's call last (17th); taking turns, it runs second.
    assert ran.index("quiet") == 1 and ran.count("flood") == 16


def test_results_errors_and_shutdown():
    executor = FairExecutor(workers=2)
    assert executor.submit(pow, 2, 10).result(TIMEOUT_S) == 1024
    with pytest.raises(ZeroDivisionError):
        executor.submit(lambda: 1 / 0).result(TIMEOUT_S)
    gate = threading.Event()
    blockers = [executor.submit(gate.wait, TIMEOUT_S) for _ in range(2)]
    queued = [executor.submit(lambda i=i: i) for i in range(5)]
    threading.Timer(0.05, gate.set).start()
    executor.shutdown(wait=True)          # queued work still runs
    assert [f.result(0) for f in queued] == list(range(5)) and all(b.result(0) for b in blockers)
    with pytest.raises(RuntimeError):
        executor.submit(int)


def test_cancel_futures_drops_queued_work():
    executor = FairExecutor()
    gate, started = threading.Event(), threading.Event()

    def hold() -> bool:
        started.set()
        return gate.wait(TIMEOUT_S)

    running = executor.submit(hold)
    assert started.wait(TIMEOUT_S)
    queued = [executor.submit(int) for _ in range(3)]
    threading.Timer(0.05, gate.set).start()
    executor.shutdown(wait=True, cancel_futures=True)
    assert running.result(0) and all(f.cancelled() for f in queued)


# --- the service: a quiet client's key between a flood's keys --------------------------------


class RecordingSession(Session):
    """Records which context's key ran; the first key anywhere waits at a gate."""

    log: list[str] = []
    gate = threading.Event()

    def __init__(self, converter, name: str) -> None:
        super().__init__(converter)
        self.name = name

    def process_key(self, keysym, modifiers=0, release=False):
        if not RecordingSession.log:
            RecordingSession.log.append("first")
            RecordingSession.gate.wait(TIMEOUT_S)
        RecordingSession.log.append(self.name)
        return super().process_key(keysym, modifiers, release)


class RecordingCore(EngineCore):
    def new_context(self, loop, on_update=None):
        return ContextHost(RecordingSession(self.converter, "pending"), self.executor, loop, on_update)


def _call(member: str, signature: str = "", body: list | None = None) -> Message:
    return Message(destination=wire.BUS_NAME, path=wire.OBJECT_PATH, interface=wire.INTERFACE,
                   member=member, signature=signature, body=body or [])


async def _until(condition) -> None:
    for _ in range(int(TIMEOUT_S / 0.01)):
        if condition():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("condition not reached")


def test_the_service_gives_a_quiet_client_its_turn_during_a_flood():
    async def body(address: str) -> list[str]:
        ready: asyncio.Future[EngineService] = asyncio.get_running_loop().create_future()
        stop = asyncio.Event()
        task = asyncio.ensure_future(serve(lambda: RecordingCore(PlainConverter()), address,
                                           ready=ready.set_result, stop=stop))
        service = await asyncio.wait_for(ready, TIMEOUT_S)
        flood = await MessageBus(bus_address=address).connect()
        quiet = await MessageBus(bus_address=address).connect()
        try:
            flood_ids = [(await flood.call(_call("CreateContext", "s", ["flood"]))).body[0] for _ in range(16)]
            (quiet_id,) = (await quiet.call(_call("CreateContext", "s", ["quiet"]))).body
            for ctx_id, ctx in service._contexts.items():
                ctx.host._session.name = "quiet" if ctx_id == quiet_id else "flood"
            # The flood's first key holds the worker at the gate; the rest of the flood and then
            # the quiet client's key queue up behind it.
            calls = [asyncio.ensure_future(flood.call(_call("ProcessKey", "uuuub", [i, 0x61, 0, 0, False])))
                     for i in flood_ids for _ in range(4)]
            waiting = service._core.executor._queue
            await _until(lambda: RecordingSession.log and len(waiting) == 15)   # one per other context
            calls.append(asyncio.ensure_future(quiet.call(_call("ProcessKey", "uuuub", [quiet_id, 0x61, 0, 0, False]))))
            await _until(lambda: len(waiting) == 16)
            RecordingSession.gate.set()
            await asyncio.wait_for(asyncio.gather(*calls), TIMEOUT_S)
        finally:
            flood.disconnect()
            quiet.disconnect()
            stop.set()
            assert await asyncio.wait_for(task, TIMEOUT_S) == 0
        return list(RecordingSession.log)

    RecordingSession.log = []
    RecordingSession.gate = threading.Event()
    with HeadlessDesktop() as desktop:
        log = asyncio.run(body(desktop.start_session_bus()))
    assert log[:2] == ["first", "flood"] and log.count("flood") == 64
    # Behind the gate: the 15 other flooding contexts' first keys were queued before the quiet
    # key arrived. Taking turns by client, the quiet key runs right after the flood's next one
    # (third); FIFO would run it after all fifteen (seventeenth).
    assert log.index("quiet") == 3, log


# --- the service: calls are started one client at a time, in turns ---------------------------


class _RecordingBus:
    """What EngineService uses of its bus: replies are recorded in the order they are sent."""

    connected = True

    def __init__(self) -> None:
        self.sent: list[Message] = []

    def send(self, msg: Message):
        self.sent.append(msg)


def _reply_order(messages: list[Message]) -> list[Message]:
    """Hand the service every message in one go (as one read from the bus delivers them); the
    messages in the order their replies went out."""
    async def body() -> list[Message]:
        bus = _RecordingBus()
        core = EngineCore(PlainConverter())
        service = EngineService(bus, core)
        for msg in messages:
            assert service.handle_message(msg) is True
        await _until(lambda: len(bus.sent) == len(messages))
        service.close()
        core.close()
        by_serial = {msg.serial: msg for msg in messages}
        return [by_serial[reply.reply_serial] for reply in bus.sent]

    return asyncio.run(body())


def test_a_call_behind_a_flood_is_started_in_the_next_turn():
    # 200 calls from one client reach the service in one read, then one call from another.
    messages = [Message(destination=wire.BUS_NAME, path=wire.OBJECT_PATH, interface=wire.INTERFACE,
                        member="GetInfo", serial=n, sender=":1.flood" if n <= 200 else ":1.quiet")
                for n in range(1, 202)]
    order = [msg.sender for msg in _reply_order(messages)]
    # Answered in turns: the quiet client's call right after the flood's first, not 201st.
    assert order.index(":1.quiet") == 1 and order.count(":1.flood") == 200


def test_inside_one_client_a_context_behind_another_contexts_flood_gets_the_next_turn():
    """fcitx5 is one client for every application: one application's flood must not hold
    back another's key."""
    # No such contexts: each call is answered with an error, in the order the calls are run.
    messages = [Message(destination=wire.BUS_NAME, path=wire.OBJECT_PATH, interface=wire.INTERFACE,
                        member="GetView", signature="u", body=[7 if n <= 200 else 8], serial=n,
                        sender=":1.fcitx5")
                for n in range(1, 202)]
    order = [msg.body[0] for msg in _reply_order(messages)]
    assert order.index(8) == 1 and order.count(7) == 200
