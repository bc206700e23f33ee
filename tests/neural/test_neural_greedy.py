"""The persistent GreedyDecoder (KV-prefix reuse, draft verification, per-owner state) gives
exactly what a fresh context gives."""

import threading

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

pytest.importorskip("llama_cpp")

from karukan_engine.neural.greedy import GreedyDecoder  # noqa: E402
from karukan_engine.neural.greedy_pool import (AUTO_DRAFT_MAX_CHANGED, INITIAL_CELLS, SHARED_END_TOKENS, auto_draft,  # noqa: E402
                                               common_prefix_len, common_suffix_len, valid_prefix)
from karukan_engine.neural.model import ModelOptions, load_model  # noqa: E402
from karukan_testing.tiny_models import TinyModelSpec, write_model_dir  # noqa: E402
from neural_support import EOS_SCALE, fresh_greedy, fresh_logprobs, model, same, tiny_model_dir  # noqa: E402,F401  (model: fixture)

# One kana at a time, backspace, retype, unrelated input, context change (as a user types).
TYPING = [
    ("わ", ""),
    ("わた", ""),
    ("わたし", ""),
    ("わたしは", ""),
    ("わたしはが", ""),
    ("わたしはが", ""),  # the same prompt again (a key that leaves the reading as it is)
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
SENTENCES = ["きょうはいいてんきですね", "かいぎのしりょうをおくります", "とうきょう1ばんせん"]


@pytest.fixture
def session(model):
    s = GreedyDecoder(model.llama, n_threads=1)
    yield s
    s.close()


def test_session_matches_fresh_context_over_a_typing_sequence(model, session):
    reused = accepted = 0
    for reading, context in TYPING:
        prompt = model.prompt_ids(reading, context)
        got = session.generate(prompt, 10, model.stop_ids)  # automatic draft
        same(got, fresh_greedy(model.llama, prompt, 10, model.stop_ids))
        reused += session.reused_tokens
        accepted += session.accepted_tokens
    assert reused > 0  # the session really skipped already-cached prompt tokens
    assert accepted > 0  # and really took draft tokens from its previous output


def test_typing_key_by_key_with_left_context_equals_plain_greedy(model, session):
    plain = GreedyDecoder(model.llama, 1)
    try:
        for sentence in SENTENCES:
            for k in range(1, len(sentence) + 1):
                prompt = model.prompt_ids(sentence[:k], "前の文")
                same(session.generate(prompt, 16, model.stop_ids), plain.generate(prompt, 16, model.stop_ids, draft=[]))
    finally:
        plain.close()


@given(which=st.integers(0, 2), length=st.integers(1, 12), noise=st.lists(st.integers(-5, 800), max_size=20),
       use_truth=st.booleans())
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_any_explicit_draft_gives_plain_greedy(model, session, which, length, noise, use_truth):
    """Right, wrong, too long and out-of-vocabulary drafts and tiny max_new: always plain greedy."""
    prompt = model.prompt_ids(SENTENCES[which][:length])
    for max_new in (1, 3, 16):
        expected = fresh_greedy(model.llama, prompt, max_new, model.stop_ids)
        draft = list(expected[0][: len(noise) // 2]) + noise if use_truth else noise
        same(session.generate(prompt, max_new, model.stop_ids, draft=draft), expected)


def test_a_correct_draft_takes_one_decode_call(model, session):
    prompt = model.prompt_ids("わたしは")
    out, _, _ = session.generate(prompt, 16, model.stop_ids)
    assert len(out) == 16, "the tiny models write 16 tokens here"
    session.generate(model.prompt_ids("とうきょう"), 16, model.stop_ids)  # KV now differs
    again = session.generate(prompt, 16, model.stop_ids, draft=out)
    assert again[0] == out and session.accepted_tokens == 15  # the 16th is never checked
    assert session.decode_calls == 1


def test_auto_draft_is_the_previous_output_for_a_near_continuation(model, session):
    prompt = model.prompt_ids("わたしは")
    out, _, _ = session.generate(prompt, 16, model.stop_ids)
    assert len(out) == 16
    session.generate(prompt, 16, model.stop_ids)  # same prompt: the output repeats
    assert session.accepted_tokens == 15 and session.decode_calls == 1
    session.generate(model.prompt_ids("わたしはが"), 16, model.stop_ids)  # one more kana
    assert session.draft_tokens == 15
    session.generate(model.prompt_ids("わた"), 16, model.stop_ids)  # backspace twice
    assert session.draft_tokens > 0


def test_no_auto_draft_for_unrelated_input(model, session):
    session.generate(model.prompt_ids("かいぎのしりょう"), 16, model.stop_ids)
    prompt = model.prompt_ids("とうきょうえき")
    got = session.generate(prompt, 16, model.stop_ids)
    assert session.draft_tokens == session.accepted_tokens == 0
    # Only the prompt past the cached prefix and one token per llama_decode were decoded.
    assert session.decoded_tokens == len(prompt) - session.reused_tokens + session.decode_calls - 1
    same(got, fresh_greedy(model.llama, prompt, 16, model.stop_ids))


def test_reset_forgets_the_cache_and_the_draft(model, session):
    prompt = model.prompt_ids("かいぎ")
    session.generate(prompt, 16, model.stop_ids)
    session.reset()
    session.generate(prompt, 16, model.stop_ids)
    assert session.reused_tokens == 0 and session.accepted_tokens == 0


def test_typing_a_kana_decodes_only_the_new_tail(model, session):
    session.generate(model.prompt_ids("わたしは", ""), 1, model.stop_ids)
    prompt = model.prompt_ids("わたしはが", "")
    session.generate(prompt, 1, model.stop_ids)
    # re-decoded: the new kana and the output mark (the old mark diverged), nothing more
    assert session.reused_tokens == len(prompt) - 2
    assert session.decoded_tokens == 2


@pytest.fixture(scope="module")
def long_model(tmp_path_factory):
    """A tiny model whose training context (1024) exceeds the session's first context (256)."""
    directory = write_model_dir(tmp_path_factory.mktemp("long"), TinyModelSpec(n_ctx_train=1024, eos_scale=EOS_SCALE))
    m = load_model(directory, ModelOptions(n_threads=1))
    yield m
    m.close()


def test_session_grows_its_context_instead_of_failing(long_model):
    model = long_model
    session = GreedyDecoder(model.llama, n_threads=1)
    try:
        short = model.prompt_ids("か", "")
        session.generate(short, 2, model.stop_ids)
        assert session.cold and session.context.n_ctx == INITIAL_CELLS
        long_prompt = model.prompt_ids("かんじ" * 100, "")
        assert len(long_prompt) + 40 > INITIAL_CELLS
        got = session.generate(long_prompt, 40, model.stop_ids)
        assert session.cold and session.context.n_ctx >= len(long_prompt) + 40
        same(got, fresh_greedy(model.llama, long_prompt, 40, model.stop_ids))
        session.generate(short, 2, model.stop_ids)
        assert not session.cold
    finally:
        session.close()


def test_first_disagreement_matches_greedy(model, session):
    prompt = model.prompt_ids("わたしは")
    out, _, finished = fresh_greedy(model.llama, prompt, 16, model.stop_ids)
    assert len(out) == 16 and not finished
    assert session.first_disagreement(prompt, out[:-1]) == (15, out[-1])
    wrong = list(out)
    wrong[0] = (wrong[0] + 1) % model.llama.n_vocab
    assert session.first_disagreement(prompt, wrong) == (0, out[0])
    same(session.generate(prompt, 16, model.stop_ids), fresh_greedy(model.llama, prompt, 16, model.stop_ids))
    stopping = model.prompt_ids("ねこ")  # both tiny models stop at once here
    agreed, token = session.first_disagreement(stopping, [])
    assert agreed == 0 and token in model.stop_ids


def test_switching_owners_restores_their_sequence_state(model, session):
    """Two sessions typing in turn on one thread: each gets its KV state back, results unchanged."""
    restored = 0
    for k in range(2, 9):
        for owner, sentence in (("a", SENTENCES[0]), ("b", SENTENCES[1])):
            was_restored = session.switch_to(owner)
            restored += was_restored
            prompt = model.prompt_ids(sentence[:k], "")
            same(session.generate(prompt, 12, model.stop_ids), fresh_greedy(model.llama, prompt, 12, model.stop_ids))
            if was_restored:
                # The owner's own previous prompt was back in the KV cache: only the new kana
                # and the output mark were decoded again, not the whole prompt.
                assert session.reused_tokens >= len(prompt) - 2
    assert restored == 2 * 7 - 2  # every switch but the first one of each owner


def test_public_greedy(model):
    g = model.greedy("きょうは", "", max_new=8)
    assert g.logprob < 0
    assert g.text == model.tokenizer.decode(list(g.token_ids)).strip()
    assert model.greedy("", "").text == ""
    assert model.greedy("かんじ", "", max_new=0).token_ids == ()


def test_each_thread_gets_its_own_session(model):
    sessions = {}

    def work(name):
        model.greedy("かんじ", "", max_new=3)
        sessions[name] = model.greedy_decoder()

    threads = [threading.Thread(target=work, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len({id(s) for s in sessions.values()}) == 3


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


# --- pure helpers ----------------------------------------------------------------------------


def test_common_prefix_len():
    assert common_prefix_len([1, 2, 3], [1, 2, 4]) == 2
    assert common_prefix_len([], [1]) == 0
    assert common_prefix_len([1, 2], [1, 2, 3]) == 2


tokens = st.lists(st.integers(0, 9), max_size=12)


@given(a=tokens, b=tokens)
def test_common_prefix_len_is_the_longest_shared_start(a, b):
    n = common_prefix_len(a, b)
    assert a[:n] == b[:n]
    assert n == min(len(a), len(b)) or a[n] != b[n]


@given(a=tokens, b=tokens)
def test_common_suffix_len_is_the_longest_shared_end(a, b):
    n = common_suffix_len(a, b)
    assert a[len(a) - n:] == b[len(b) - n:]
    assert n == min(len(a), len(b)) or a[len(a) - 1 - n] != b[len(b) - 1 - n]


def near_continuation(previous: list[int], prompt: list[int]) -> bool:
    """Can prompt be previous with its middle replaced: a shared start, then at most
    AUTO_DRAFT_MAX_CHANGED new tokens, then a shared end of at most SHARED_END_TOKENS tokens?"""
    for start in range(min(len(previous), len(prompt)) + 1):
        if previous[:start] != prompt[:start]:
            break
        for end in range(min(SHARED_END_TOKENS, len(previous) - start, len(prompt) - start) + 1):
            if previous[len(previous) - end:] == prompt[len(prompt) - end:] and \
                    len(prompt) - start - end <= AUTO_DRAFT_MAX_CHANGED:
                return True
    return False


@given(previous=tokens, output=tokens, prompt=tokens)
def test_auto_draft_only_after_a_small_change(previous, output, prompt):
    expected = output if previous and near_continuation(previous, prompt) else []
    assert auto_draft(previous, output, prompt) == expected


MARK_BYTES = [90, 91, 92]  # an output mark written as three byte tokens (the zenz vocabulary)


@pytest.mark.parametrize("mark", [[99], MARK_BYTES], ids=["one-token mark", "byte-token mark"])
def test_auto_draft_while_typing_whatever_the_mark_costs(mark):
    head = [1, 2, 3]                            # context and input mark
    typed = head + [10, 11] + mark              # "ka ki" + output mark
    output = [40, 41]
    assert auto_draft(typed, output, head + [10, 11, 12] + mark) == output   # one more kana
    assert auto_draft(typed, output, head + [10] + mark) == output           # backspace
    assert auto_draft(typed, output, head + [20, 21, 22, 23] + mark) == []   # another reading


@given(draft=st.lists(st.integers(-3, 12), max_size=10))
def test_valid_prefix_stops_at_the_first_foreign_token(draft):
    kept = valid_prefix(draft, 10)
    assert draft[: len(kept)] == kept and all(0 <= t < 10 for t in kept)
    assert len(kept) == len(draft) or not 0 <= draft[len(kept)] < 10
