"""The training code's model, exported to GGUF, computes the same logits in llama.cpp as in torch.

Trains a tiny model for a few steps with karukan_engine.training (seconds), exports it with the
exporter the bundled model uses, and compares next-token logits at every prompt position.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch", reason="torch (the `train` extra) is not installed")
llama_cpp = pytest.importorskip("llama_cpp", reason="llama-cpp-python (the `neural` extra) is not installed")
np = pytest.importorskip("numpy")

from karukan_engine.training.data import prompt_ids  # noqa: E402
from karukan_engine.training.export import export_model_dir, quantize, write_gguf  # noqa: E402
from karukan_engine.training.model import CharGPT, ModelConfig  # noqa: E402
from karukan_engine.training.pairs import Pair  # noqa: E402
from karukan_engine.training.train import TrainOptions, train  # noqa: E402
from karukan_engine.training.vocab import CharTokenizer  # noqa: E402

_WORDS = [("カイギ", "会議"), ("シリョウ", "資料"), ("オクリマス", "送ります"), ("キョウ", "今日"),
          ("テンキ", "天気"), ("ヘンカン", "変換"), ("ニホンゴ", "日本語"), ("ファイル", "ファイル")]
PAIRS = [Pair(context, reading + "ヲ", surface + "を", "test")
         for context in ("", "明日の", "資料を")
         for reading, surface in _WORDS] * 4
PROMPTS = [("", "カイギノシリョウヲ", "会議の資料を"), ("今日の", "テンキ", "天気"),
           ("", "ニホンゴヘンカン", "日本語変換")]


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    out = tmp_path_factory.mktemp("train")
    options = TrainOptions(minutes=10.0, max_steps=40, n_embd=64, n_layer=2, n_head=4, n_ctx=64,
                           tokens_per_batch=512, lr=3e-3, warmup_minutes=0.0, threads=2,
                           checkpoint_minutes=100.0, dev_every_minutes=100.0)
    weights = train(options, out_dir=out, train_pairs=PAIRS, dev_pairs=PAIRS[:8], log=lambda _: None)
    payload = torch.load(weights, weights_only=False)
    model = CharGPT(ModelConfig(**payload["config"]))
    model.load_state_dict(payload["model"])
    model.eval()
    # Training moved norms and biases only a little; perturb them so the comparison exercises them.
    gen = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for param in model.parameters():
            if param.dim() == 1:
                param.add_(0.1 * torch.randn(param.shape, generator=gen))
    return model, CharTokenizer(payload["tokens"]), payload, out


def _llama_logits(path, ids: list[int]) -> np.ndarray:
    llm = llama_cpp.Llama(model_path=str(path), n_ctx=64, n_batch=64, logits_all=True, verbose=False,
                          n_threads=2)
    try:
        llm.eval(ids)
        return np.array(llm.scores[: len(ids)], dtype=np.float32)
    finally:
        llm.close()


def _torch_logits(model: CharGPT, ids: list[int]) -> np.ndarray:
    with torch.no_grad():
        return model(torch.tensor([ids]))[0].numpy()


def _sequences(tokenizer: CharTokenizer) -> list[list[int]]:
    return [prompt_ids(tokenizer, c, r) + tokenizer.encode(s) for c, r, s in PROMPTS]


@pytest.mark.parametrize("kind, tolerance", [("f32", 1e-2), ("q8_0", 0.25)])
def test_llama_cpp_logits_match_torch(trained, tmp_path, kind, tolerance):
    model, tokenizer, payload, _ = trained
    f32 = write_gguf(tmp_path / "m.f32.gguf", model.state_dict(), payload["config"], tokenizer.tokens, "test")
    path = f32 if kind == "f32" else quantize(f32, tmp_path / f"m.{kind}.gguf", kind)
    for ids in _sequences(tokenizer):
        expected = _torch_logits(model, ids)
        got = _llama_logits(path, ids)
        assert got.shape == expected.shape
        assert np.abs(got - expected).max() < tolerance
        assert (got.argmax(-1) == expected.argmax(-1)).mean() >= (1.0 if kind == "f32" else 0.9)


def test_perturbed_weights_are_detected(trained, tmp_path):
    """The comparison above can fail: a model with one changed tensor disagrees."""
    model, tokenizer, payload, _ = trained
    state = {k: v.clone() for k, v in model.state_dict().items()}
    # A non-uniform change (a uniform bias shift would vanish in the final LayerNorm).
    state["blocks.1.ffn_down.weight"] += 0.2 * torch.randn(state["blocks.1.ffn_down.weight"].shape,
                                                           generator=torch.Generator().manual_seed(1))
    path = write_gguf(tmp_path / "bad.gguf", state, payload["config"], tokenizer.tokens, "bad")
    ids = _sequences(tokenizer)[0]
    assert np.abs(_llama_logits(path, ids) - _torch_logits(model, ids)).max() > 0.1


def test_llama_cpp_tokenizes_like_training(trained, tmp_path):
    """Same ids from llama.cpp's GGUF vocabulary, tokenizer.json and the training encoder,
    including byte fallback for characters outside the vocabulary."""
    from tokenizers import Tokenizer

    model, tokenizer, payload, out = trained
    model_dir = export_model_dir(out / "model.pt", tmp_path / "model", "tiny", "q8_0")
    assert sorted(p.name for p in model_dir.parent.iterdir()) == ["tiny.gguf", "tokenizer.json"]
    hf = Tokenizer.from_file(str(model_dir.parent / "tokenizer.json"))
    llm = llama_cpp.Llama(model_path=str(model_dir), n_ctx=64, verbose=False, vocab_only=True)
    try:
        for text in ("会議の資料を送ります", "日本語 変換", "未知の字鬱", "ファイルを"):
            ids = tokenizer.encode(text)
            assert llm.tokenize(text.encode("utf-8"), add_bos=False, special=False) == ids
            assert hf.encode(text, add_special_tokens=False).ids == ids
            assert llm.detokenize(ids).decode("utf-8") == text
    finally:
        llm.close()
