"""Thin, checked wrapper over llama-cpp-python's low-level API.

Everything that could make llama.cpp abort the process (a bad file, a sequence id out of range,
a batch larger than n_batch, a position beyond the model's context) is rejected here in Python
with our own exception before the C call is made.
"""

from __future__ import annotations

import ctypes
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping, Sequence

import numpy as np

from karukan_engine.neural.errors import InferenceError, ModelFormatError, ModelLoadError, ModelNotFoundError
from karukan_engine.neural.threads import ThreadChoice, count_decode

try:
    import llama_cpp as _llama
except ImportError:  # the neural extra is not installed: loading a model raises ModelLoadError
    _llama = None

LLAMA_MAX_SEQ = 256  # llama.cpp's compile-time limit on sequence ids (llama-cparams.h)
# Flash attention on CPU accumulates V in f16, so equal computations in different batch layouts
# drift by ~1e-3; plain attention keeps shared-prompt results equal to fresh ones (and is as fast
# at these context sizes).
FLASH_ATTN = 0  # LLAMA_FLASH_ATTN_TYPE_DISABLED

_backend_lock = threading.Lock()
_backend_ready = False


def _ignore_log(level: int, text: bytes, user_data: ctypes.c_void_p) -> None:
    """llama.cpp log sink: silent (user text may appear in its token dumps)."""


# Must stay referenced for the life of the process: a collected callback segfaults on next log.
_LOG_SINK = _llama.llama_log_callback(_ignore_log) if _llama is not None else None


def llama():
    """The llama_cpp module, initialised once with logging silenced."""
    global _backend_ready
    if _llama is None:
        raise ModelLoadError("llama-cpp-python is not installed (pip install 'karukan[neural]')")
    with _backend_lock:
        if not _backend_ready:
            _llama.llama_log_set(_LOG_SINK, None)
            _llama.llama_backend_init()
            _backend_ready = True
    return _llama


# --- files ---------------------------------------------------------------------------------


# Architectures of the kana-kanji families Karukan runs (jinen v1 / zenz: gpt2; jinen v2: qwen3;
# the bundled and test models: llama or gpt2).
SUPPORTED_ARCHITECTURES = ("gpt2", "llama", "qwen2", "qwen3")
# Pre-tokenizer names some published GGUFs declare that llama.cpp does not know, and the one
# that tokenizes them the same way (zenz: a byte-level GPT-2 BPE over single characters).
PRE_TOKENIZER_ALIASES = {"gpt2-small-japanese-char": "gpt-2"}
_EOS_TEXTS = ("</s>", "<|endoftext|>", "<eos>", "<|im_end|>", "<|end_of_text|>")


@dataclass(frozen=True)
class GgufInfo:
    architecture: str
    context_length: int
    tokenizer_pre: str
    # GGUF metadata overrides loading needs (known quirks of published files; see fixups()).
    fixups: Mapping[str, object] = field(default_factory=dict)
    # tokenizer.ggml.tokens as stored (None when the file has none).
    tokens: tuple[str, ...] | None = None


def inspect_gguf(path: Path) -> GgufInfo:
    """Check that path is a complete GGUF file and read what loading needs to know."""
    if not path.exists():
        raise ModelNotFoundError(f"model file not found: {path}")
    if not path.is_file():
        raise ModelNotFoundError(f"not a file: {path}")
    with path.open("rb") as f:
        if f.read(4) != b"GGUF":
            raise ModelFormatError(f"not a GGUF file: {path.name}")
    try:
        from karukan_engine.neural.gguf_header import read_header

        header = read_header(path)
        if header.data_end() > path.stat().st_size:
            raise ModelFormatError(f"truncated GGUF file: {path.name}")
    except ModelFormatError:
        raise
    except Exception as exc:  # any parse failure means a corrupt file
        raise ModelFormatError(f"corrupt GGUF file {path.name}: {type(exc).__name__}") from exc
    meta = header.metadata

    def text(key: str) -> str:
        value = meta.get(key)
        return value if isinstance(value, str) else ""

    arch = text("general.architecture")
    if not header.tensors:
        raise ModelFormatError(f"GGUF file without tensors: {path.name}")
    pre = text("tokenizer.ggml.pre")
    context = meta.get(f"{arch}.context_length")
    return GgufInfo(
        architecture=arch,
        context_length=int(context) if isinstance(context, int) else 0,
        tokenizer_pre=pre,
        fixups=fixups(meta, pre),
        tokens=tuple(meta["tokenizer.ggml.tokens"]) if isinstance(meta.get("tokenizer.ggml.tokens"), list) else None,
    )


