"""PendingContext: operations called before the context exists wait for it, in order."""

from __future__ import annotations

import asyncio
import inspect

from hypothesis import given, strategies as st

from ime_frontend import operations as ops
from ime_frontend.pending import PendingContext


class RecordingContext:
    def __init__(self) -> None:
        self.calls: list[tuple] = []
        self.closed = False

    def __getattr__(self, name: str):
        if name not in {op.method for op in ops.CONTEXT_OPERATIONS}:
            raise AttributeError(name)

        async def call(*args, **kwargs):
            await asyncio.sleep(0)          # a real context yields too (executor, bus)
            self.calls.append((name, args))
            return (name, args)

        return call

    async def close(self) -> None:
        self.closed = True


def _play(calls: list[tuple[str, tuple]]):
    async def body():
        made = asyncio.get_running_loop().create_future()
        pending = PendingContext(made)
        context = RecordingContext()
        # Issued one after another, as ibus-daemon's pipelined calls arrive, before it exists.
        tasks = []
        for name, args in calls:
            tasks.append(asyncio.ensure_future(getattr(pending, name)(*args)))
            await asyncio.sleep(0)
        assert not any(t.done() for t in tasks)
        made.set_result(context)
        answers = await asyncio.gather(*tasks)
        await pending.close()
        return context, answers

    return asyncio.run(asyncio.wait_for(body(), 30))


keys = st.lists(st.tuples(st.integers(0x20, 0x7E), st.booleans()), max_size=30)


@given(keys)
def test_keys_wait_for_the_context_and_reach_it_in_the_order_typed(typed):
    calls = [("process_key", (keysym, 0, release)) for keysym, release in typed]
    context, answers = _play(calls)
    assert context.calls == calls
    assert answers == calls
    assert context.closed


def test_every_operation_of_the_table_is_offered_with_its_signature():
    for op in ops.CONTEXT_OPERATIONS:
        method = getattr(PendingContext, op.method)
        assert inspect.iscoroutinefunction(method) and inspect.signature(method) == op.python_signature()
    context, _answers = _play([("focus_in", ()), ("set_input_mode", ("hiragana",)), ("reset", ())])
    assert [name for name, _ in context.calls] == ["focus_in", "set_input_mode", "reset"]
