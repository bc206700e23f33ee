"""GreedyPool: many owners decoded together in one context give each job plain greedy's result."""

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

pytest.importorskip("llama_cpp")

from karukan_engine.neural.greedy_pool import GreedyJob, GreedyPool  # noqa: E402
from neural_support import POOL_SENTENCES as SENTENCES, fresh_greedy, model, same  # noqa: E402,F401  (model: fixture)


def test_owners_typing_together_get_plain_greedy(model):
    """Six owners type a kana each per round, batched; a 4-id pool evicts and restores them."""
    pool = GreedyPool(model.llama, 1, slots=4)
    try:
        reused = accepted = 0
        for k in range(1, 9):
            jobs = [GreedyJob(owner, model.prompt_ids(s[:k]), 12, model.stop_ids)
                    for owner, s in enumerate(SENTENCES)]
            for job, got in zip(jobs, pool.generate_many(jobs)):
                same(got, fresh_greedy(model.llama, job.prompt, 12, model.stop_ids))
            reused += pool.reused_tokens
            accepted += pool.accepted_tokens
        assert reused > 0 and accepted > 0
    finally:
        pool.close()


def test_a_round_of_typing_reuses_every_owners_prompt(model):
    pool = GreedyPool(model.llama, 1, slots=8)
    try:
        first = [GreedyJob(o, model.prompt_ids(s[:4]), 6, model.stop_ids) for o, s in enumerate(SENTENCES)]
        pool.generate_many(first)
        second = [GreedyJob(o, model.prompt_ids(s[:5]), 1, model.stop_ids) for o, s in enumerate(SENTENCES)]
        pool.generate_many(second)
        # each owner re-decodes only its new kana and the output mark, all in one llama_decode
        assert pool.reused_tokens == sum(len(job.prompt) - 2 for job in second)
        assert pool.decoded_tokens == 2 * len(second) and pool.decode_calls == 1
    finally:
        pool.close()


def test_evicted_owners_come_back_by_state_restore(model):
    pool = GreedyPool(model.llama, 1, slots=2)
    try:
        prompts = {o: model.prompt_ids(s[:6]) for o, s in enumerate(SENTENCES[:3])}
        for o, p in prompts.items():
            pool.generate_many([GreedyJob(o, p, 4, model.stop_ids)])
        seq, restored = pool.attach(0)  # owner 0 was evicted by owner 2
        assert restored
        got = pool.generate_many([GreedyJob(0, prompts[0], 4, model.stop_ids)])[0]
        assert pool.reused_tokens == len(prompts[0]) - 1
        same(got, fresh_greedy(model.llama, prompts[0], 4, model.stop_ids))
    finally:
        pool.close()


@given(picks=st.lists(st.tuples(st.integers(0, 5), st.integers(1, 12), st.integers(1, 10),
                                st.lists(st.integers(-2, 800), max_size=6) | st.none()),
                      min_size=1, max_size=6, unique_by=lambda t: t[0]),
       slots=st.integers(1, 4))
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_any_batch_gives_each_job_plain_greedy(model, picks, slots):
    """Random owners, lengths, budgets and drafts (None = automatic) over more owners than ids."""
    pool = GreedyPool(model.llama, 1, slots=slots)
    try:
        for _ in range(2):
            jobs = [GreedyJob(o, model.prompt_ids(SENTENCES[o][:n]), max_new, model.stop_ids, draft)
                    for o, n, max_new, draft in picks]
            for job, got in zip(jobs, pool.generate_many(jobs)):
                same(got, fresh_greedy(model.llama, job.prompt, job.max_new, model.stop_ids))
    finally:
        pool.close()


def test_edge_cases(model):
    pool = GreedyPool(model.llama, 1, slots=2)
    try:
        with pytest.raises(ValueError):
            pool.generate_many([GreedyJob("a", [1, 2], 3, model.stop_ids), GreedyJob("a", [1], 3, model.stop_ids)])
        assert pool.generate_many([GreedyJob("a", [], 3, model.stop_ids), GreedyJob("b", [1, 2], 0, model.stop_ids)]) == [([], 0.0, False)] * 2
        assert pool.generate_many([]) == []
    finally:
        pool.close()


def test_a_full_pool_grows_to_hold_every_resident_owner(model):
    """Owners that outgrow the context make it grow once to hold them all: from then on every
    call reuses its owner's cached prefix instead of re-creating the context and re-prefilling."""
    pool = GreedyPool(model.llama, 1, slots=16)
    try:
        def round_of_typing(extra: str) -> list[tuple[bool, int]]:
            seen = []
            for owner in range(16):
                prompt = model.prompt_ids(SENTENCES[owner % len(SENTENCES)] + extra, "ぶんみゃく" * (owner % 3))
                pool.generate_many([GreedyJob(owner, prompt, 8, frozenset())])
                seen.append((pool.cold, pool.reused_tokens))
            return seen

        round_of_typing("")
        round_of_typing("よ")
        later = round_of_typing("よね")
        assert not any(cold for cold, _ in later)
        assert all(reused > 0 for _, reused in later)
        assert pool.context.n_ctx > 256
    finally:
        pool.close()
