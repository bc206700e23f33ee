"""GreedyBatcher: threads whose jobs are ready together share generate_many calls on one pool,
and each still gets plain greedy's result; cancellation, errors and close stay per job."""

import threading
import time

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

pytest.importorskip("llama_cpp")

from karukan_engine.scheduling.greedy_batcher import GreedyBatcher  # noqa: E402
from karukan_engine.scheduling.scheduler import Cancelled  # noqa: E402
from karukan_engine.neural.errors import InferenceError  # noqa: E402
from karukan_engine.neural.greedy_pool import GreedyJob, GreedyPool  # noqa: E402
from neural_support import POOL_SENTENCES as SENTENCES, fresh_greedy, model, same  # noqa: E402,F401  (model: fixture)


@pytest.fixture
def batcher(model):
    b = GreedyBatcher(GreedyPool(model.llama, 1, slots=8))
    yield b
    b.close()


class Submitter(threading.Thread):
    """Calls batcher.generate(job) on its own thread and keeps what came back."""

    def __init__(self, batcher, job, start=None):
        super().__init__(daemon=True)
        self.batcher, self.job, self.start_together = batcher, job, start
        self.served = self.error = None

    def run(self):
        if self.start_together is not None:
            self.start_together.wait()
        try:
            self.served = self.batcher.generate(self.job)
        except BaseException as exc:  # checked by the test
            self.error = exc


def wait_until(condition, timeout=30.0):
    """Block until condition() holds (threads reaching a queue); not a timing assertion."""
    end = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < end, "threads never got there"
        time.sleep(0.002)


def queue_in_order(batcher, jobs):
    """Start one thread per job, each only after the previous one is queued (arrival order)."""
    threads = []
    for i, job in enumerate(jobs):
        t = Submitter(batcher, job)
        t.start()
        threads.append(t)
        wait_until(lambda n=i + 1: batcher.waiting == n)
    return threads


def job(model, owner, reading, max_new=10, should_stop=None):
    return GreedyJob(owner, model.prompt_ids(reading), max_new, model.stop_ids, should_stop=should_stop)


def test_jobs_ready_together_share_one_batch(model, batcher):
    jobs = [job(model, owner, s[:6]) for owner, s in enumerate(SENTENCES)]
    with batcher.exclusive():  # a batch is running: the jobs gather meanwhile
        threads = queue_in_order(batcher, jobs)
    for t in threads:
        t.join()
    for t in threads:
        assert t.error is None
        same(t.served.result, fresh_greedy(model.llama, t.job.prompt, t.job.max_new, model.stop_ids))
        assert t.served.batch_size == len(jobs) and t.served.waited
    assert (batcher.batches, batcher.jobs) == (1, len(jobs))


def test_a_lone_job_runs_at_once(model, batcher):
    got = batcher.generate(job(model, "a", SENTENCES[0][:4]))
    same(got.result, fresh_greedy(model.llama, model.prompt_ids(SENTENCES[0][:4]), 10, model.stop_ids))
    assert got.batch_size == 1 and got.cold and not got.waited  # the first batch made the context
    assert not batcher.generate(job(model, "a", SENTENCES[0][:5])).cold


def test_one_owner_per_batch_the_later_job_waits_for_the_next(model, batcher):
    jobs = [job(model, "a", SENTENCES[0][:3]), job(model, "b", SENTENCES[1][:3]), job(model, "a", SENTENCES[0][:4])]
    with batcher.exclusive():
        threads = queue_in_order(batcher, jobs)
    for t in threads:
        t.join()
    assert [t.served.batch_size for t in threads] == [2, 2, 1]
    for t in threads:
        same(t.served.result, fresh_greedy(model.llama, t.job.prompt, t.job.max_new, model.stop_ids))


def test_an_error_reaches_only_the_jobs_of_its_batch(model, batcher):
    bad = GreedyJob(0, model.prompt_ids("かんじ") + [model.llama.n_vocab + 5], 5, model.stop_ids)
    jobs = [bad, job(model, 1, SENTENCES[1][:5]), job(model, 0, SENTENCES[0][:5])]  # the last: next batch
    batcher.generate(job(model, 1, SENTENCES[1][:4]))  # owner 1 has KV the failure must not corrupt
    with batcher.exclusive():
        threads = queue_in_order(batcher, jobs)
    for t in threads:
        t.join()
    assert isinstance(threads[0].error, InferenceError) and threads[1].error is threads[0].error
    assert threads[2].error is None
    same(threads[2].served.result, fresh_greedy(model.llama, jobs[2].prompt, 10, model.stop_ids))
    again = batcher.generate(jobs[1])  # the pool recovered
    same(again.result, fresh_greedy(model.llama, jobs[1].prompt, 10, model.stop_ids))