def fixups(meta: Mapping[str, object], pre: str) -> dict[str, object]:
    """Overrides for known quirks of published GGUFs (meta: the GGUF's metadata).

    zenz GGUFs declare the pre-tokenizer "gpt2-small-japanese-char", which llama.cpp rejects, and
    special ids off by one (bos 1 = [PAD], eos 2 = <s>; the vocabulary is [UNK] [PAD] <s> </s>).
    So: a known alias for an unknown pre-tokenizer, and where the declared EOS token is not an
    end-of-sequence token but the vocabulary has `</s>`, the ids of `<s>`, `</s>`, `[PAD]`."""
    out: dict[str, object] = {}
    if pre in PRE_TOKENIZER_ALIASES:
        out["tokenizer.ggml.pre"] = PRE_TOKENIZER_ALIASES[pre]
    tokens = meta.get("tokenizer.ggml.tokens")
    if not isinstance(tokens, list):
        return out

    def text_of(key: str) -> str | None:
        token_id = meta.get(key)
        return tokens[token_id] if isinstance(token_id, int) and 0 <= token_id < len(tokens) else None

    if "tokenizer.ggml.eos_token_id" not in meta or text_of("tokenizer.ggml.eos_token_id") in _EOS_TEXTS:
        return out
    ids: dict[str, int] = {}
    for i, token in enumerate(tokens):
        if token in ("<s>", "</s>", "[PAD]") and token not in ids:
            ids[token] = i
    if "</s>" not in ids:
        return out
    out["tokenizer.ggml.eos_token_id"] = ids["</s>"]
    if "<s>" in ids and text_of("tokenizer.ggml.bos_token_id") != "<s>":
        out["tokenizer.ggml.bos_token_id"] = ids["<s>"]
    if "[PAD]" in ids and "tokenizer.ggml.padding_token_id" in meta:
        out["tokenizer.ggml.padding_token_id"] = ids["[PAD]"]
    return out


# --- model ---------------------------------------------------------------------------------


def _kv_override_array(overrides: Mapping[str, object]):
    """GGUF metadata overrides in llama.cpp's struct array (terminated by an empty key)."""
    lib = llama()
    array = (lib.llama_model_kv_override * (len(overrides) + 1))()
    for item, (key, value) in zip(array, overrides.items()):
        raw_key = _c_string(key, "override key")
        if not raw_key:   # an empty key marks the end of llama.cpp's array: the rest would be dropped
            raise ModelLoadError("empty override key")
        if len(raw_key) >= 128:
            raise ModelLoadError(f"override key too long: {key}")
        item.key = raw_key
        if isinstance(value, bool):
            item.tag = lib.LLAMA_KV_OVERRIDE_TYPE_BOOL
            item.value.val_bool = value
        elif isinstance(value, int):
            item.tag = lib.LLAMA_KV_OVERRIDE_TYPE_INT
            item.value.val_i64 = value
        elif isinstance(value, float):
            item.tag = lib.LLAMA_KV_OVERRIDE_TYPE_FLOAT
            item.value.val_f64 = value
        elif isinstance(value, str):
            raw = _c_string(value, f"override value for {key}")
            if len(raw) >= 128:   # a 128-byte NUL-terminated field, in UTF-8 bytes: never cut a value
                raise ModelLoadError(f"override value too long for {key}")
            item.tag = lib.LLAMA_KV_OVERRIDE_TYPE_STR
            ctypes.memmove(ctypes.addressof(item.value), raw.ljust(128, b"\0"), 128)
        else:
            raise ModelLoadError(f"unsupported override type for {key}")
    array[-1].key = b"\0"
    return array


