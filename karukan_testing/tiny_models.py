"""Tiny jinen-layout GGUF models with deterministic random weights, written at test time.

A model directory holds `<name>.gguf` and (optionally) `tokenizer.json` beside it, as the
bundled and downloaded models do. The vocabulary is character level with byte fallback:

    0 <unk> | 1 <s> | 2 </s> | 3 <pad> | 4..6 U+EE02 U+EE00 U+EE01 | 256 <0xNN> | ▁ | ASCII |
    hiragana | katakana | punctuation | common kanji | CJK from U+4E00 up to the vocab size

Architectures: "llama" (RMSNorm, RoPE, SwiGLU), "gpt2" (LayerNorm, learned positions, GELU) and,
for benchmarks in the real shapes, "qwen3". Speed does not depend on weight values, and every
equivalence/scoring property holds for any weights, so random weights serve both.
Needs the `gguf`, `numpy` and (for tokenizer.json) `tokenizers` packages.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import AbstractSet, Sequence

import numpy as np

from karukan_engine.neural.char_vocab import EOS_ID, SPECIAL_TOKENS, write_gguf_vocabulary
from karukan_engine.neural.prompt import MARKS

SPACE_PIECE = "\u2581"
_PUNCTUATION = "ー・、。「」『』（）！？〜…　"
_COMMON_KANJI = (
    "日本語漢字変換今日明天気東京都大学生私公園講演後援感子政治家歯科医番組司会箸橋端持"
    "早稲田会議資料送雨雪山川時間人物事行来見言思書読話電車駅前中後上下左右年月火水木金土"
)


@dataclass(frozen=True)
class TinyModelSpec:
    arch: str = "llama"          # "llama" | "gpt2" | "qwen3"
    vocab_size: int = 700        # at least the fixed part (~ 530 tokens)
    n_embd: int = 64
    n_layer: int = 2
    n_head: int = 4
    n_head_kv: int | None = None  # llama/qwen3 only; None = n_head
    n_ff: int | None = None       # None = 4 * n_embd (gpt2) or 3 * n_embd (llama/qwen3)
    n_ctx_train: int = 256
    seed: int = 0
    # std of the (tied) output embedding; larger = peakier next-token distributions.
    embed_std: float = 0.5
    # extra scale of the </s> row so that generations end after a few tokens.
    eos_scale: float = 1.0
    tokenizer_json: bool = True
    name: str = "tiny"


def vocabulary(size: int) -> list[str]:
    """The token strings, in id order (see module docstring)."""
    tokens: list[str] = list(SPECIAL_TOKENS) + list(MARKS)
    tokens += [f"<0x{b:02X}>" for b in range(256)]
    tokens.append(SPACE_PIECE)
    seen = set(tokens)

    def add(ch: str) -> None:
        if ch not in seen and len(tokens) < size:
            seen.add(ch)
            tokens.append(ch)

    for c in range(0x21, 0x7F):
        add(chr(c))
    for c in range(0x3041, 0x3097):
        add(chr(c))
    for c in range(0x30A1, 0x30FB):
        add(chr(c))
    for ch in _PUNCTUATION + _COMMON_KANJI:
        add(ch)
    c = 0x4E00
    while len(tokens) < size:
        add(chr(c))
        c += 1
    if len(tokens) < size:
        raise ValueError("vocabulary too small")
    return tokens


def block_tensors(arch: str, n_layer: int, d: int, ff: int, n_head: int, n_kv: int, head_dim: int,
                  w, norm) -> dict[str, np.ndarray]:
    """The per-layer tensors of a llama.cpp gpt2 / llama / qwen3 model, drawn with `w` (a matrix
    or bias of a shape, optional std) and `norm` (a norm weight of a length)."""
    gpt2 = arch == "gpt2"
    out: dict[str, np.ndarray] = {}
    for i in range(n_layer):
        p = f"blk.{i}."
        out[p + "attn_norm.weight"] = norm(d)
        out[p + "ffn_norm.weight"] = norm(d)
        if gpt2:
            out[p + "attn_norm.bias"] = w(d, std=0.05)
            out[p + "attn_qkv.weight"] = w(3 * d, d)
            out[p + "attn_qkv.bias"] = w(3 * d, std=0.05)
            out[p + "attn_output.weight"] = w(d, d)
            out[p + "attn_output.bias"] = w(d, std=0.05)
            out[p + "ffn_norm.bias"] = w(d, std=0.05)
            out[p + "ffn_up.weight"] = w(ff, d)
            out[p + "ffn_up.bias"] = w(ff, std=0.05)
            out[p + "ffn_down.weight"] = w(d, ff)
            out[p + "ffn_down.bias"] = w(d, std=0.05)
        else:
            out[p + "attn_q.weight"] = w(n_head * head_dim, d)
            out[p + "attn_k.weight"] = w(n_kv * head_dim, d)
            out[p + "attn_v.weight"] = w(n_kv * head_dim, d)
            out[p + "attn_output.weight"] = w(d, n_head * head_dim)
            out[p + "ffn_gate.weight"] = w(ff, d)
            out[p + "ffn_up.weight"] = w(ff, d)
            out[p + "ffn_down.weight"] = w(d, ff)
            if arch == "qwen3":
                out[p + "attn_q_norm.weight"] = norm(head_dim)
                out[p + "attn_k_norm.weight"] = norm(head_dim)
    return out


def _tensors(spec: TinyModelSpec, rng: np.random.Generator) -> dict[str, np.ndarray]:
    d, v = spec.n_embd, spec.vocab_size
    head_dim = d // spec.n_head
    n_kv = spec.n_head_kv or spec.n_head
    gpt2 = spec.arch == "gpt2"
    ff = spec.n_ff or (4 * d if gpt2 else 3 * d)

    def w(*shape: int, std: float | None = None) -> np.ndarray:
        s = std if std is not None else 1.0 / np.sqrt(shape[-1])
        return (rng.standard_normal(shape) * s).astype(np.float32)

    def norm(n: int) -> np.ndarray:
        return (1.0 + 0.1 * rng.standard_normal(n)).astype(np.float32)

    embd = w(v, d, std=spec.embed_std)
    embd[EOS_ID] *= spec.eos_scale
    out: dict[str, np.ndarray] = {"token_embd.weight": embd, "output_norm.weight": norm(d)}
    if gpt2:
        out["position_embd.weight"] = w(spec.n_ctx_train, d, std=0.1)
        out["output_norm.bias"] = w(d, std=0.05)
    out.update(block_tensors(spec.arch, spec.n_layer, d, ff, spec.n_head, n_kv, head_dim, w, norm))
    return out


def write_gguf(path: Path, spec: TinyModelSpec) -> Path:
    """Write one GGUF (f32 weights, SPM-style character vocabulary) and return its path."""
    import gguf

    if spec.arch not in ("llama", "gpt2", "qwen3"):
        raise ValueError(f"unsupported architecture {spec.arch!r}")
    tokens = vocabulary(spec.vocab_size)
    rng = np.random.default_rng(spec.seed)
    head_dim = spec.n_embd // spec.n_head
    n_kv = spec.n_head_kv or spec.n_head
    gpt2 = spec.arch == "gpt2"
    ff = spec.n_ff or (4 * spec.n_embd if gpt2 else 3 * spec.n_embd)

    writer = gguf.GGUFWriter(str(path), spec.arch)
    writer.add_name(spec.name)
    writer.add_file_type(0)  # all f32
    writer.add_context_length(spec.n_ctx_train)
    writer.add_embedding_length(spec.n_embd)
    writer.add_block_count(spec.n_layer)
    writer.add_feed_forward_length(ff)
    writer.add_head_count(spec.n_head)
    if gpt2:
        writer.add_layer_norm_eps(1e-5)
    else:
        writer.add_head_count_kv(n_kv)
        writer.add_layer_norm_rms_eps(1e-6)
        writer.add_rope_dimension_count(head_dim)
        writer.add_rope_freq_base(10000.0)
        if spec.arch == "qwen3":
            writer.add_key_length(head_dim)
            writer.add_value_length(head_dim)
    write_gguf_vocabulary(writer, tokens)
    for name, array in _tensors(spec, rng).items():
        writer.add_tensor(name, array)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def write_tokenizer_json(path: Path, vocab_size: int) -> Path:
    """A `tokenizers` BPE without merges (= one token per character) with byte fallback."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, normalizers

    tokens = vocabulary(vocab_size)
    model = models.BPE(vocab={t: i for i, t in enumerate(tokens)}, merges=[], unk_token="<unk>", byte_fallback=True)
    tok = Tokenizer(model)
    tok.normalizer = normalizers.Replace(" ", SPACE_PIECE)
    tok.decoder = decoders.Sequence([decoders.Replace(SPACE_PIECE, " "), decoders.ByteFallback(), decoders.Fuse()])
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in (*SPECIAL_TOKENS, *MARKS)])
    tok.save(str(path))
    # Sanity: ids must agree with the GGUF vocabulary.
    saved = json.loads(path.read_text(encoding="utf-8"))
    if saved["model"]["vocab"].get(MARKS[0]) != len(SPECIAL_TOKENS):
        raise RuntimeError("tokenizer.json ids do not match the GGUF vocabulary")
    return path


