"""The GPU path of issue #12: token arrays, weight parts and gpu_train.py rehearsed on CPU.

Everything here runs on tiny synthetic pairs in tmp_path (no corpus, no GPU): the arrays give back
exactly what data.encode_pair gives, the parts join to the bytes they were cut from, and a few
CPU steps of gpu_train.py leave parts that join into a model.pt that CharGPT and the exporter load.
"""

from __future__ import annotations

import json
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

torch = pytest.importorskip("torch", reason="torch (the `train` extra) is not installed")
np = pytest.importorskip("numpy")

from karukan_engine.training.data import IGNORE, collate, encode_pair  # noqa: E402
from karukan_engine.training.gpu_train import (  # noqa: E402
    GpuOptions, WorkerBatches, check_output_fits, main, micro_scales, pad_to_multiple, parameter_count,
    payload_bytes, state_for_save, train_gpu,
)
from karukan_engine.training.model import CharGPT, ModelConfig  # noqa: E402
from karukan_engine.training.pairs import Pair  # noqa: E402
from karukan_engine.training.token_arrays import (  # noqa: E402
    build_token_arrays, kept_mask, load_split, load_token_arrays, pack, unpack,
)
from karukan_engine.training.train import mean_loss, vocabulary_for, weighted_loss  # noqa: E402
from karukan_engine.training.weight_parts import join_parts, read_parts, save_payload_parts, write_parts  # noqa: E402

_WORDS = [("カイギ", "会議"), ("シリョウ", "資料"), ("オクリマス", "送ります"), ("キョウ", "今日"),
          ("テンキ", "天気"), ("ヘンカン", "変換"), ("ニホンゴ", "日本語"), ("ファイル", "ファイル")]


def _pairs(n: int, seed: int = 0) -> list[Pair]:
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        words = [rng.choice(_WORDS) for _ in range(rng.randint(1, 3))]
        context = rng.choice(["", "明日の", "資料を", "鬱な ab", "\U0001f600の"])
        out.append(Pair(context, "".join(w[0] for w in words), "".join(w[1] for w in words), "t"))
    return out


TRAIN = _pairs(240)
DEV = _pairs(24, seed=1)


# --- token arrays -------------------------------------------------------------------------------


def test_pack_round_trip_equals_encode_pair_and_drops_what_does_not_fit():
    tokenizer = vocabulary_for(TRAIN, 400)
    long_pair = Pair("", "カ" * 70, "会" * 70, "t")
    pairs = TRAIN[:20] + [long_pair] + TRAIN[20:30]
    encoded = [encode_pair(tokenizer, p, 64) for p in pairs]
    assert encoded[20] is None  # longer than n_ctx: dropped, as train.py drops it
    arrays = pack(encoded)
    assert arrays["ids"].dtype == np.uint16 and arrays["offsets"].dtype == np.uint32
    assert arrays["prompt_len"].dtype == np.uint8 and arrays["context_len"].dtype == np.uint8
    assert unpack(arrays) == [e for e in encoded if e is not None]
    assert kept_mask(arrays).tolist() == [e is not None for e in encoded]


_pair_text = st.text(alphabet=st.sampled_from(list("会議の資料を送ります晴鬱 ab。アイカナ\U0001f600ー")), max_size=24)
_pair = st.builds(Pair, _pair_text, _pair_text, _pair_text, st.just("t"))


@given(st.lists(_pair, max_size=30), st.lists(_pair, max_size=30), st.integers(8, 64))
@settings(max_examples=60, deadline=None)
def test_arrays_round_trip_property(vocab_pairs, pairs, n_ctx):
    tokenizer = vocabulary_for(vocab_pairs, 300)
    encoded = [encode_pair(tokenizer, p, n_ctx) for p in pairs]
    arrays = pack(encoded)
    assert unpack(arrays) == [e for e in encoded if e is not None]
    assert kept_mask(arrays).tolist() == [e is not None for e in encoded]
    assert all(type(i) is int for e in unpack(arrays) for i in e.ids)


