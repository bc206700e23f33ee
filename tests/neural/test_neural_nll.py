"""NLL scorer: batched scoring equals scoring each candidate alone, and matches the definition."""

import unicodedata

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("llama_cpp")

from karukan_engine.neural.model import ModelOptions, load_model
from karukan_engine.neural.nll import _rounded_up
from karukan_engine.neural.runtime import ContextSize, GrowingContext
from neural_support import fresh_logprobs, tiny_model_dir

SURFACES = ["漢字", "感じ", "幹事", "かんじ", "カンジ", "", "漢字を書く", "鬱"]


@pytest.fixture(scope="module", params=["llama", "gpt2"])
def model(request):
    m = load_model(tiny_model_dir(request.param), ModelOptions(n_threads=1))
    yield m
    m.close()


def _definition(model, reading, context, surface):
    prompt = model.prompt_ids(reading, context)
    ids = model.tokenizer.encode(unicodedata.normalize("NFKC", surface)) if surface else []
    total = 0.0
    for i, target in enumerate(ids + [model.eos_id]):
        total += fresh_logprobs(model.llama, prompt + ids[:i])[target]
    return -total / max(1, len(surface))


def test_single_score_matches_definition(model):
    for surface in ["漢字", "かんじ", "鬱", ""]:
        assert model.score("かんじ", "", surface) == pytest.approx(_definition(model, "かんじ", "", surface), abs=1e-4)


def test_batched_equals_single(model):
    scorer = model.scorer()
    batched = scorer.score_many("かんじ", "漢字の", SURFACES)
    single = [scorer.score("かんじ", "漢字の", s) for s in SURFACES]
    assert np.allclose(batched, single, atol=1e-4)
    assert len(set(np.round(batched, 3))) > 3  # scores really differ between candidates


def test_batched_equals_single_without_eos(model):
    scorer = model.scorer()
    batched = scorer.score_many("かんじ", "漢字の", SURFACES, with_eos=False)
    single = [scorer.score("かんじ", "漢字の", s, with_eos=False) for s in SURFACES]
    assert np.allclose(batched, single, atol=1e-4)
    assert batched[SURFACES.index("")] == 0.0
    assert not np.allclose(batched, scorer.score_many("かんじ", "漢字の", SURFACES), atol=1e-3)  # EOS counts


def test_batched_handles_more_candidates_than_sequences(model):
    surfaces = [chr(0x4E00 + i) + "字" for i in range(300)]  # > 255 sequences: several rounds
    scorer = model.scorer()
    batched = scorer.score_many("じ", "", surfaces)
    for i in (0, 1, 254, 255, 299):
        assert batched[i] == pytest.approx(scorer.score("じ", "", surfaces[i]), abs=1e-4)


def test_calls_are_independent(model):
    scorer = model.scorer()
    a = scorer.score("かんじ", "", "漢字")
    scorer.score_many("こうえん", "子どもと", ["公園", "講演"])
    assert scorer.score("かんじ", "", "漢字") == pytest.approx(a, abs=1e-6)
    assert scorer.score_many("かんじ", "", []) == []


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(requests=st.lists(st.tuples(st.integers(1, 700), st.integers(1, 64), st.integers(1, 8)), min_size=1, max_size=6))
def test_a_growing_context_is_recreated_only_when_a_request_does_not_fit(model, requests):
    contexts = GrowingContext(model.llama, 1, _rounded_up)
    try:
        grown = ContextSize(0, 0, 0)
        for n_ctx, n_batch, n_seq in requests:
            size = ContextSize(n_ctx, n_batch, n_seq)
            before = contexts.ctx
            ctx = contexts.get(size)
            assert ctx.size.covers(size) and ctx.size.covers(grown)   # never smaller than before
            assert (ctx is before) == (before is not None and before.size.covers(size))
            assert ctx.size.n_ctx & (ctx.size.n_ctx - 1) == 0 and ctx.size.n_ctx >= 256
            grown = ctx.size
    finally:
        contexts.free()
    assert contexts.ctx is None
