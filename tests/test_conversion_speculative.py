"""Speculative greedy (previous conversion as the draft) gives exactly plain greedy's result."""

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

pytest.importorskip("llama_cpp")

from karukan_engine.conversion.speculative import SpeculativeGreedy  # noqa: E402
from karukan_engine.neural.greedy import GreedySession  # noqa: E402
from karukan_engine.neural.model import load_model  # noqa: E402
from karukan_engine.neural.testing import TinyModelSpec, write_model_dir  # noqa: E402

SENTENCES = ["きょうはいいてんきですね", "かいぎのしりょうをおくります", "とうきょう1ばんせん"]


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    directory = write_model_dir(tmp_path_factory.mktemp("tiny"), TinyModelSpec(seed=3, eos_scale=2.0))
    m = load_model(directory)
    yield m
    m.close()


def same(got, expected):
    assert got[0] == expected[0]
    assert got[2] == expected[2]
    assert got[1] == pytest.approx(expected[1], abs=1e-3)


def test_typing_key_by_key_equals_plain_greedy(model):
    plain = GreedySession(model.llama, 1)
    spec = SpeculativeGreedy(model.llama, 1)
    draft: list[int] = []
    accepted = 0
    try:
        for sentence in SENTENCES:
            for k in range(1, len(sentence) + 1):
                prompt = model.prompt_ids(sentence[:k], "前の文")
                expected = plain.generate(prompt, 16, model.stop_ids)
                got = spec.generate(prompt, draft, 16, model.stop_ids)
                same(got, expected)
                accepted += spec.accepted
                draft = got[0]
    finally:
        plain.close()
        spec.close()
    assert accepted > 0  # the drafts were really used


@given(st.integers(0, 2), st.integers(1, 12), st.lists(st.integers(0, 699), max_size=20), st.booleans())
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_any_draft_gives_plain_greedy(model, which, length, noise, use_truth):
    """Right drafts, wrong drafts, too long drafts and tiny max_new: always plain greedy."""
    prompt = model.prompt_ids(SENTENCES[which][:length])
    plain = GreedySession(model.llama, 1)
    spec = SpeculativeGreedy(model.llama, 1)
    try:
        for max_new in (1, 3, 16):
            expected = plain.generate(prompt, max_new, model.stop_ids)
            draft = list(expected[0][: len(noise) // 2]) + noise if use_truth else noise
            same(spec.generate(prompt, draft, max_new, model.stop_ids), expected)
    finally:
        plain.close()
        spec.close()


def test_a_correct_draft_takes_one_decode_call(model):
    spec = SpeculativeGreedy(model.llama, 1)
    try:
        prompt = model.prompt_ids("かいぎ")
        out, _, finished = spec.generate(prompt, [], 16, model.stop_ids)
        assert finished, "the tiny model should stop on its own"
        spec.generate(model.prompt_ids("とうきょう"), [], 16, model.stop_ids)  # KV now differs
        again = spec.generate(prompt, out, 16, model.stop_ids)
        assert again[0] == out and spec.accepted == len(out)
        assert spec.decode_calls == 1
    finally:
        spec.close()


def test_first_disagreement_matches_greedy(model):
    plain = GreedySession(model.llama, 1)
    spec = SpeculativeGreedy(model.llama, 1)
    try:
        prompt = model.prompt_ids("とうきょう")
        out, _, finished = plain.generate(prompt, 16, model.stop_ids)
        agreed, token = spec.first_disagreement(prompt, out)
        assert agreed == len(out) and (token in model.stop_ids) == finished
        wrong = list(out)
        wrong[0] = (wrong[0] + 1) % model.llama.n_vocab
        agreed, token = spec.first_disagreement(prompt, wrong)
        assert (agreed, token) == (0, out[0])
    finally:
        plain.close()
        spec.close()


def test_switching_sessions_restores_their_sequence_state(model):
    """Two sessions typing in turn on one thread: each gets its KV state back, results unchanged."""
    plain = GreedySession(model.llama, 1)
    spec = SpeculativeGreedy(model.llama, 1)
    drafts = {"a": [], "b": []}
    restored = 0
    try:
        for k in range(2, 9):
            for owner, sentence in (("a", SENTENCES[0]), ("b", SENTENCES[1])):
                was_restored = spec.switch_to(owner)
                restored += was_restored
                prompt = model.prompt_ids(sentence[:k], "")
                got = spec.generate(prompt, drafts[owner], 12, model.stop_ids)
                same(got, plain.generate(prompt, 12, model.stop_ids))
                drafts[owner] = got[0]
                if was_restored:
                    # The session's own previous prompt was back in the KV cache: only the new
                    # kana and the output mark were decoded again, not the whole prompt.
                    assert spec.reused >= len(prompt) - 2
    finally:
        plain.close()
        spec.close()
    assert restored == 2 * 7 - 2   # every switch but the first one of each session
