"""Conversion work on worker threads, for many input contexts at once.

The key-handling path never waits for a model: it answers with the dictionary result and submits
the model work here; the result comes back through a callback when it is ready.

Rules:
- Supersession: `begin_key(context)` starts a new epoch for that context. Queued jobs of
  older epochs are dropped, running ones are told to stop (JobContext.cancelled), and a result
  of an older epoch is never delivered. The epoch check and the delivery happen under
  the context's lock, which `begin_key` also takes, so a result cannot slip out after a newer key
  has been announced.
- Priorities: EXPLICIT (Space) before LIVE (live conversion) before ANTICIPATE (the live text
  of the readings the next letter can make) before SUGGESTION before PREPARE (Space's
  conversion computed ahead while the user pauses). Work that can step aside reads
  `ctx.outranked()`: a job of a higher priority is waiting for a worker.
- Fairness: among jobs of the same priority, the context served longest ago goes first.
- Deadlines: a job may carry a time budget; the work function reads `ctx.remaining()` to decide
  what fits (see deadline.py). A job whose deadline passed before it started is dropped when it
  was submitted with `expire_late=True`.
"""

from __future__ import annotations

import enum
import itertools
import logging
import math
import threading
import time
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Callable, Hashable

log = logging.getLogger(__name__)


class Priority(enum.IntEnum):
    EXPLICIT = 0
    LIVE = 1
    ANTICIPATE = 2
    SUGGESTION = 3
    PREPARE = 4


class Cancelled(Exception):
    """Raised by JobContext.check() when the job was superseded; the scheduler swallows it."""


@dataclass
class JobContext:
    input_context: Hashable
    epoch: int
    priority: Priority
    deadline: float | None      # time.monotonic() value, None = no deadline
    supersedable: bool = True   # False: a newer key neither drops nor cancels this job
    _cancel: threading.Event = field(default_factory=threading.Event, repr=False)
    _outranked: Callable[[], bool] = field(default=lambda: False, repr=False)

    def cancelled(self) -> bool:
        return self._cancel.is_set()

    def check(self) -> None:
        if self._cancel.is_set():
            raise Cancelled()

    def wait_cancelled(self, seconds: float) -> bool:
        """Sleep up to `seconds` (the GIL free), waking early when superseded; True if it was."""
        return self._cancel.wait(seconds)

    def outranked(self) -> bool:
        """True while a job of a higher priority waits for a worker (every worker is busy)."""
        return self._outranked()

    def remaining(self) -> float:
        if self.deadline is None:
            return math.inf
        return self.deadline - time.monotonic()


@dataclass
class _Job:
    ctx: JobContext
    work: Callable[[JobContext], Any]
    deliver: Callable[[Any], None]
    expire_late: bool
    order: int


@dataclass
class _ContextState:
    epoch: int = 0
    last_served: int = -1
    lock: threading.RLock = field(default_factory=threading.RLock)


@dataclass
class SchedulerStats:
    submitted: int = 0
    delivered: int = 0
    dropped_stale: int = 0      # superseded before start, or finished after a newer key
    expired: int = 0            # deadline passed before start
    failed: int = 0
    empty: int = 0              # work returned None (nothing better than what is shown)


