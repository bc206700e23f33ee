"""The rerank fine-tune: pools as the engine ranks them, packed scoring, and the training step."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from karukan_engine.training.pairs import Pair
from karukan_engine.training.pools import Pool, gold_index, read_pools, sample_pairs

torch = pytest.importorskip("torch", reason="torch (the `train` extra) is not installed")

from karukan_engine.training.model import CharGPT, ModelConfig  # noqa: E402
from karukan_engine.training.rerank_train import (  # noqa: E402
    RerankOptions, candidate_nlls, dictionary_choice, length_batches, rerank_train, trimmed,
)
from karukan_engine.training.vocab import EOS_ID  # noqa: E402

VOCAB = 40


def tiny_model(seed: int = 0) -> CharGPT:
    torch.manual_seed(seed)
    return CharGPT(ModelConfig(vocab_size=VOCAB, n_ctx=64, n_embd=16, n_layer=2, n_head=2))


token = st.integers(min_value=7, max_value=VOCAB - 1)
pools_strategy = st.lists(
    st.tuples(st.lists(token, min_size=1, max_size=8),
              st.lists(st.lists(token, min_size=0, max_size=6), min_size=1, max_size=5)),
    min_size=1, max_size=4)


def as_pools(raw) -> list[Pool]:
    return [Pool(prompt, cands, [max(1, len(c)) for c in cands], [1000 * i for i in range(len(cands))],
                 0, len(prompt), "test") for prompt, cands in raw]


def alone(model: CharGPT, prompt: list[int], cand: list[int]) -> float:
    """Summed NLL of cand + EOS after prompt, scored as one ordinary causal sequence."""
    seq = torch.tensor(prompt + cand + [EOS_ID])
    logp = torch.log_softmax(model(seq[None, :-1])[0], dim=-1)
    rows = torch.arange(len(prompt) - 1, len(seq) - 1)
    return float(-logp[rows, seq[len(prompt):]].sum())


@settings(max_examples=10, deadline=None)
@given(pools_strategy)
def test_packed_scores_equal_each_candidate_scored_alone(raw):
    model = tiny_model()
    model.eval()
    pools = as_pools(raw)
    with torch.no_grad():
        packed = candidate_nlls(model, pools)
        for pool, got in zip(pools, packed):
            want = [alone(model, pool.prompt, c) for c in pool.candidates]
            assert got.tolist() == pytest.approx(want, rel=1e-4, abs=1e-4)


@given(st.integers(min_value=1, max_value=12), st.integers(min_value=0, max_value=11),
       st.integers(min_value=2, max_value=6))
def test_trimmed_keeps_the_gold_and_the_pool_order(n, gold, limit):
    gold %= n
    pool = Pool([1], [[10 + i] for i in range(n)], [1] * n, [i for i in range(n)], gold, 1, "t")
    cut = trimmed(pool, limit)
    assert len(cut.candidates) == min(n, limit)
    assert cut.candidates[cut.gold] == pool.candidates[gold]
    firsts = [c[0] for c in cut.candidates]
    assert firsts == sorted(firsts)              # the pool's order (lattice N-best first) stays
    assert cut.candidates[dictionary_choice(cut)] == pool.candidates[0]


def test_length_batches_cover_every_pool_once():
    pools = as_pools([([7] * (1 + i % 5), [[8] * (i % 3)]) for i in range(50)])
    batches = length_batches(pools, 4, random.Random(0))
    seen = [id(p) for b in batches for p in b]
    assert sorted(seen) == sorted(id(p) for p in pools) and all(len(b) <= 4 for b in batches)


def test_gold_index_compares_nfkc():
    assert gold_index(["今日は", "ｗｗ"], "ww") == 1
    assert gold_index(["今日は"], "教派") is None


def test_sample_pairs_follows_the_shares_and_the_seed():
    pairs = [Pair("", "ア", str(i), src) for src in ("chat", "aozora") for i in range(100)]
    got = sample_pairs(pairs, 40, seed=1, shares={"chat": 0.75, "aozora": 0.25})
    assert sum(p.source == "chat" for p in got) == 30 and len(got) == 40
    assert got == sample_pairs(pairs, 40, seed=1, shares={"chat": 0.75, "aozora": 0.25})
    assert got != sample_pairs(pairs, 40, seed=2, shares={"chat": 0.75, "aozora": 0.25})


def test_pool_json_round_trip(tmp_path: Path):
    pool = Pool([4, 5, 9], [[10, 11], [12]], [2, 1], [3935, None], 1, 3, "chat")
    path = tmp_path / "pools.jsonl"
    path.write_text(pool.to_json() + "\n", encoding="utf-8")
    assert read_pools(path) == [pool]


def test_rerank_training_learns_the_choice_the_cost_gets_wrong(tmp_path: Path):
    """Pools where the dictionary's first candidate is always wrong and the gold is marked by a
    token the model can see: the fine-tune must move the gold to the top on held-out pools."""
    model = tiny_model(1)
    weights = tmp_path / "model.pt"
    torch.save({"model": model.state_dict(), "config": model.config.to_dict(), "tokens": ["x"] * VOCAB}, weights)
    rng = random.Random(0)
    lines = []
    for _ in range(160):
        prompt = [rng.randrange(7, 20) for _ in range(3)]
        # The gold repeats the prompt's first token (learnable from the prompt alone); the others
        # are tokens the prompt never holds, and the dictionary ranks them first.
        cands = [[rng.randrange(20, VOCAB)], [rng.randrange(20, VOCAB)], [prompt[0]]]
        lines.append(Pool(prompt, cands, [1, 1, 1], [1000, 1500, 2500], 2, 3, "test").to_json())
    pools = tmp_path / "pools.jsonl"
    pools.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = rerank_train(RerankOptions(minutes=0.5, epochs=100, lr=3e-3, pools_per_step=8, dev_pools=40),
                       weights_in=weights, pools_path=pools, out_dir=tmp_path / "rerank",
                       lm_dev_path=tmp_path / "none.jsonl", log=lambda _x: None)
    import json
    records = [json.loads(line) for line in (tmp_path / "rerank" / "log.jsonl").read_text().splitlines()]
    before, after = records[0]["dev_before"], records[-1]["dev_after"]
    assert before["dictionary_top1"] == 0.0
    assert before["fused_top1"] < 0.5 and after["fused_top1"] >= 0.9
    saved = torch.load(out, weights_only=False)
    assert set(saved["rerank_weights"]) == {"lattice", "nll", "nll_total", "unaligned"}
    assert saved["config"] == model.config.to_dict()


def test_pools_are_what_the_engine_ranks_and_a_stopped_build_resumes_exactly(tmp_path: Path, monkeypatch):
    """The bundled model and dictionary build the pools; a build stopped part-way (done marker
    behind lines already written) continues to the same file a full build writes."""
    from karukan_engine.training.pools import build_pools

    monkeypatch.setenv("KARUKAN_WORK_DIR", str(tmp_path))
    (tmp_path / "pairs").mkdir()
    rows = [("", "キョウハイイテンキデス", "今日はいい天気です"), ("会議の", "シリョウヲオクリマス", "資料を送ります"),
            ("", "カイギ", "会議"), ("", "ハシヲワタル", "橋を渡る")]
    (tmp_path / "pairs" / "train.jsonl").write_text(
        "".join(Pair(c, r, s, "chat").to_json() + "\n" for c, r, s in rows), encoding="utf-8")
    full = build_pools(4, out=tmp_path / "full" / "pools.jsonl", split="train", log=lambda _x: None)
    pools = read_pools(full)
    assert len(pools) == 4 and all(len(p.candidates) >= 2 for p in pools)
    for pool in pools:
        assert 0 <= pool.gold < len(pool.candidates) and pool.costs[0] is not None
    resumed = tmp_path / "resumed" / "pools.jsonl"
    resumed.parent.mkdir()
    lines = full.read_text(encoding="utf-8").splitlines(keepends=True)
    # Stopped after the first pair's pool was counted, with a further line half-written.
    resumed.write_text(lines[0] + lines[1][:10], encoding="utf-8")
    resumed.with_suffix(".done").write_text("1 1")
    build_pools(4, out=resumed, split="train", log=lambda _x: None)
    assert resumed.read_text(encoding="utf-8") == full.read_text(encoding="utf-8")
