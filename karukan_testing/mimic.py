"""Mimic models: random weights in the shapes, vocabularies, metadata and quantization of the
published jinen / zenz GGUFs, so that loading, tokenization and speed can be checked without the
real files (speed does not depend on weight values).

- zenz v3 (GPT-2): the real zenz 6,000-symbol byte-level BPE tokenizer (tokenizer.json given by
  path), written into the GGUF as a "gpt2" vocabulary with its merges and the zenz GGUF metadata
  as published: pre-tokenizer "gpt2-small-japanese-char" and bos 1 / eos 2 (the loader must
  repair both; see runtime.fixups). tokenizer.json lies beside the GGUF.
- jinen v1 (GPT-2): a 32k byte-level BPE over single characters (its real vocabulary is not
  published; the parameter counts point to about 32,000 tokens, docs/benchmarks.md) whose marks
  are single tokens, as upstream's own test expects of jinen-v1-xsmall: <unk> <s> </s> <pad>,
  the three marks, the 256 byte symbols, then characters with the merges that build them; in the
  GGUF a "gpt2" vocabulary with pre-tokenizer "gpt-2".
- jinen v2 (Qwen3): a 32k SentencePiece-style vocabulary (<unk> <s> </s>, 256 <0xNN> byte
  tokens, characters, kana bigram pieces) with the marks U+EE00, U+EE01, U+EE02 as single tokens
  at 32000-32002; tokenizer.json is a SentencePiece BPE with byte fallback and a Metaspace
  pre-tokenizer (a `▁` before the first word of a text); in the GGUF an SPM ("llama")
  vocabulary whose scores follow the BPE merge ranks of the tokenizer.json.

Weights are written f32, then quantized by llama.cpp (Q5_K_M by default, the published files'
type). `build(spec, directory)` writes `directory/<file>` and `directory/tokenizer.json`.
tools/build_mimic_models.py builds the real shapes.
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Sequence

import numpy as np

from karukan_engine.neural.char_vocab import TOKEN_BYTE, TOKEN_CONTROL, TOKEN_NORMAL, TOKEN_UNKNOWN, TOKEN_USER_DEFINED
from karukan_engine.neural.prompt import CONTEXT_MARK, INPUT_MARK, OUTPUT_MARK
from karukan_engine.neural.tokenizer import byte_level_alphabet
from karukan_testing.tiny_models import block_tensors

SPACE_PIECE = "\u2581"
# llama.cpp's llama_ftype values.
FTYPES = {"F32": 0, "F16": 1, "Q8_0": 7, "Q4_K_M": 15, "Q5_K_M": 17}
ZENZ_PRE = "gpt2-small-japanese-char"
JINEN_V2_VOCAB = 32003
JINEN_V2_MARKS = (INPUT_MARK, OUTPUT_MARK, CONTEXT_MARK)  # ids vocab-3, vocab-2, vocab-1
JINEN_V1_VOCAB = 32000
JINEN_V1_SPECIALS = ("<unk>", "<s>", "</s>", "<pad>", INPUT_MARK, OUTPUT_MARK, CONTEXT_MARK)
# Characters a small vocabulary takes before the CJK block in code point order (test fixtures).
COMMON_CHARS = ("ー・、。「」『』（）！？〜…　" "日本語漢字変換今日明天気東京都大学生私公園講演後援感子政治家"
                "歯科医番組司会箸橋端持早稲田会議資料送雨雪山川時間人物事行来見言思書読話電車駅前中後上下")


@dataclass(frozen=True)
class MimicSpec:
    name: str
    file: str                      # the published GGUF file name
    arch: str                      # "gpt2" | "qwen3"
    n_layer: int
    n_embd: int
    n_head: int
    n_head_kv: int | None = None   # qwen3 (GQA); None = n_head
    head_dim: int | None = None    # qwen3; None = n_embd // n_head
    n_ff: int | None = None        # None = 4 * n_embd (gpt2)
    vocab: str = "zenz"            # "zenz" (tokenizer.json given) | "jinen-v1" | "jinen-v2" (generated)
    vocab_size: int = JINEN_V2_VOCAB  # jinen-v1 / jinen-v2 (zenz: the tokenizer's size)
    n_ctx_train: int = 1024
    quant: str = "Q5_K_M"
    seed: int = 0
    embed_std: float = 0.05
    eos_scale: float = 1.0         # > 1: EOS more likely, generations end sooner
    # Tests only: every position predicts this token (output norm zeroed; gpt2 only).
    always_token: int | None = None

    @property
    def ff(self) -> int:
        return self.n_ff or 4 * self.n_embd


# The published models' shapes (jinen v2's attention layout is an estimate from the parameter
# counts: 36 M and 109 M with the 32k vocabulary, tied embeddings).
MIMICS: dict[str, MimicSpec] = {
    "zenz-v3-xsmall": MimicSpec("zenz-v3-xsmall", "ggml-model-Q5_K_M.gguf", "gpt2", 6, 512, 8),
    "jinen-v1-xsmall": MimicSpec("jinen-v1-xsmall", "jinen-v1-xsmall-Q5_K_M.gguf", "gpt2", 6, 512, 8,
                                 vocab="jinen-v1", vocab_size=JINEN_V1_VOCAB),
    "jinen-v1-small": MimicSpec("jinen-v1-small", "jinen-v1-small-Q5_K_M.gguf", "gpt2", 12, 768, 12,
                                vocab="jinen-v1", vocab_size=JINEN_V1_VOCAB),
    "zenz-v3-small": MimicSpec("zenz-v3-small", "ggml-model-Q5_K_M.gguf", "gpt2", 12, 768, 12),
    "jinen-v2-xsmall": MimicSpec("jinen-v2-xsmall", "jinen-v2-xsmall-Q5_K_M.gguf", "qwen3", 6, 512, 8, n_head_kv=4,
                                 head_dim=64, n_ff=1536, vocab="jinen-v2"),
    "jinen-v2-small": MimicSpec("jinen-v2-small", "jinen-v2-small-Q5_K_M.gguf", "qwen3", 12, 768, 12, n_head_kv=4,
                                head_dim=64, n_ff=2304, vocab="jinen-v2"),
}


# --- vocabularies ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Vocabulary:
    tokens: list[str]            # id order
    types: list[int]             # GGUF token types
    merges: list[str]            # "a b", rank order (gpt2 style); [] for SPM
    scores: list[float] | None   # SPM only
    model: str                   # GGUF tokenizer.ggml.model: "gpt2" | "llama"
    eos_id: int
    zenz_metadata: bool = False  # "gpt2" only: the published zenz pre-tokenizer and special ids


def zenz_vocabulary(tokenizer_json: Path) -> Vocabulary:
    """The zenz byte-level BPE as a GGUF "gpt2" vocabulary (strings as stored in tokenizer.json)."""
    spec = json.loads(Path(tokenizer_json).read_text(encoding="utf-8"))
    vocab: dict[str, int] = dict(spec["model"]["vocab"])
    added = {t["id"]: t for t in spec.get("added_tokens", [])}
    for i, t in added.items():
        vocab[t["content"]] = i
    size = max(vocab.values()) + 1
    tokens = [""] * size
    for text, i in vocab.items():
        tokens[i] = text
    types = [TOKEN_NORMAL] * size
    for i, t in added.items():
        types[i] = TOKEN_CONTROL if t.get("special") else TOKEN_USER_DEFINED
    merges = [m if isinstance(m, str) else " ".join(m) for m in spec["model"].get("merges", [])]
    return Vocabulary(tokens, types, merges, None, "gpt2", vocab["</s>"], zenz_metadata=True)


def jinen_v1_vocabulary(size: int = JINEN_V1_VOCAB, first: str = "") -> Vocabulary:
    """A byte-level BPE over single characters with single-token marks (module docstring):
    characters from `first`, then hiragana, katakana, punctuation, CJK, until `size` tokens."""
    to_symbol = {b: c for c, b in byte_level_alphabet().items()}
    tokens = list(JINEN_V1_SPECIALS) + [to_symbol[b] for b in range(256)]
    if size < len(tokens) + 64:
        raise ValueError("a jinen-v1 style vocabulary needs room for characters")
    seen = set(tokens)
    merges: list[str] = []

    def add_char(ch: str) -> None:
        symbols = [to_symbol[b] for b in ch.encode("utf-8")]
        needed = [("".join(symbols[:k]), symbols[k]) for k in range(1, len(symbols))]
        new = [left + right for left, right in needed if left + right not in seen]
        if len(tokens) + len(new) > size:
            return
        for left, right in needed:
            if left + right not in seen:
                seen.add(left + right)
                tokens.append(left + right)
                merges.append(f"{left} {right}")

    chars = list(first) + [chr(c) for c in range(0x3041, 0x3097)] + [chr(c) for c in range(0x30A1, 0x30FB)]
    chars += list(COMMON_CHARS) + [chr(c) for c in range(0x4E00, 0xA000)]
    for ch in chars:
        if len(tokens) >= size:
            break
        add_char(ch)
    # The rest: kana pairs, merged from the two characters' tokens (rank after every character).
    kana = [chr(c) for c in range(0x30A1, 0x30F7)] + [chr(c) for c in range(0x3041, 0x3094)]
    spelled = {ch: "".join(to_symbol[b] for b in ch.encode("utf-8")) for ch in kana}
    for a in kana:
        for b in kana:
            if len(tokens) >= size:
                break
            pair = spelled[a] + spelled[b]
            if spelled[a] in seen and spelled[b] in seen and pair not in seen:
                seen.add(pair)
                tokens.append(pair)
                merges.append(f"{spelled[a]} {spelled[b]}")
    if len(tokens) < size:
        raise ValueError("vocabulary too large for the characters it takes")
    types = [TOKEN_UNKNOWN] + [TOKEN_CONTROL] * 3 + [TOKEN_USER_DEFINED] * 3 + [TOKEN_NORMAL] * (size - 7)
    return Vocabulary(tokens, types, merges, None, "gpt2", tokens.index("</s>"))


def write_jinen_v1_tokenizer(path: Path, vocab: Vocabulary) -> Path:
    """tokenizer.json for the jinen-v1 style vocabulary: byte-level BPE, the specials and the
    marks as special added tokens."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers

    merges = [tuple(m.split(" ")) for m in vocab.merges]
    tok = Tokenizer(models.BPE(vocab={t: i for i, t in enumerate(vocab.tokens)}, merges=merges))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in JINEN_V1_SPECIALS])
    tok.save(str(path))
    return path


