"""Fair turns on the session workers: one flooding client cannot starve the others.

Every context runs its calls one at a time (ContextHost's lock), so the workers' queue holds at
most one call per busy context. A plain FIFO queue therefore serves clients in proportion to how
many busy contexts they have: a client flooding 16 contexts gets 16 turns for every one of a
client typing in one. FairExecutor queues calls per lane (the calling client's bus name, taken
from the `CLIENT` context variable the service sets for each call) and the workers take one call
from each waiting lane in turn (round robin); within a lane calls keep their order.

TurnQueue is the pure ordering; FairExecutor runs it on worker threads as a
concurrent.futures.Executor, so `loop.run_in_executor(executor, ...)` works unchanged.
"""

from __future__ import annotations

import contextvars
import threading
from collections import OrderedDict, deque
from concurrent.futures import Executor, Future
from typing import Any, Callable, Generic, Hashable, TypeVar

T = TypeVar("T")

# The lane of the work submitted from the current task: the service sets it to the caller's
# unique bus name; work submitted outside a call (model updates, in-process frontends) shares "".
CLIENT: contextvars.ContextVar[str] = contextvars.ContextVar("karukan_client", default="")


class TurnQueue(Generic[T]):
    """Items in lanes; pop() takes the oldest item of the lane whose turn it is, then that lane
    (if it still has items) goes to the back. A lane that gets its first item joins at the back."""

    def __init__(self) -> None:
        self._lanes: OrderedDict[Hashable, deque[T]] = OrderedDict()   # waiting lanes, in turn order
        self._size = 0

    def __len__(self) -> int:
        return self._size

    def push(self, lane: Hashable, item: T) -> None:
        queue = self._lanes.get(lane)
        if queue is None:
            queue = self._lanes[lane] = deque()
        queue.append(item)
        self._size += 1

    def pop(self) -> tuple[Hashable, T]:
        """The next (lane, item); IndexError when empty."""
        if not self._lanes:
            raise IndexError("pop from an empty TurnQueue")
        lane, queue = self._lanes.popitem(last=False)
        item = queue.popleft()
        if queue:
            self._lanes[lane] = queue   # back of the line
        self._size -= 1
        return lane, item

    def drain(self) -> list[T]:
        """Every item, in turn order; the queue is left empty."""
        out = []
        while self._lanes:
            out.append(self.pop()[1])
        return out


class NestedTurns(Generic[T]):
    """Turns at two levels: between outer lanes (clients), and inside each outer lane between
    its inner lanes (a client's input contexts). pop() serves the outer lane whose turn it is,
    taking the oldest item of its inner lane whose turn it is; both then go to the back."""

    def __init__(self) -> None:
        self._outer: OrderedDict[Hashable, TurnQueue[T]] = OrderedDict()
        self._size = 0

    def __len__(self) -> int:
        return self._size

    def push(self, outer: Hashable, inner: Hashable, item: T) -> None:
        lanes = self._outer.get(outer)
        if lanes is None:
            lanes = self._outer[outer] = TurnQueue()
        lanes.push(inner, item)
        self._size += 1

    def pop(self) -> tuple[Hashable, Hashable, T]:
        if not self._outer:
            raise IndexError("pop from empty NestedTurns")
        outer, lanes = self._outer.popitem(last=False)
        inner, item = lanes.pop()
        if len(lanes):
            self._outer[outer] = lanes
        self._size -= 1
        return outer, inner, item

    def drain(self) -> list[T]:
        out = []
        while self._outer:
            out.append(self.pop()[2])
        return out


_Work = tuple[Future, Callable[..., Any], tuple, dict]


class FairExecutor(Executor):
    """`workers` threads serving submitted calls lane by lane in turn (see the module docstring)."""

    def __init__(self, workers: int = 1, thread_name_prefix: str = "karukan-session",
                 lane: Callable[[], Hashable] = CLIENT.get) -> None:
        if workers < 1:
            raise ValueError("workers must be at least 1")
        self._lane = lane
        self._queue: TurnQueue[_Work] = TurnQueue()
        self._cond = threading.Condition()
        self._shutdown = False
        self._threads = [threading.Thread(target=self._work, name=f"{thread_name_prefix}_{i}", daemon=True)
                         for i in range(workers)]
        for thread in self._threads:
            thread.start()

    @property
    def queued(self) -> int:
        """Calls waiting for a worker (not counting the ones running)."""
        with self._cond:
            return len(self._queue)

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future:
        future: Future = Future()
        lane = self._lane()
        with self._cond:
            if self._shutdown:
                raise RuntimeError("cannot schedule new futures after shutdown")
            self._queue.push(lane, (future, fn, args, kwargs))
            self._cond.notify()
        return future

    def _work(self) -> None:
        while True:
            with self._cond:
                while not self._queue and not self._shutdown:
                    self._cond.wait()
                if not self._queue:
                    return   # shut down and nothing left
                _lane, (future, fn, args, kwargs) = self._queue.pop()
            if not future.set_running_or_notify_cancel():
                continue
            try:
                result = fn(*args, **kwargs)
            except BaseException as exc:
                future.set_exception(exc)
            else:
                future.set_result(result)
            del future, fn, args, kwargs

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """Queued work still runs (unless cancel_futures); no new work is accepted."""
        with self._cond:
            self._shutdown = True
            if cancel_futures:
                for future, *_rest in self._queue.drain():
                    future.cancel()
            self._cond.notify_all()
        if wait:
            for thread in self._threads:
                if thread is not threading.current_thread():
                    thread.join()