def test_built_arrays_load_back_as_train_py_would_encode(tmp_path):
    meta = build_token_arrays(TRAIN, DEV, tmp_path, vocab_size=400, n_ctx=64, dev_limit=20, log=lambda _: None)
    data = load_token_arrays(tmp_path)
    tokenizer = vocabulary_for(TRAIN, 400)
    assert data.tokens == tokenizer.tokens
    assert data.train == [e for e in (encode_pair(tokenizer, p, 64) for p in TRAIN) if e]
    assert data.dev == [e for e in (encode_pair(tokenizer, p, 64) for p in DEV[:20]) if e]
    assert meta["train"]["kept_share_of_fitting"] == 1.0 and data.meta["n_ctx"] == 64
    assert meta["total_bytes"] == sum(p.stat().st_size for p in tmp_path.iterdir())
    assert load_token_arrays(tmp_path, ("dev",)).train == []


def test_arrays_over_budget_keep_a_seeded_subset_within_it(tmp_path):
    pairs = _pairs(3000, seed=2)
    full = build_token_arrays(pairs, DEV, tmp_path / "full", vocab_size=400, n_ctx=64, log=lambda _: None)
    budget = full["total_bytes"] - full["train"]["bytes"] // 2
    meta = build_token_arrays(pairs, DEV, tmp_path / "a", vocab_size=400, n_ctx=64, max_bytes=budget,
                              log=lambda _: None)
    again = build_token_arrays(pairs, DEV, tmp_path / "b", vocab_size=400, n_ctx=64, max_bytes=budget,
                               log=lambda _: None)
    assert meta["total_bytes"] <= budget
    assert 0.2 < meta["train"]["kept_share_of_fitting"] < 1.0
    assert (tmp_path / "a" / "train.npz").read_bytes() == (tmp_path / "b" / "train.npz").read_bytes()
    assert again["train"]["kept"] == meta["train"]["kept"]
    # Every kept example is its own pair's encoding, and the vocabulary is still the full split's.
    tokenizer = vocabulary_for(pairs, 400)
    arrays = load_split(tmp_path / "a" / "train.npz")
    chosen = [p for p, kept in zip(pairs, kept_mask(arrays)) if kept]
    assert unpack(arrays) == [encode_pair(tokenizer, p, 64) for p in chosen]
    assert load_token_arrays(tmp_path / "a").tokens == tokenizer.tokens


def test_arrays_of_another_format_are_refused(tmp_path):
    build_token_arrays(TRAIN[:20], DEV[:4], tmp_path, vocab_size=400, n_ctx=64, log=lambda _: None)
    meta = json.loads((tmp_path / "meta.json").read_text())
    (tmp_path / "meta.json").write_text(json.dumps({**meta, "format": 99}))
    with pytest.raises(ValueError, match="format"):
        load_token_arrays(tmp_path)


# --- weight parts -------------------------------------------------------------------------------


def test_parts_are_bounded_and_join_to_the_same_bytes(tmp_path):
    data = bytes(random.Random(0).randbytes(10_000))
    files = write_parts(data, tmp_path, part_bytes=3000)
    parts = [f for f in files if ".part" in f.name]
    assert [f.stat().st_size for f in parts] == [3000, 3000, 3000, 1000]
    assert join_parts(tmp_path, tmp_path / "joined" / "model.pt").read_bytes() == data
    # Fewer parts on a later save: the stale ones go, the index describes what is there.
    write_parts(data[:4000], tmp_path, part_bytes=3000)
    assert sorted(p.name for p in tmp_path.glob("model.pt.part*")) == ["model.pt.part0", "model.pt.part1"]
    assert read_parts(tmp_path) == data[:4000]
    write_parts(b"", tmp_path / "empty")
    assert read_parts(tmp_path / "empty") == b""