def _c_string(text: str, what: str) -> bytes:
    """UTF-8 bytes for a NUL-terminated C field; a NUL inside would silently end the value early."""
    try:
        raw = text.encode("utf-8")
    except UnicodeEncodeError:
        raise ModelLoadError(f"{what} is not valid text") from None
    if b"\0" in raw:
        raise ModelLoadError(f"{what} contains a NUL character")
    return raw


class LlamaModel:
    """A loaded llama.cpp model (weights + vocabulary), shareable across threads."""

    def __init__(self, path: Path, kv_overrides: Mapping[str, object] | None = None, gpu_layers: int = 0) -> None:
        """gpu_layers: layers llama.cpp offloads to a GPU backend (without one it runs on the CPU)."""
        lib = llama()
        self.info = inspect_gguf(path)
        if self.info.architecture not in SUPPORTED_ARCHITECTURES:
            raise ModelLoadError(f"{path.name} is a {self.info.architecture!r} model; Karukan runs "
                                 f"{', '.join(SUPPORTED_ARCHITECTURES)} kana-kanji models")
        params = lib.llama_model_default_params()
        params.n_gpu_layers = max(0, gpu_layers)
        params.use_mmap = True
        kv_overrides = {**self.info.fixups, **(kv_overrides or {})}  # the caller's win
        self._overrides = _kv_override_array(kv_overrides) if kv_overrides else None
        if self._overrides is not None:
            params.kv_overrides = self._overrides
        self.ptr = lib.llama_model_load_from_file(str(path).encode("utf-8"), params)
        if not self.ptr:
            raise ModelLoadError(f"llama.cpp could not load {path.name} (architecture {self.info.architecture!r})")
        self.path = path
        self.vocab = lib.llama_model_get_vocab(self.ptr)
        self.n_vocab = int(lib.llama_vocab_n_tokens(self.vocab))
        self.n_ctx_train = int(lib.llama_model_n_ctx_train(self.ptr)) or 2048
        self.eos_id = int(lib.llama_vocab_eos(self.vocab))
        self.eog_ids = frozenset(t for t in range(self.n_vocab) if lib.llama_vocab_is_eog(self.vocab, t))
        self._lock = threading.Lock()

    def free(self) -> None:
        with self._lock:
            if self.ptr:
                llama().llama_model_free(self.ptr)
                self.ptr = None


# --- context -------------------------------------------------------------------------------


_decode_cpu_lock = threading.Lock()
_decode_cpu = [0.0]


def _count_decode_cpu(seconds: float) -> None:
    with _decode_cpu_lock:
        _decode_cpu[0] += seconds


def decode_cpu_seconds() -> float:
    """CPU time the calling threads spent inside llama_decode, summed over every context since
    the process started (benchmarks: the physical cost of the model's work, which contention
    for the CPU does not inflate; exact with one llama.cpp thread, which computes in the caller)."""
    with _decode_cpu_lock:
        return _decode_cpu[0]


@dataclass(frozen=True)
class ContextSize:
    n_ctx: int      # KV cells
    n_batch: int    # tokens (and logit rows) per llama_decode
    n_seq_max: int  # sequence ids 0..n_seq_max-1

    def covers(self, other: "ContextSize") -> bool:
        return self.n_ctx >= other.n_ctx and self.n_batch >= other.n_batch and self.n_seq_max >= other.n_seq_max

    def union(self, other: "ContextSize") -> "ContextSize":
        """Big enough for both (a grown context never shrinks back and forth)."""
        return ContextSize(max(self.n_ctx, other.n_ctx), max(self.n_batch, other.n_batch), max(self.n_seq_max, other.n_seq_max))