class Scheduler:
    def __init__(self, workers: int = 1, name: str = "karukan-convert") -> None:
        if workers < 1:
            raise ValueError("need at least one worker")
        self._lock = threading.Condition()
        self._pending: list[_Job] = []
        self._running: list[_Job] = []
        self._contexts: dict[Hashable, _ContextState] = {}
        self._order = itertools.count()
        self._served = itertools.count()
        self._closed = False
        self.stats = SchedulerStats()
        self._threads = [
            threading.Thread(target=self._worker, name=f"{name}-{i}", daemon=True) for i in range(workers)
        ]
        for thread in self._threads:
            thread.start()

    # -- called from the key-handling path -------------------------------------------------

    def begin_key(self, context: Hashable) -> int:
        """A new key in `context`: supersede all of its earlier work. Returns the new epoch."""
        state = self._context_state(context)
        with state.lock:
            with self._lock:
                state.epoch += 1
                self._drop_stale_locked()
                for job in self._running:
                    if (job.ctx.input_context == context and job.ctx.supersedable
                            and job.ctx.epoch < state.epoch):
                        job.ctx._cancel.set()
                return state.epoch

    def epoch(self, context: Hashable) -> int:
        return self._context_state(context).epoch

    def submit(
        self,
        context: Hashable,
        priority: Priority,
        work: Callable[[JobContext], Any],
        deliver: Callable[[Any], None],
        budget_s: float | None = None,
        expire_late: bool = False,
        supersedable: bool = True,
        epoch: int | None = None,
    ) -> JobContext:
        """Queue `work(ctx)` for a epoch of the context; `deliver(result)` if still current.

        epoch: the event the work belongs to (the value begin_key returned); None: the
        current one. Work of an older epoch is dropped unrun.
        `work` returning None delivers nothing. `deliver` runs on a worker thread under the
        context's lock: keep it short (post to the frontend's main loop).
        """
        state = self._context_state(context)
        with self._lock:
            if self._closed:
                raise RuntimeError("scheduler is shut down")
            deadline = None if budget_s is None else time.monotonic() + budget_s
            ctx = JobContext(context, state.epoch if epoch is None else epoch,
                             Priority(priority), deadline, supersedable)
            ctx._outranked = partial(self._waiting_above, ctx.priority)
            self._pending.append(_Job(ctx, work, deliver, expire_late, next(self._order)))
            self.stats.submitted += 1
            self._lock.notify()
            return ctx

    @property
    def closed(self) -> bool:
        return self._closed

    def close_context(self, context: Hashable) -> None:
        """Drop all work of a context that is going away."""
        self.begin_key(context)
        with self._lock:
            self._contexts.pop(context, None)

    def shutdown(self, wait: bool = True) -> None:
        with self._lock:
            self._closed = True
            for job in self._pending:
                job.ctx._cancel.set()
            self._pending.clear()
            for job in self._running:
                job.ctx._cancel.set()
            self._lock.notify_all()
        if wait:
            for thread in self._threads:
                thread.join()

    def idle(self, timeout: float | None = None) -> bool:
        """Wait until no job is queued or running (for tests and benchmarks)."""
        end = None if timeout is None else time.monotonic() + timeout
        with self._lock:
            while self._pending or self._running:
                left = None if end is None else end - time.monotonic()
                if left is not None and left <= 0:
                    return False
                self._lock.wait(left)
            return True

    def _waiting_above(self, priority: Priority) -> bool:
        with self._lock:
            return any(job.ctx.priority < priority for job in self._pending)

    # -- workers ---------------------------------------------------------------------------

    def _context_state(self, context: Hashable) -> _ContextState:
        with self._lock:
            state = self._contexts.get(context)
            if state is None:
                state = self._contexts[context] = _ContextState()
            return state

    def _is_current(self, ctx: JobContext) -> bool:
        if ctx.cancelled():
            return False
        if not ctx.supersedable:
            return True
        state = self._contexts.get(ctx.input_context)
        return state is not None and state.epoch == ctx.epoch

    def _drop_stale_locked(self) -> None:
        keep = []
        for job in self._pending:
            if self._is_current(job.ctx):
                keep.append(job)
            else:
                self.stats.dropped_stale += 1
        if len(keep) < len(self._pending):
            self._lock.notify_all()   # idle() waiters: the queue got shorter without a job running
        self._pending = keep

    def _next_job_locked(self) -> _Job | None:
        now = time.monotonic()
        best: _Job | None = None
        best_key: tuple[int, int, int] | None = None
        for job in list(self._pending):
            if job.expire_late and job.ctx.deadline is not None and job.ctx.deadline < now:
                self._pending.remove(job)
                self.stats.expired += 1
                continue
            state = self._contexts.get(job.ctx.input_context)
            served = state.last_served if state else -1
            key = (int(job.ctx.priority), served, job.order)
            if best_key is None or key < best_key:
                best, best_key = job, key
        if best is not None:
            self._pending.remove(best)
            state = self._contexts.get(best.ctx.input_context)
            if state is not None:
                state.last_served = next(self._served)
        return best

    def _worker(self) -> None:
        while True:
            with self._lock:
                job = None
                while not self._closed:
                    self._drop_stale_locked()
                    job = self._next_job_locked()
                    if job is not None:
                        break
                    self._lock.wait()
                if job is None:
                    return
                self._running.append(job)
            try:
                self._run(job)
            finally:
                with self._lock:
                    self._running.remove(job)
                    self._lock.notify_all()

    def _run(self, job: _Job) -> None:
        try:
            result = job.work(job.ctx)
        except Cancelled:
            with self._lock:
                self.stats.dropped_stale += 1
            return
        except Exception:  # one failing conversion must not kill the worker
            log.exception("conversion job failed")
            with self._lock:
                self.stats.failed += 1
            return
        if result is None:
            with self._lock:
                self.stats.empty += 1
            return
        state = self._contexts.get(job.ctx.input_context)
        if state is None and job.ctx.supersedable:
            with self._lock:
                self.stats.dropped_stale += 1
            return
        with state.lock if state is not None else threading.RLock():
            with self._lock:
                current = self._is_current(job.ctx)
                if current:
                    self.stats.delivered += 1
                else:
                    self.stats.dropped_stale += 1
            if current:
                try:
                    job.deliver(result)
                except Exception:
                    log.exception("delivering a conversion result failed")