def test_a_damaged_part_is_refused_and_no_target_written(tmp_path):
    write_parts(b"x" * 5000, tmp_path, part_bytes=2000)
    damaged = bytearray((tmp_path / "model.pt.part1").read_bytes())
    damaged[7] ^= 1
    (tmp_path / "model.pt.part1").write_bytes(bytes(damaged))
    with pytest.raises(ValueError, match="part1"):
        join_parts(tmp_path, tmp_path / "out" / "model.pt")
    assert not (tmp_path / "out" / "model.pt").exists()
    (tmp_path / "model.pt.part2").unlink()
    with pytest.raises((ValueError, FileNotFoundError)):
        read_parts(tmp_path)


# --- sizing, padding, accumulation --------------------------------------------------------------


@pytest.mark.parametrize("d,layers,heads,vocab", [(32, 1, 2, 300), (48, 3, 4, 517), (64, 2, 4, 4000)])
def test_parameter_count_matches_the_model(d, layers, heads, vocab, tmp_path):
    config = ModelConfig(vocab_size=vocab, n_ctx=64, n_embd=d, n_layer=layers, n_head=heads)
    model = CharGPT(config)
    assert parameter_count(config) == model.n_params()
    saved = save_payload_parts({"model": state_for_save(model.state_dict(), "float16"), "tokens": ["x"] * vocab},
                               tmp_path)
    size = sum(f.stat().st_size for f in saved if ".part" in f.name)
    assert size <= payload_bytes(config, "float16", vocab) <= 2 * size + 200_000


def test_the_default_gpu_model_comes_back_in_parts_and_a_larger_one_is_refused_up_front():
    options = GpuOptions(arrays=None, out=None)
    config = ModelConfig(vocab_size=4000, n_ctx=128, n_embd=options.n_embd, n_layer=options.n_layer,
                         n_head=options.n_head)
    assert 25e6 < parameter_count(config) < 28.3e6  # q8_0 (~1.0625 bytes a parameter) stays under 30 MB
    assert check_output_fits(config, options, 4000) <= 6
    with pytest.raises(ValueError, match="come back"):
        check_output_fits(config, GpuOptions(arrays=None, out=None, save_dtype="float32"), 4000)
    with pytest.raises(ValueError, match="come back"):
        check_output_fits(ModelConfig(vocab_size=4000, n_embd=768, n_layer=12, n_head=12), options, 4000)


def _collated(n: int, seed: int):
    tokenizer = vocabulary_for(TRAIN, 400)
    examples = [encode_pair(tokenizer, p, 64) for p in _pairs(n, seed)]
    return collate(examples, 0.5), len(tokenizer)


def test_padding_to_a_multiple_changes_neither_loss_nor_logits():
    torch.manual_seed(0)
    (inputs, targets, weights), vocab = _collated(5, 3)
    model = CharGPT(ModelConfig(vocab_size=vocab, n_ctx=64, n_embd=32, n_layer=2, n_head=2)).eval()
    padded = pad_to_multiple((inputs, targets, weights), 16, 64)
    assert padded[0].shape[1] % 16 == 0 and padded[0].shape[1] >= inputs.shape[1]
    assert (padded[1][:, inputs.shape[1]:] == IGNORE).all()
    with torch.no_grad():
        plain, wide = model(inputs), model(padded[0])
    torch.testing.assert_close(wide[:, : inputs.shape[1]], plain)
    torch.testing.assert_close(weighted_loss(wide, padded[1], padded[2]), weighted_loss(plain, targets, weights))
    # Never beyond n_ctx.
    assert pad_to_multiple(padded, 1000, 64)[0].shape[1] == 64