class LlamaContext:
    """One llama.cpp context with a unified KV cache and a reusable batch.

    Unified KV: every sequence shares one pool of cells, so `seq_cp` of a prompt is metadata only
    (zero copy), the mode prefix sharing needs.
    """

    def __init__(self, model: LlamaModel, size: ContextSize, n_threads: int) -> None:
        """n_threads: a fixed count, or AUTO_THREADS to follow the free cores (threads.py)."""
        lib = llama()
        if not model.ptr:
            raise ModelLoadError("model is closed")
        if not 1 <= size.n_seq_max <= LLAMA_MAX_SEQ:
            raise InferenceError(f"n_seq_max must be in 1..{LLAMA_MAX_SEQ}")
        if size.n_batch < 1 or size.n_ctx < 1:
            raise InferenceError("context and batch sizes must be positive")
        params = lib.llama_context_default_params()
        params.n_ctx = size.n_ctx
        params.n_batch = params.n_ubatch = size.n_batch
        params.n_seq_max = size.n_seq_max
        params.kv_unified = True
        self._threads = ThreadChoice(n_threads)
        self.n_threads = self._threads.now()
        params.n_threads = params.n_threads_batch = self.n_threads
        params.no_perf = True
        params.flash_attn_type = FLASH_ATTN
        self.model = model
        self.ptr = lib.llama_init_from_model(model.ptr, params)
        if not self.ptr:
            raise ModelLoadError("llama.cpp could not create a context")
        self.n_ctx = int(lib.llama_n_ctx(self.ptr))
        self.size = ContextSize(self.n_ctx, size.n_batch, size.n_seq_max)
        self.mem = lib.llama_get_memory(self.ptr)
        self._lib = lib
        self.decode_seconds = 0.0  # time spent inside llama_decode (benchmarks: Python overhead)
        self._init_batch(size.n_batch)

    def _init_batch(self, capacity: int) -> None:
        # The batch's arrays are numpy buffers we own, so filling a batch is a few vector writes.
        self._tokens = np.zeros(capacity, dtype=np.int32)
        self._pos = np.zeros(capacity, dtype=np.int32)
        self._n_seq_id = np.ones(capacity, dtype=np.int32)
        self._seq_ids = np.zeros(capacity, dtype=np.int32)
        self._want = np.zeros(capacity, dtype=np.int8)
        int_p = ctypes.POINTER(ctypes.c_int32)
        base = self._seq_ids.ctypes.data
        self._seq_ptrs = (int_p * capacity)(*(ctypes.cast(base + 4 * i, int_p) for i in range(capacity)))
        batch = self._lib.llama_batch()
        batch.token = self._tokens.ctypes.data_as(int_p)
        batch.embd = None
        batch.pos = self._pos.ctypes.data_as(int_p)
        batch.n_seq_id = self._n_seq_id.ctypes.data_as(int_p)
        batch.seq_id = ctypes.cast(self._seq_ptrs, ctypes.POINTER(int_p))
        batch.logits = self._want.ctypes.data_as(ctypes.POINTER(ctypes.c_int8))
        self._batch = batch

    @property
    def n_seq_max(self) -> int:
        return self.size.n_seq_max

    def decode(self, tokens: Sequence[int], positions: Sequence[int], seqs: Sequence[int], want: Sequence[bool]) -> np.ndarray:
        """One llama_decode; returns a copy of the logit rows of the tokens marked in `want`."""
        n = len(tokens)
        if not self.ptr:
            raise InferenceError("context is closed")
        if n == 0 or n > self.size.n_batch:
            raise InferenceError(f"batch of {n} tokens outside 1..{self.size.n_batch}")
        tok = np.asarray(tokens, dtype=np.int64)
        pos = np.asarray(positions, dtype=np.int64)
        seq = np.asarray(seqs, dtype=np.int64)
        if tok.min() < 0 or tok.max() >= self.model.n_vocab:
            raise InferenceError("token id outside the vocabulary")
        if pos.min() < 0 or pos.max() >= self.model.n_ctx_train:
            raise InferenceError(f"position outside the model's context ({self.model.n_ctx_train})")
        if seq.min() < 0 or seq.max() >= self.size.n_seq_max:
            raise InferenceError(f"sequence id outside 0..{self.size.n_seq_max - 1}")
        self._tokens[:n] = tok
        self._pos[:n] = pos
        self._seq_ids[:n] = seq
        self._want[:n] = np.asarray(want, dtype=np.int8)
        n_out = int(self._want[:n].sum())
        self._batch.n_tokens = n
        self._follow_load()
        started, cpu_started = time.perf_counter(), time.thread_time()
        rc = self._lib.llama_decode(self.ptr, self._batch)
        self.decode_seconds += time.perf_counter() - started
        _count_decode_cpu(time.thread_time() - cpu_started)
        if rc != 0:
            raise InferenceError(f"llama_decode failed ({rc})" + (": KV cache full" if rc == 1 else ""))
        if n_out == 0:
            return np.empty((0, self.model.n_vocab), dtype=np.float32)
        # The buffer is overwritten by the next decode: copy.
        ptr = self._lib.llama_get_logits(self.ptr)
        return np.ctypeslib.as_array(ptr, shape=(n_out, self.model.n_vocab)).copy()

    def _follow_load(self) -> None:
        threads = self._threads.now()
        if threads != self.n_threads:
            self._lib.llama_set_n_threads(self.ptr, threads, threads)
            self.n_threads = threads
        count_decode(threads)

    def decode_run(self, tokens: Sequence[int], start: int, seq: int = 0) -> np.ndarray:
        """Decode consecutive tokens of one sequence (split to fit n_batch); logits of the last."""
        if not tokens:
            raise InferenceError("nothing to decode")
        step = self.size.n_batch
        logits = None
        for i in range(0, len(tokens), step):
            chunk = tokens[i : i + step]
            last = i + len(chunk) == len(tokens)
            logits = self.decode(chunk, range(start + i, start + i + len(chunk)), [seq] * len(chunk), [False] * (len(chunk) - 1) + [last])
        return logits[0]

    def _check_seq(self, seq: int) -> None:
        if not 0 <= seq < self.size.n_seq_max:
            raise InferenceError(f"sequence id {seq} outside 0..{self.size.n_seq_max - 1}")

    def seq_rm(self, seq: int, p0: int = -1, p1: int = -1) -> bool:
        """Remove positions [p0, p1) of seq (-1 = open end); seq -1 = every sequence."""
        if seq != -1:
            self._check_seq(seq)
        return bool(self._lib.llama_memory_seq_rm(self.mem, seq, p0, p1))

    def seq_cp(self, src: int, dst: int, p0: int = -1, p1: int = -1) -> None:
        self._check_seq(src)
        self._check_seq(dst)
        if src != dst:
            self._lib.llama_memory_seq_cp(self.mem, src, dst, p0, p1)

    def clear(self) -> None:
        self._lib.llama_memory_clear(self.mem, False)  # metadata only: zeroing the buffers costs ms

    def free(self) -> None:
        if self.ptr:
            self._lib.llama_free(self.ptr)
            self.ptr = None
            self.mem = None


class GrowingContext:
    """A llama context kept between calls: re-created (never smaller than before) only when a
    call needs more than it has, so steady use allocates once. `shape` may round a requested
    size up (say, to a power of two) so that slowly growing requests do not re-create it often."""

    def __init__(self, model: LlamaModel, n_threads: int,
                 shape: Callable[[ContextSize], ContextSize] = lambda size: size) -> None:
        self._model = model
        self._n_threads = n_threads
        self._shape = shape
        self.ctx: LlamaContext | None = None

    def get(self, size: ContextSize) -> LlamaContext:
        if self.ctx is not None and self.ctx.size.covers(size):
            return self.ctx
        if self.ctx is not None:
            size = self.ctx.size.union(size)
            self.free()
        self.ctx = LlamaContext(self._model, self._shape(size), self._n_threads)
        return self.ctx

    def free(self) -> None:
        if self.ctx is not None:
            self.ctx.free()
            self.ctx = None