def write_model_dir(directory: Path, spec: TinyModelSpec = TinyModelSpec()) -> Path:
    """Create `directory/<name>.gguf` (+ tokenizer.json when spec.tokenizer_json); return the dir."""
    directory.mkdir(parents=True, exist_ok=True)
    write_gguf(directory / f"{spec.name}.gguf", spec)
    if spec.tokenizer_json:
        write_tokenizer_json(directory / "tokenizer.json", spec.vocab_size)
    return directory


# Shapes of the real models (vocab 6000), for benchmarks; weights random.
REAL_SHAPES: dict[str, TinyModelSpec] = {
    # jinen-v1-xsmall: GPT-2, 26M
    "gpt2-26m": TinyModelSpec(arch="gpt2", vocab_size=6000, n_embd=512, n_layer=7, n_head=8, n_ctx_train=1024, name="gpt2-26m"),
    # jinen-v1-small / zenz-small: GPT-2 small shape, 90M
    "gpt2-90m": TinyModelSpec(arch="gpt2", vocab_size=6000, n_embd=768, n_layer=12, n_head=12, n_ctx_train=1024, name="gpt2-90m"),
    # jinen-v2-small: Qwen3, ~109M (approximate layout: GQA 12/4 heads, SwiGLU 2048)
    "qwen3-109m": TinyModelSpec(arch="qwen3", vocab_size=6000, n_embd=768, n_layer=16, n_head=12, n_head_kv=4, n_ff=2048, n_ctx_train=1024, name="qwen3-109m"),
}


