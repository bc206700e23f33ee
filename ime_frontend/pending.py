"""An input context that is still being made: every operation waits for it.

The IBus engine process builds its converter in the background (the dictionary takes a second
or two to load), and ibus-daemon passes every key straight to the application until
CreateEngine has answered. So CreateEngine answers at once with an engine whose context is a
PendingContext; keys typed meanwhile wait here, in the order typed, instead of reaching the
application as raw romaji.
"""

from __future__ import annotations

import asyncio
from typing import Any, Awaitable

from ime_frontend import operations as ops
from ime_frontend.operations import InputContext


class PendingContext:
    """Offers every row of CONTEXT_OPERATIONS (added below the class) plus close()."""

    def __init__(self, made: Awaitable[InputContext]) -> None:
        self._made: asyncio.Future[InputContext] = asyncio.ensure_future(made)

    async def run(self, op: ops.Operation, *args: Any, **kwargs: Any) -> Any:
        # Waiters resume in the order they started waiting, and the context serialises its
        # calls in arrival order: held keys are processed in the order typed.
        context = await self._made
        return await getattr(context, op.method)(*args, **kwargs)

    async def close(self) -> None:
        context = await self._made
        await context.close()


for _op in ops.CONTEXT_OPERATIONS:
    setattr(PendingContext, _op.method, ops.operation_method(_op, PendingContext.run))
del _op