def test_accumulated_micro_batches_give_the_weighted_mean_of_the_whole_batch():
    torch.manual_seed(0)
    (a, vocab), (b, _) = _collated(3, 4), _collated(7, 5)
    length = max(a[0].shape[1], b[0].shape[1])
    a, b = pad_to_multiple(a, length, length), pad_to_multiple(b, length, length)
    model = CharGPT(ModelConfig(vocab_size=vocab, n_ctx=64, n_embd=32, n_layer=2, n_head=2)).eval()
    with torch.no_grad():
        parts = sum(weighted_loss(model(m[0]), m[1], m[2]) * s for s, m in zip(micro_scales([a, b]), [a, b]))
        whole = weighted_loss(model(torch.cat([a[0], b[0]])), torch.cat([a[1], b[1]]), torch.cat([a[2], b[2]]))
    torch.testing.assert_close(parts, whole)


# --- the rehearsal: gpu_train.py on CPU ---------------------------------------------------------


@pytest.fixture(scope="module")
def arrays(tmp_path_factory):
    directory = tmp_path_factory.mktemp("arrays")
    build_token_arrays(TRAIN, DEV, directory, vocab_size=400, n_ctx=64, log=lambda _: None)
    return directory


_TINY = ["--device", "cpu", "--n-embd", "32", "--n-layer", "2", "--n-head", "2", "--micro-tokens", "256",
         "--accum", "2", "--threads", "1", "--lr", "3e-3", "--warmup-minutes", "0", "--log-every", "2"]


def test_rehearsal_parts_join_into_a_model_pt_with_the_trained_weights(arrays, tmp_path):
    out = tmp_path / "out"
    options = GpuOptions(arrays=arrays, out=out, minutes=30, max_steps=6, device="cpu", n_embd=32, n_layer=2,
                         n_head=2, micro_tokens=256, accum=2, threads=1, lr=3e-3, warmup_minutes=0.0,
                         loader_workers=0, dev_every_minutes=0.0, save_dtype="float32", part_bytes=60_000,
                         max_out_files=20)
    run = train_gpu(options, log=lambda _: None)
    assert run.summary["steps"] == 6
    parts = sorted(out.glob("model.pt.part*"))
    assert len(parts) > 1 and all(p.stat().st_size <= 60_000 for p in parts)
    joined = join_parts(out, tmp_path / "work" / "train" / "model.pt")
    payload = torch.load(joined, weights_only=False)
    assert set(payload) == {"model", "config", "tokens", "progress", "dev_loss"}
    assert payload["tokens"] == load_token_arrays(arrays, ("dev",)).tokens
    model = CharGPT(ModelConfig(**payload["config"]))
    model.load_state_dict(payload["model"])
    for name, tensor in model.state_dict().items():
        assert torch.equal(tensor, run.saved[name]), name
    # Lowest dev loss kept: the payload's is the minimum of every dev loss the run logged.
    log = [json.loads(line) for line in (out / "log.jsonl").read_text().splitlines()]
    dev_losses = [r["dev_loss"] for r in log if "dev_loss" in r and "event" not in r]
    assert len(dev_losses) >= 6
    assert round(payload["dev_loss"], 4) == min(dev_losses + [log[-1]["final_dev_loss"]])
    if payload["progress"]["chosen_step"] == 6:
        for name, tensor in run.model.state_dict().items():
            assert torch.equal(tensor, payload["model"][name]), name
    # Trained: the weights moved away from the seeded initialisation.
    torch.manual_seed(0)
    initial = CharGPT(ModelConfig(**payload["config"]))
    assert not torch.equal(initial.token_embd.weight, model.token_embd.weight)


def test_rehearsal_cli_with_a_loader_process_and_float16_parts(arrays, tmp_path):
    out = tmp_path / "out"
    assert main(["--arrays", str(arrays), "--out", str(out), "--minutes", "30", "--max-steps", "3",
                 "--loader-workers", "1", "--no-keep-best", "--dev-every-minutes", "100", "--dev-limit", "4",
                 *_TINY]) == 0
    payload = torch.load(join_parts(out, tmp_path / "model.pt"), weights_only=False)
    assert payload["progress"]["step"] == 3 and payload["progress"]["final"]
    assert payload["model"]["token_embd.weight"].dtype == torch.float16
    assert payload["model"]["output_norm.weight"].dtype == torch.float32
    model = CharGPT(ModelConfig(**payload["config"]))
    model.load_state_dict(payload["model"])
    assert torch.equal(model.token_embd.weight, payload["model"]["token_embd.weight"].float())
    # The dev loss is train.py's mean_loss over the first --dev-limit dev examples.
    dev = load_token_arrays(arrays, ("dev",)).dev
    assert payload["dev_loss"] == pytest.approx(mean_loss(model, dev[:4], 256, "cpu"), rel=1e-2)
    assert payload["dev_loss"] != pytest.approx(mean_loss(model, dev, 256, "cpu"), rel=1e-3)


