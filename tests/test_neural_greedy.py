"""The persistent GreedySession gives exactly what a fresh context gives."""

import threading

import pytest

pytest.importorskip("llama_cpp")

from karukan_engine.neural.greedy import GreedySession, common_prefix_len
from karukan_engine.neural.model import ModelOptions, load_model
from neural_support import reference_greedy, tiny_model_dir

# One kana at a time, backspace, retype, unrelated input, context change (as a user types).
TYPING = [
    ("わ", ""),
    ("わた", ""),
    ("わたし", ""),
    ("わたしは", ""),
    ("わたしはが", ""),
    ("わたしはがく", ""),
    ("わたしはがくせい", ""),
    ("わたしはがくせ", ""),  # backspace
    ("わたしはがくせい", ""),  # retype
    ("こうえん", ""),  # unrelated input
    ("はし", "箸を持つ。"),  # context change
    ("はしを", "箸を持つ。"),
    ("はし", "橋を渡る。"),
    ("わたしはがくせい", "箸を持つ。"),
]


@pytest.fixture(scope="module", params=["llama", "gpt2"])
def model(request):
    m = load_model(tiny_model_dir(request.param), ModelOptions(n_threads=1))
    yield m
    m.close()


def test_session_matches_fresh_context_over_a_typing_sequence(model):
    session = GreedySession(model.llama, n_threads=1)
    reused = 0
    try:
        for reading, context in TYPING:
            prompt = model.prompt_ids(reading, context)
            got, logprob, finished = session.generate(prompt, 10, model.stop_ids)
            expected, expected_finished = reference_greedy(model.llama, prompt, 10, model.stop_ids)
            assert (got, finished) == (expected, expected_finished), (reading, context)
            reused += session.reused_tokens
    finally:
        session.close()
    assert reused > 0  # the session really skipped already-cached prompt tokens


def test_typing_a_kana_decodes_only_the_new_tail(model):
    session = GreedySession(model.llama, n_threads=1)
    try:
        session.generate(model.prompt_ids("わたしは", ""), 1, model.stop_ids)
        prompt = model.prompt_ids("わたしはが", "")
        session.generate(prompt, 1, model.stop_ids)
        # re-decoded: the new kana and the output mark (the old mark diverged), nothing more
        assert session.reused_tokens == len(prompt) - 2
        assert session.decoded_tokens == 2
    finally:
        session.close()


def test_session_grows_its_context_instead_of_failing(model):
    session = GreedySession(model.llama, n_threads=1)
    try:
        short = model.prompt_ids("か", "")
        session.generate(short, 2, model.stop_ids)
        long_prompt = model.prompt_ids("かんじ" * 60, "")  # 180+ tokens + 60 new > 256 cells
        max_new = model.n_ctx_train - len(long_prompt)
        got, _, finished = session.generate(long_prompt, max_new, model.stop_ids)
        assert (got, finished) == reference_greedy(model.llama, long_prompt, max_new, model.stop_ids)
    finally:
        session.close()


def test_public_greedy(model):
    g = model.greedy("きょうは", "", max_new=8)
    assert g.logprob < 0
    assert g.text == model.tokenizer.decode(list(g.token_ids)).strip()
    assert model.greedy("", "") .text == ""
    assert model.greedy("かんじ", "", max_new=0).token_ids == ()


def test_each_thread_gets_its_own_session(model):
    sessions = {}

    def work(name):
        model.greedy("かんじ", "", max_new=3)
        sessions[name] = model.session()

    threads = [threading.Thread(target=work, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len({id(s) for s in sessions.values()}) == 3


def test_common_prefix_len():
    assert common_prefix_len([1, 2, 3], [1, 2, 4]) == 2
    assert common_prefix_len([], [1]) == 0
    assert common_prefix_len([1, 2], [1, 2, 3]) == 2


def test_threads_decode_concurrently_with_identical_results(model):
    """One shared llama model, per-thread contexts: concurrent calls give the sequential results."""
    readings = ["かんじ", "きょうはいいてんき", "こうえん"]
    expected = {r: (model.greedy(r, "", 6).token_ids, [g.token_ids for g in model.beam(r, "", 3, 6)], model.score_many(r, "", ["漢字", "公園"])) for r in readings}
    got, errors = {}, []

    def work(reading):
        try:
            for _ in range(3):
                got[reading] = (model.greedy(reading, "", 6).token_ids, [g.token_ids for g in model.beam(reading, "", 3, 6)], model.score_many(reading, "", ["漢字", "公園"]))
        except Exception as exc:  # surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(r,)) for r in readings]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for r in readings:
        assert got[r][:2] == expected[r][:2]
        assert got[r][2] == pytest.approx(expected[r][2], abs=1e-4)