def real_shape(name: str, seed: int = 0) -> TinyModelSpec:
    return replace(REAL_SHAPES[name], seed=seed)


# --- slow reference decoders (tests and benchmarks) ------------------------------------------
# They re-evaluate everything in a brand-new llama context for every next-token distribution:
# no KV reuse at all, so they are the oracle the fast paths must reproduce exactly.


def fresh_logprobs(llama_model, tokens: Sequence[int], n_threads: int = 1):
    """log p of the next token after `tokens`, from a brand-new context (no cache reuse)."""
    from karukan_engine.neural.logprob import log_softmax_rows
    from karukan_engine.neural.runtime import ContextSize, LlamaContext

    ctx = LlamaContext(llama_model, ContextSize(len(tokens) + 8, len(tokens), 1), n_threads)
    try:
        return log_softmax_rows(ctx.decode_run(list(tokens), 0)[None, :])[0]
    finally:
        ctx.free()


def reference_greedy(llama_model, prompt: Sequence[int], max_new: int, stop: AbstractSet[int], n_threads: int = 1):
    """(tokens without stop, finished) re-evaluating prompt + output from scratch every step."""
    out: list[int] = []
    while len(out) < max_new:
        lp = fresh_logprobs(llama_model, list(prompt) + out, n_threads)
        token = int(lp.argmax())
        if token in stop:
            return out, True
        out.append(token)
    return out, False


def reference_beam(llama_model, prompt: Sequence[int], max_new: int, beam: int, stop: AbstractSet[int], n_threads: int = 1):
    """Full re-evaluation beam search: a fresh context for every beam at every step, with the
    bookkeeping spelled out independently of karukan_engine.neural.beam. Returns
    [(tokens incl. stop token, score, finished)] best first."""
    if beam <= 0 or max_new <= 0 or not prompt:
        return []
    beam = min(beam, 128)
    expand = max(beam, 4)

    def best(lp, k):
        return sorted(range(len(lp)), key=lambda t: (-lp[t], t))[:k]

    lp0 = fresh_logprobs(llama_model, prompt, n_threads)
    finished, active = [], []
    for t in best(lp0, beam):
        (finished if t in stop else active).append(([t], float(lp0[t])))
    for _ in range(max_new - 1):
        if not active:
            break
        if len(finished) >= beam:
            kth = sorted((s for _, s in finished), reverse=True)[beam - 1]
            if max(s for _, s in active) < kth:
                break
        candidates = []
        for toks, score in active:
            lp = fresh_logprobs(llama_model, list(prompt) + toks, n_threads)
            candidates += [(score + float(lp[t]), toks + [t]) for t in best(lp, expand)]
        candidates.sort(key=lambda c: -c[0])  # stable: parent order, then token rank
        active = []
        for score, toks in candidates[:beam]:
            (finished if toks[-1] in stop else active).append((toks, score))
    ranked = sorted([(t, s, True) for t, s in finished] + [(t, s, False) for t, s in active], key=lambda h: -h[1])
    return ranked[:beam]