def test_a_failing_loader_process_stops_the_run_with_its_error(tmp_path):
    (tmp_path / "meta.json").write_text(json.dumps({"format": 1}))  # no train.npz beside it
    source = WorkerBatches(GpuOptions(arrays=tmp_path, out=tmp_path, loader_workers=1))
    try:
        with pytest.raises(RuntimeError, match="loader process failed"):
            next(source)
    finally:
        source.close()
    assert not any(p.is_alive() for p in source.processes)


def test_the_joined_rehearsal_model_exports_with_the_pipeline_command(arrays, tmp_path, monkeypatch):
    pytest.importorskip("gguf", reason="gguf (the `train` extra) is not installed")
    pytest.importorskip("llama_cpp", reason="llama-cpp-python (the `neural` extra) is not installed")
    from karukan_engine.training.__main__ import main as pipeline

    out = tmp_path / "out"
    main(["--arrays", str(arrays), "--out", str(out), "--minutes", "30", "--max-steps", "2",
          "--loader-workers", "0", *_TINY])
    join_parts(out, tmp_path / "work" / "train" / "model.pt")
    monkeypatch.setenv("KARUKAN_WORK_DIR", str(tmp_path / "work"))
    assert pipeline(["export", "--model-dir", str(tmp_path / "model")]) == 0
    gguf_file = tmp_path / "model" / "karukan-bundled.gguf"
    assert gguf_file.stat().st_size > 0 and (tmp_path / "model" / "tokenizer.json").exists()


def test_without_loader_processes_the_run_builds_its_batches_itself(arrays, tmp_path, monkeypatch):
    import karukan_engine.training.gpu_train as gpu_train

    class Unavailable:
        def __init__(self, options):
            raise OSError("no semaphores here")

    monkeypatch.setattr(gpu_train, "WorkerBatches", Unavailable)
    messages = []
    options = GpuOptions(arrays=arrays, out=tmp_path, minutes=30, max_steps=2, device="cpu", n_embd=32,
                         n_layer=2, n_head=2, micro_tokens=256, accum=2, threads=1, loader_workers=3)
    run = gpu_train.train_gpu(options, log=messages.append)
    assert run.summary["steps"] == 2
    assert any("building batches in this process" in m for m in messages)
    start = json.loads((tmp_path / "log.jsonl").read_text().splitlines()[0])
    assert start["event"] == "start" and start["loader_processes"] == 0


def test_bf16_autocast_steps_run_and_learn_on_cpu(arrays, tmp_path):
    options = GpuOptions(arrays=arrays, out=tmp_path, minutes=30, max_steps=8, device="cpu", n_embd=32,
                         n_layer=2, n_head=2, micro_tokens=256, accum=2, threads=1, lr=3e-3,
                         warmup_minutes=0.0, loader_workers=0, amp="bf16", log_every=1,
                         dev_every_minutes=100)
    run = train_gpu(options, log=lambda _: None)
    losses = [r["loss"] for r in map(json.loads, (tmp_path / "log.jsonl").read_text().splitlines()) if "loss" in r]
    assert len(losses) == 8 and all(np.isfinite(losses))
    assert sum(losses[-3:]) < sum(losses[:3])
    assert all(t.dtype in (torch.float16, torch.float32) for t in run.saved.values())
