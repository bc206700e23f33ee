"""benchmarks/draft_simulation.py: a simulated draft is the model's own greedy output for its
first ceil(A * n) tokens and wrong after that, so the pool accepts exactly that share."""

import math
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

from draft_simulation import DraftOracle, simulated_draft  # noqa: E402


@given(st.lists(st.integers(0, 99), max_size=30), st.floats(0, 1))
def test_the_draft_agrees_for_its_first_share_and_never_after(own, acceptance):
    draft = simulated_draft(own, acceptance, 100)
    keep = math.ceil(acceptance * len(own) - 1e-9)
    assert len(draft) == len(own)
    assert draft[:keep] == own[:keep]
    assert all(d != o for d, o in zip(draft[keep:], own[keep:]))


def test_the_pool_accepts_the_simulated_share():
    pytest.importorskip("llama_cpp")
    from karukan_engine.neural.greedy_pool import GreedyJob, GreedyPool
    from karukan_engine.neural.model import ModelOptions, load_model
    from neural_support import tiny_model_dir

    with load_model(tiny_model_dir("llama"), ModelOptions(n_threads=1)) as model:
        prompt = model.prompt_ids("きょうはいいてんき")
        oracle = DraftOracle()
        assert oracle(prompt, 9) == []   # recording: no draft
        oracle.fill(model, 9)
        pool = GreedyPool(model.llama, 1, slots=2)
        try:
            for acceptance, accepted in ((1.0, 8), (0.5, 5), (0.0, 0)):
                oracle.acceptance = acceptance
                draft = oracle(prompt, 9)
                [result] = pool.generate_many([GreedyJob(("s", acceptance), prompt, 9, frozenset(), draft=draft)])
                assert list(result[0]) == oracle.own[tuple(prompt)]   # drafts never change the output
                # 8 of the 9 draft tokens can be checked (the first output follows the prompt)
                assert pool.draft_tokens == 8 and pool.accepted_tokens == min(accepted, 8)
        finally:
            pool.close()
        assert oracle.served == 3 and oracle.missing == 0
