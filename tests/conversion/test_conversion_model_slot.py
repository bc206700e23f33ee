"""ModelSlot's shared, batched greedy pool: interleaved sessions (more than it keeps live),
sessions converting on many scheduler workers at once, and draft checks give what a fresh
context gives."""

import threading

import pytest

pytest.importorskip("llama_cpp")

from karukan_engine.conversion.model_slot import SESSION_SEQUENCES, ModelSlot  # noqa: E402
from karukan_engine.scheduling.scheduler import Cancelled, Priority, Scheduler  # noqa: E402
from karukan_engine.neural.model import ModelOptions, load_model  # noqa: E402
from karukan_engine.neural.prompt import clean_output  # noqa: E402
from neural_support import fresh_greedy, fresh_logprobs, tiny_model_dir  # noqa: E402

READINGS = ["わたしはがくせいです", "きょうはいいてんきですね", "かいぎのしりょうをおくります", "とうきょうえきでまつ"]


@pytest.fixture(params=["llama", "gpt2"])
def model(request):  # per test: closing the slot closes its model
    m = load_model(tiny_model_dir(request.param), ModelOptions(n_threads=1))
    yield m
    m.close()


def test_interleaved_sessions_get_plain_greedy(model):
    slot = ModelSlot(model, "tiny", greedy_memo=0)   # every call through the pool: that is the test
    sessions = range(SESSION_SEQUENCES + 2)  # two more than stay live: some are saved and restored
    try:
        for k in range(1, 7):
            for session in sessions:
                reading = READINGS[session % len(READINGS)][:k]
                got = slot.greedy(reading, "", 10, owner=session)
                expected, _, finished = fresh_greedy(model.llama, model.prompt_ids(reading), 10, model.stop_ids)
                assert (list(got.token_ids), got.finished) == (expected, finished), (session, reading)
            assert not slot.last_call_atypical()
    finally:
        slot.close()


def test_draft_checks_between_greedy_calls_match_a_fresh_context(model):
    slot = ModelSlot(model, "tiny")
    try:
        for k in range(2, 6):
            reading = READINGS[0][:k]
            live = slot.greedy(reading, "", 10, owner="a")
            for surface in (live.text, "私は学生", "漢字"):
                ids = model.tokenizer.encode(surface)
                prompt = model.prompt_ids(reading, "", reserve=len(ids) + 1)
                agreed = 0
                while True:
                    token = int(fresh_logprobs(model.llama, prompt + ids[:agreed]).argmax())
                    if agreed == len(ids) or token != ids[agreed]:
                        break
                    agreed += 1
                expected = None if token in model.stop_ids else clean_output(model.tokenizer.decode(ids[:agreed] + [token]))
                assert slot.check_draft(reading, "", surface) == expected
            again = slot.greedy(reading, "", 10, owner="a")
            assert again.token_ids == live.token_ids  # the session's sequence was left alone
    finally:
        slot.close()


def test_sessions_on_many_workers_get_plain_greedy(model):
    """Six sessions type key by key through a 4-worker scheduler (their conversions batch
    together on the slot's one pool) while another thread checks drafts."""
    slot = ModelSlot(model, "tiny", greedy_memo=0)   # every call through the pool: that is the test
    scheduler = Scheduler(workers=4)
    got: dict[tuple[int, str], tuple] = {}
    lock = threading.Lock()

    def convert(session: int, reading: str):
        def work(ctx):
            generation = slot.greedy(reading, "", 10, owner=session, should_stop=ctx.cancelled)
            return list(generation.token_ids), generation.finished

        def deliver(result) -> None:
            with lock:
                got[(session, reading)] = result
        return work, deliver

    def check_drafts() -> None:
        for k in range(2, 7):
            slot.check_draft(READINGS[0][:k], "", "私は学生")

    checker = threading.Thread(target=check_drafts)
    try:
        checker.start()
        for k in range(1, 7):
            for session in range(6):
                scheduler.submit(session, Priority.LIVE, *convert(session, READINGS[session % len(READINGS)][:k]))
            scheduler.idle()  # each session's next key after its previous one (a key supersedes)
        checker.join()
        assert scheduler.stats.failed == 0 and len(got) == 36
        batches, jobs = slot.batching()
        assert jobs == 36 and 1 <= batches <= jobs
        for (session, reading), (tokens, finished) in got.items():
            expected, _, stopped = fresh_greedy(model.llama, model.prompt_ids(reading), 10, model.stop_ids)
            assert (tokens, finished) == (expected, stopped), (session, reading)
    finally:
        scheduler.shutdown()
        slot.close()


def test_a_conversion_cancelled_before_its_batch_is_not_decoded(model):
    slot = ModelSlot(model, "tiny")
    try:
        with pytest.raises(Cancelled):
            slot.greedy(READINGS[0], "", 10, owner="a", should_stop=lambda: True)
        assert slot.greedy(READINGS[0], "", 10, owner="a", should_stop=lambda: False) is not None
    finally:
        slot.close()


def test_a_call_that_queued_behind_a_batch_is_no_timing_sample(model):
    slot = ModelSlot(model, "tiny")
    try:
        slot.greedy(READINGS[0][:3], "", 10, owner="a")  # creates the llama context: cold
        assert slot.last_call_atypical()
        slot.greedy(READINGS[0][:4], "", 10, owner="a")
        assert not slot.last_call_atypical()
        sample = []

        def convert_and_look() -> None:
            slot.greedy(READINGS[0][:5], "", 10, owner="a")
            sample.append(slot.last_call_atypical())

        batcher = slot._batcher_for(model)
        queued = threading.Thread(target=convert_and_look)
        with batcher.exclusive():  # another thread's batch is running
            queued.start()
            while batcher.waiting == 0:
                queued.join(0.002)
        queued.join()
        assert sample == [True]  # its time includes the wait: not a service-time sample
    finally:
        slot.close()
