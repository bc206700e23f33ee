"""One GreedyPool per model, shared by every worker thread: jobs ready together decode together.

Leader/follower batching, with no waiting window: a thread queues its job and, when no batch is
running, becomes the leader and runs `GreedyPool.generate_many` on everything queued (one job
per owner, at most the pool's sequence ids); the others wait. When the batch ends every job in
it has its result, and one of the threads still waiting leads the next batch with whatever
queued meanwhile. At low load a job therefore runs at once, as it would alone; under load jobs
gather by themselves while a batch runs, and a decode of N sessions' tokens costs far less than
N decodes on a CPU (docs/benchmarks.md, "Greedy pool").

A job whose `should_stop()` turns true leaves the queue undecoded while it waits, and its
batch at the next decode step while that runs (Cancelled either way); an error of a batch reaches exactly the jobs of that batch (the pool forgets its KV cache and
recovers on the next batch). `exclusive()` lends the pool to one other operation (draft checks)
between batches.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from karukan_engine.scheduling.scheduler import Cancelled
from karukan_engine.neural.errors import InferenceError
from karukan_engine.neural.greedy_pool import GreedyJob, GreedyPool, Result


@dataclass(frozen=True)
class Served:
    result: Result
    cold: bool        # the batch had to create the llama context (its timing is not typical)
    batch_size: int   # jobs decoded together with this one (itself included)
    waited: bool      # the job queued behind another batch first (its time is not all service)


@dataclass(eq=False)
class _Ticket:
    job: GreedyJob
    waited: bool
    served: Served | None = None
    error: BaseException | None = None

    @property
    def done(self) -> bool:
        return self.served is not None or self.error is not None


class GreedyBatcher:
    def __init__(self, pool: GreedyPool) -> None:
        self._pool = pool
        self._cond = threading.Condition()
        self._queue: list[_Ticket] = []
        self._busy = False  # a batch or an exclusive operation holds the pool
        self._closed = False
        # Counters for tests and benchmarks.
        self.batches = 0  # generate_many calls
        self.jobs = 0     # jobs they decoded

    @property
    def waiting(self) -> int:
        """Jobs queued for a batch."""
        with self._cond:
            return len(self._queue)

    def generate(self, job: GreedyJob) -> Served:
        """Plain greedy's result for `job`, decoded with whatever other jobs are ready.

        Raises Cancelled when job.should_stop() turned true before its result was complete, the
        batch's error when the batch failed, InferenceError when the batcher is closed."""
        with self._cond:
            self._check_open()
            ticket = _Ticket(job, waited=self._busy)
            self._queue.append(ticket)
        while True:
            with self._cond:
                while not ticket.done and self._busy:
                    self._cond.wait()
                if ticket.done:
                    break
                batch = self._take_batch_locked()
                if not batch:
                    continue  # only cancelled jobs were queued, this one among them
                self._busy = True
            try:
                self._run(batch)
            finally:
                with self._cond:
                    for t in batch:
                        if not t.done:  # interrupted by a BaseException
                            t.error = InferenceError("greedy batch did not finish")
                    self._busy = False
                    self._cond.notify_all()
        if ticket.error is not None:
            raise ticket.error
        assert ticket.served is not None
        return ticket.served

    @contextmanager
    def exclusive(self) -> Iterator[GreedyPool]:
        """The pool, held between batches for one operation of the calling thread."""
        with self._cond:
            while self._busy and not self._closed:
                self._cond.wait()
            self._check_open()
            self._busy = True
        try:
            yield self._pool
        finally:
            with self._cond:
                self._busy = False
                self._cond.notify_all()

    def close(self) -> None:
        """Fail queued jobs, wait for the running batch, free the pool. Safe while threads wait."""
        with self._cond:
            if self._closed:
                return
            self._closed = True
            for ticket in self._queue:
                ticket.error = InferenceError("greedy decoder closed")
            self._queue.clear()
            self._cond.notify_all()
            while self._busy:
                self._cond.wait()
        self._pool.close()

    # --- internals ------------------------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise InferenceError("greedy decoder closed")

    def _take_batch_locked(self) -> list[_Ticket]:
        """Queued jobs in arrival order, one per owner and at most the pool's sequence ids; jobs
        that should stop leave the queue (Cancelled)."""
        batch: list[_Ticket] = []
        owners: set = set()
        rest: list[_Ticket] = []
        for ticket in self._queue:
            if ticket.job.stopping():
                ticket.error = Cancelled()
            elif ticket.job.owner in owners or len(batch) >= self._pool.slots:
                rest.append(ticket)
            else:
                owners.add(ticket.job.owner)
                batch.append(ticket)
        self._queue = rest
        self._cond.notify_all()  # the cancelled ones
        return batch

    def _run(self, batch: list[_Ticket]) -> None:
        try:
            results = self._pool.generate_many([t.job for t in batch])
        except Exception as exc:  # llama.cpp's failure is every job's of this batch
            error: BaseException = exc
        else:
            error = None
        cold = self._pool.cold
        with self._cond:
            self.batches += 1
            self.jobs += len(batch)
            for i, ticket in enumerate(batch):
                if error is not None:
                    ticket.error = error
                elif results[i] is None:  # abandoned by should_stop during the batch
                    ticket.error = Cancelled()
                else:
                    ticket.served = Served(results[i], cold, len(batch), ticket.waited)