def _jinen_v2_pieces(size: int, first: str = "") -> tuple[list[str], list[tuple[str, str]]]:
    """(tokens in id order without the marks, merges as pairs in rank order)."""
    tokens = ["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(256)] + [SPACE_PIECE]
    seen = set(tokens)

    def add(piece: str) -> bool:
        if piece in seen or len(tokens) >= size:
            return False
        seen.add(piece)
        tokens.append(piece)
        return True

    singles = list(first) + [chr(c) for c in range(0x21, 0x7F)] + [chr(c) for c in range(0x3041, 0x3097)]
    singles += [chr(c) for c in range(0x30A1, 0x30FB)] + list("ー・、。「」『』（）！？〜…　")
    singles += [chr(c) for c in range(0x4E00, 0xA000)]
    for ch in singles:
        add(ch)
    merges: list[tuple[str, str]] = []
    kana = [chr(c) for c in range(0x30A1, 0x30F7)] + [chr(c) for c in range(0x3041, 0x3094)]
    for a in kana:
        for b in kana:
            if add(a + b):
                merges.append((a, b))
    return tokens, merges


def jinen_v2_vocabulary(size: int = JINEN_V2_VOCAB, first: str = "") -> Vocabulary:
    """first: characters taken before the others (a small vocabulary for test fixtures)."""
    if size < 1200:
        raise ValueError("a jinen-v2 style vocabulary needs at least 1200 tokens")
    tokens, merges = _jinen_v2_pieces(size - len(JINEN_V2_MARKS), first)
    tokens += list(JINEN_V2_MARKS)
    rank = {a + b: r for r, (a, b) in enumerate(merges)}
    scores, types = [], []
    for i, t in enumerate(tokens):
        scores.append(-float(rank[t]) - 1.0 if t in rank else 0.0)
        if i == 0:
            types.append(TOKEN_UNKNOWN)
        elif t in ("<s>", "</s>"):
            types.append(TOKEN_CONTROL)
        elif t in JINEN_V2_MARKS:
            types.append(TOKEN_USER_DEFINED)
        elif len(t) == 6 and t.startswith("<0x"):
            types.append(TOKEN_BYTE)
        else:
            types.append(TOKEN_NORMAL)
    return Vocabulary(tokens, types, [f"{a} {b}" for a, b in merges], scores, "llama", tokens.index("</s>"))


def write_jinen_v2_tokenizer(path: Path, vocab: Vocabulary) -> Path:
    """tokenizer.json for the jinen-v2 style vocabulary: SentencePiece BPE with byte fallback, a
    Metaspace pre-tokenizer (spaces as `▁`, one `▁` before a text's first word, as converted
    SentencePiece tokenizers write it) and the marks as special added tokens."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers

    merges = [tuple(m.split(" ")) for m in vocab.merges]
    model = models.BPE(vocab={t: i for i, t in enumerate(vocab.tokens)}, merges=merges, unk_token="<unk>", byte_fallback=True)
    tok = Tokenizer(model)
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement=SPACE_PIECE, prepend_scheme="first", split=False)
    tok.decoder = decoders.Sequence([decoders.Replace(SPACE_PIECE, " "), decoders.ByteFallback(), decoders.Fuse(),
                                     decoders.Strip(" ", 1, 0)])
    specials = ["<unk>", "<s>", "</s>", *JINEN_V2_MARKS]
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in specials])
    tok.save(str(path))
    return path


# --- weights ---------------------------------------------------------------------------------


def _tensors(spec: MimicSpec, n_vocab: int, eos_id: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    d = spec.n_embd
    gpt2 = spec.arch == "gpt2"
    head_dim = spec.head_dim or d // spec.n_head
    n_kv = spec.n_head_kv or spec.n_head

    def w(*shape: int, std: float | None = None) -> np.ndarray:
        s = std if std is not None else 1.0 / np.sqrt(shape[-1])
        return (rng.standard_normal(shape, dtype=np.float32) * np.float32(s))

    def norm(n: int) -> np.ndarray:
        return (1.0 + 0.1 * rng.standard_normal(n, dtype=np.float32)).astype(np.float32)

    embd = w(n_vocab, d, std=spec.embed_std)
    embd[eos_id] *= spec.eos_scale
    out: dict[str, np.ndarray] = {"token_embd.weight": embd, "output_norm.weight": norm(d)}
    if gpt2:
        out["position_embd.weight"] = w(spec.n_ctx_train, d, std=0.1)
        out["output_norm.bias"] = w(d, std=0.05)
        if spec.always_token is not None:
            # LayerNorm with weight 0 outputs its bias at every position; only the chosen row
            # of a separate output matrix lines up with it.
            bias = np.ones(d, dtype=np.float32)
            out["output_norm.weight"] = np.zeros(d, dtype=np.float32)
            out["output_norm.bias"] = bias
            head = w(n_vocab, d, std=0.01)
            head[spec.always_token] = bias * 0.5
            out["output.weight"] = head
    elif spec.always_token is not None:
        raise ValueError("always_token is only supported for gpt2")
    out.update(block_tensors(spec.arch, spec.n_layer, d, spec.ff, spec.n_head, n_kv, head_dim, w, norm))
    return out


def parameter_count(spec: MimicSpec, n_vocab: int) -> int:
    d, ff = spec.n_embd, spec.ff
    if spec.arch == "gpt2":
        block = 4 * d * d + 4 * d + 2 * d * ff + ff + d + 4 * d
        return n_vocab * d + spec.n_ctx_train * d + spec.n_layer * block + 2 * d
    hd = spec.head_dim or d // spec.n_head
    kv = spec.n_head_kv or spec.n_head
    block = 2 * d * spec.n_head * hd + 2 * d * kv * hd + 3 * d * ff + 2 * d + 2 * hd
    return n_vocab * d + spec.n_layer * block + d


def _write_f32(path: Path, spec: MimicSpec, vocab: Vocabulary) -> None:
    import gguf

    n_vocab = len(vocab.tokens)
    writer = gguf.GGUFWriter(str(path), spec.arch)
    writer.add_name(spec.name)
    writer.add_file_type(0)
    writer.add_context_length(spec.n_ctx_train)
    writer.add_embedding_length(spec.n_embd)
    writer.add_block_count(spec.n_layer)
    writer.add_feed_forward_length(spec.ff)
    writer.add_head_count(spec.n_head)
    if spec.arch == "gpt2":
        writer.add_layer_norm_eps(1e-5)
    else:
        head_dim = spec.head_dim or spec.n_embd // spec.n_head
        writer.add_head_count_kv(spec.n_head_kv or spec.n_head)
        writer.add_layer_norm_rms_eps(1e-6)
        writer.add_rope_freq_base(1_000_000.0)
        writer.add_key_length(head_dim)
        writer.add_value_length(head_dim)
    writer.add_tokenizer_model(vocab.model)
    writer.add_token_list(vocab.tokens)
    writer.add_token_types(vocab.types)
    if vocab.model == "gpt2" and vocab.zenz_metadata:
        # As the published zenz GGUFs declare them (llama.cpp needs runtime.fixups to load).
        writer.add_tokenizer_pre(ZENZ_PRE)
        writer.add_token_merges(vocab.merges)
        writer.add_unk_token_id(0)
        writer.add_bos_token_id(1)
        writer.add_eos_token_id(2)
        writer.add_pad_token_id(1)
    elif vocab.model == "gpt2":
        writer.add_tokenizer_pre("gpt-2")
        writer.add_token_merges(vocab.merges)
        writer.add_unk_token_id(0)
        writer.add_bos_token_id(vocab.tokens.index("<s>"))
        writer.add_eos_token_id(vocab.eos_id)
        writer.add_pad_token_id(vocab.tokens.index("<pad>"))
    else:
        writer.add_tokenizer_pre("default")
        writer.add_token_scores(vocab.scores or [0.0] * n_vocab)
        writer.add_unk_token_id(0)
        writer.add_bos_token_id(vocab.tokens.index("<s>"))
        writer.add_eos_token_id(vocab.eos_id)
        writer.add_add_space_prefix(False)
    writer.add_add_bos_token(False)
    writer.add_add_eos_token(False)
    rng = np.random.default_rng(spec.seed)
    for name, array in _tensors(spec, n_vocab, vocab.eos_id, rng).items():
        writer.add_tensor(name, array)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def quantize(src: Path, dst: Path, quant: str, n_threads: int = 2) -> None:
    from karukan_engine.neural.runtime import llama

    lib = llama()
    params = lib.llama_model_quantize_default_params()
    params.ftype = FTYPES[quant]
    params.nthread = max(1, n_threads)
    rc = lib.llama_model_quantize(str(src).encode("utf-8"), str(dst).encode("utf-8"), params)
    if rc != 0:
        raise RuntimeError(f"llama.cpp could not quantize {src.name} to {quant} ({rc})")


def build(spec: MimicSpec, directory: Path, zenz_tokenizer: Path | None = None, n_threads: int = 2) -> Path:
    """Write directory/<spec.file> and directory/tokenizer.json; return the GGUF path."""
    directory.mkdir(parents=True, exist_ok=True)
    tokenizer_out = directory / "tokenizer.json"
    if spec.vocab == "zenz":
        if zenz_tokenizer is None:
            raise ValueError("a zenz-vocabulary mimic needs the zenz tokenizer.json")
        vocab = zenz_vocabulary(zenz_tokenizer)
        tokenizer_out.write_bytes(Path(zenz_tokenizer).read_bytes())
    elif spec.vocab == "jinen-v1":
        vocab = jinen_v1_vocabulary(spec.vocab_size)
        write_jinen_v1_tokenizer(tokenizer_out, vocab)
    elif spec.vocab == "jinen-v2":
        vocab = jinen_v2_vocabulary(spec.vocab_size)
        write_jinen_v2_tokenizer(tokenizer_out, vocab)
    else:
        raise ValueError(f"unknown vocabulary {spec.vocab!r}")
    out = directory / spec.file
    if spec.quant == "F32":
        _write_f32(out, spec, vocab)
        return out
    with tempfile.TemporaryDirectory(dir=directory) as tmp:
        f32 = Path(tmp) / "f32.gguf"
        _write_f32(f32, spec, vocab)
        quantize(f32, out, spec.quant, n_threads)
    return out


def small(name: str, **changes) -> MimicSpec:
    """A published mimic's vocabulary and metadata in a smaller shape (tests)."""
    return replace(MIMICS[name], **changes)


def names() -> Sequence[str]:
    return tuple(MIMICS)