def test_a_cancelled_job_leaves_the_queue_undecoded(model, batcher):
    cancel = threading.Event()
    jobs = [job(model, "gone", SENTENCES[2][:5], should_stop=cancel.is_set), job(model, "kept", SENTENCES[3][:5])]
    with batcher.exclusive():
        threads = queue_in_order(batcher, jobs)
        cancel.set()
    for t in threads:
        t.join()
    assert isinstance(threads[0].error, Cancelled)
    assert threads[1].served.batch_size == 1 and batcher.jobs == 1
    # Already cancelled when submitted, with nothing running: never decoded either.
    with pytest.raises(Cancelled):
        batcher.generate(jobs[0])
    assert batcher.jobs == 1


def test_a_job_cancelled_while_its_batch_runs_stops_there(model, batcher):
    """Superseded after two decode steps: the batch goes on without it, its owner's KV stays
    right for its next job, and the job itself gets Cancelled rather than a partial result."""
    steps = []

    def stop_after_two_checks() -> bool:
        steps.append(None)
        return len(steps) > 3  # the batcher's check at batch start, then two decode steps

    # No stop ids and no draft: it would decode ten steps.
    gone = GreedyJob("gone", model.prompt_ids(SENTENCES[0][:6]), 10, frozenset(), draft=[],
                     should_stop=stop_after_two_checks)
    kept = job(model, "kept", SENTENCES[1][:6], max_new=10)
    with batcher.exclusive():
        threads = queue_in_order(batcher, [gone, kept])
    for t in threads:
        t.join()
    assert isinstance(threads[0].error, Cancelled) and len(steps) == 4
    same(threads[1].served.result, fresh_greedy(model.llama, kept.prompt, 10, model.stop_ids))
    again = batcher.generate(job(model, "gone", SENTENCES[0][:7]))
    same(again.result, fresh_greedy(model.llama, model.prompt_ids(SENTENCES[0][:7]), 10, model.stop_ids))


def test_close_while_threads_wait(model, batcher):
    jobs = [job(model, owner, s[:4]) for owner, s in enumerate(SENTENCES[:3])]
    batcher.generate(jobs[0])  # the pool has a llama context to free
    closer = threading.Thread(target=batcher.close)
    with batcher.exclusive() as pool:  # stands for a running batch: close must wait for it
        threads = queue_in_order(batcher, jobs)
        closer.start()
        for t in threads:
            t.join()  # released by close at once, while the "batch" still runs
        assert all(isinstance(t.error, InferenceError) for t in threads)
        assert pool.context is not None  # not freed under the running batch
    closer.join()
    assert pool.context is None
    with pytest.raises(InferenceError):
        batcher.generate(jobs[0])
    with pytest.raises(InferenceError):
        with batcher.exclusive():
            pass
    assert batcher.jobs == 1


def stop_after(checks: int | None):
    """A should_stop that turns true at its checks-th call (None: never asked to stop)."""
    if checks is None:
        return None
    calls = []

    def should_stop() -> bool:
        calls.append(None)
        return len(calls) >= checks
    return should_stop


@given(rounds=st.lists(st.lists(st.tuples(st.integers(0, 4), st.integers(1, 10), st.integers(1, 8),
                                          st.none() | st.integers(1, 8)),
                                min_size=1, max_size=6), min_size=1, max_size=3),
       slots=st.integers(1, 4))
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_any_threads_get_plain_greedy(model, rounds, slots):
    """Rounds of jobs (owners may repeat, more owners than ids, some cancelled at a random
    moment) submitted by threads at once: every job that is not cancelled gets plain greedy."""
    batcher = GreedyBatcher(GreedyPool(model.llama, 1, slots=slots))
    try:
        for picks in rounds:
            jobs = [job(model, owner, SENTENCES[owner][:n], max_new, stop_after(checks))
                    for owner, n, max_new, checks in picks]
            start = threading.Barrier(len(jobs))
            threads = [Submitter(batcher, j, start=start) for j in jobs]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            for t in threads:
                if t.job.should_stop is not None and isinstance(t.error, Cancelled):
                    continue
                assert t.error is None
                same(t.served.result, fresh_greedy(model.llama, t.job.prompt, t.job.max_new, model.stop_ids))
        assert batcher.batches <= batcher.jobs <= sum(len(picks) for picks in rounds)
    finally:
        batcher.close()
