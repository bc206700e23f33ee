"""ModelSlot's per-thread greedy pool: interleaved sessions (more than it keeps live) and draft
checks give what a fresh context gives."""

import pytest

pytest.importorskip("llama_cpp")

from karukan_engine.conversion.model_slot import SESSION_SEQUENCES, ModelSlot  # noqa: E402
from karukan_engine.neural.model import ModelOptions, load_model  # noqa: E402
from karukan_engine.neural.prompt import clean_output  # noqa: E402
from neural_support import fresh_logprobs, tiny_model_dir  # noqa: E402
from test_neural_greedy import fresh_greedy  # noqa: E402

READINGS = ["わたしはがくせいです", "きょうはいいてんきですね", "かいぎのしりょうをおくります", "とうきょうえきでまつ"]


@pytest.fixture(params=["llama", "gpt2"])
def model(request):  # per test: closing the slot closes its model
    m = load_model(tiny_model_dir(request.param), ModelOptions(n_threads=1))
    yield m
    m.close()


def test_interleaved_sessions_get_plain_greedy(model):
    slot = ModelSlot(model, "tiny")
    sessions = range(SESSION_SEQUENCES + 2)  # two more than stay live: some are saved and restored
    try:
        for k in range(1, 7):
            for session in sessions:
                reading = READINGS[session % len(READINGS)][:k]
                got = slot.greedy(reading, "", 10, owner=session)
                expected, _, finished = fresh_greedy(model.llama, model.prompt_ids(reading), 10, model.stop_ids)
                assert (list(got.token_ids), got.finished) == (expected, finished), (session, reading)
            assert not slot.last_call_cold()
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
