"""Greedy decoding that takes the previous key's conversion as a draft (speculative decoding).

While typing, the conversion of the next key usually starts like the last one. Instead of
decoding the new output one token per llama_decode, the draft (the last output's tokens) is
appended to the prompt and checked in one batched, teacher-forced pass: the model's argmax at
every draft position is read from that one pass, the longest agreeing prefix is kept, and plain
greedy decoding continues from the first disagreement. The argmax chain is the same as plain
greedy's, so the result is the same (tests/test_conversion_speculative.py checks it).

Like GreedySession, one instance per thread keeps its KV cache between calls and re-decodes only
what follows the longest common prefix of the token sequence. One worker thread serves many
sessions, so `switch_to(owner)` saves the current owner's sequence state (llama.cpp's
per-sequence state API) and restores the next owner's, instead of re-prefilling its prompt.
"""

from __future__ import annotations

import ctypes
from collections import OrderedDict
from typing import AbstractSet, Hashable, Sequence

import numpy as np

from karukan_engine.neural.errors import InferenceError
from karukan_engine.neural.greedy import common_prefix_len, session_context_size
from karukan_engine.neural.logprob import argmax_logprob
from karukan_engine.neural.runtime import LlamaContext, LlamaModel

SAVED_STATES = 32   # sequence states kept per thread (least recently used dropped)


class SpeculativeGreedy:
    """One llama context (sequence 0) owned by one thread."""

    def __init__(self, model: LlamaModel, n_threads: int) -> None:
        self._model = model
        self._n_threads = n_threads
        self._ctx: LlamaContext | None = None
        self._cached: list[int] = []      # exactly the tokens in the KV cache, in order
        self.decode_calls = 0             # llama_decode calls by the last generate (benchmarks)
        self.accepted = 0                 # draft tokens accepted by the last generate
        self.reused = 0                   # prompt tokens the last generate found in the KV cache
        self.cold = False                 # the last generate had to create its llama context
        self._owner: Hashable | None = None
        self._saved: OrderedDict[Hashable, tuple[bytes, tuple[int, ...]]] = OrderedDict()

    def switch_to(self, owner: Hashable | None) -> bool:
        """Make `owner`'s KV state current; True when a saved state was restored."""
        if owner == self._owner:
            return False
        ctx = self._ctx
        if ctx is not None and ctx.ptr and self._owner is not None and self._cached:
            state = self._save_state(ctx)
            if state is not None:
                self._saved[self._owner] = (state, tuple(self._cached))
                self._saved.move_to_end(self._owner)
                while len(self._saved) > SAVED_STATES:
                    self._saved.popitem(last=False)
        self._owner = owner
        saved = self._saved.pop(owner, None) if owner is not None else None
        if saved is None or ctx is None or not ctx.ptr:
            return False
        state, tokens = saved
        ctx.clear()
        self._cached = []
        lib = ctx._lib
        buffer = (ctypes.c_uint8 * len(state)).from_buffer_copy(state)
        if not lib.llama_state_seq_set_data(ctx.ptr, buffer, len(state), 0):
            ctx.clear()  # refused (e.g. a different context size): start from scratch
            return False
        self._cached = list(tokens)
        return True

    @staticmethod
    def _save_state(ctx: LlamaContext) -> bytes | None:
        lib = ctx._lib
        size = int(lib.llama_state_seq_get_size(ctx.ptr, 0))
        if size <= 0:
            return None
        buffer = (ctypes.c_uint8 * size)()
        written = int(lib.llama_state_seq_get_data(ctx.ptr, buffer, size, 0))
        return bytes(buffer[:written]) if written > 0 else None

    def _ensure_capacity(self, needed: int) -> LlamaContext:
        self.cold = False
        if self._ctx is not None and self._ctx.n_ctx >= needed:
            return self._ctx
        self.cold = True
        if self._ctx is not None:
            self._ctx.free()
        self._ctx = None
        self._cached = []
        self._saved.clear()   # states of a smaller context are not restored into a new one
        self._ctx = LlamaContext(self._model, session_context_size(needed), self._n_threads)
        return self._ctx

    def generate(self, prompt: Sequence[int], draft: Sequence[int], max_new: int,
                 stop_ids: AbstractSet[int]) -> tuple[list[int], float, bool]:
        """Same contract and result as GreedySession.generate; `draft` only changes the cost."""
        prompt = list(prompt)
        self.decode_calls = 0
        self.accepted = 0
        self.reused = 0
        if not prompt or max_new <= 0:
            return [], 0.0, False
        draft = [t for t in draft[:max_new] if 0 <= t < self._model.n_vocab]
        ctx = self._ensure_capacity(len(prompt) + max_new + 1)
        sequence = prompt + draft
        start = min(common_prefix_len(self._cached, sequence), len(prompt) - 1)
        cached, self._cached = self._cached, []
        if start < len(cached) and not ctx.seq_rm(0, start, -1):
            ctx.clear()
            start = 0
        self.reused = start
        try:
            rows = self._decode_rows(ctx, sequence, start, first_wanted=len(prompt) - 1)
            out: list[int] = []
            total = 0.0
            # rows[k] predicts the token after sequence[len(prompt) - 1 + k].
            for k, logits in enumerate(rows):
                token, lp = argmax_logprob(logits)
                total += lp
                if token in stop_ids:
                    self._trim(ctx, prompt, out, sequence)
                    return out, total, True
                out.append(token)
                if len(out) >= max_new:
                    self._trim(ctx, prompt, out[:-1], sequence)
                    return out, total, False
                if k >= len(draft) or token != draft[k]:
                    break  # first disagreement (or the draft ran out): greedy from here
                self.accepted += 1
            # The KV cache holds prompt + draft; keep prompt + the accepted part, drop the rest.
            kept = len(prompt) + len(out) - 1
            if kept < len(sequence) and not ctx.seq_rm(0, kept, -1):
                raise InferenceError("could not drop rejected draft tokens")
            while True:
                logits = ctx.decode_run([out[-1]], kept, seq=0)
                self.decode_calls += 1
                kept += 1
                token, lp = argmax_logprob(logits)
                total += lp
                if token in stop_ids:
                    self._cached = prompt + out
                    return out, total, True
                out.append(token)
                if len(out) >= max_new:
                    self._cached = prompt + out[:-1]
                    return out, total, False
        except InferenceError:
            ctx.clear()
            raise

    def first_disagreement(self, prompt: Sequence[int], draft: Sequence[int]) -> tuple[int, int]:
        """One teacher-forced pass over prompt + draft: how many draft tokens the model's argmax
        agrees with, and its argmax token right after them (a stop id when it would end there)."""
        prompt = list(prompt)
        draft = [t for t in draft if 0 <= t < self._model.n_vocab]
        if not prompt:
            raise InferenceError("empty prompt")
        ctx = self._ensure_capacity(len(prompt) + len(draft) + 1)
        sequence = prompt + draft
        start = min(common_prefix_len(self._cached, sequence), len(prompt) - 1)
        cached, self._cached = self._cached, []
        if start < len(cached) and not ctx.seq_rm(0, start, -1):
            ctx.clear()
            start = 0
        try:
            rows = self._decode_rows(ctx, sequence, start, first_wanted=len(prompt) - 1)
        except InferenceError:
            ctx.clear()
            raise
        for k, logits in enumerate(rows):
            token = int(np.argmax(logits))
            if k == len(draft) or token != draft[k]:
                self._trim(ctx, prompt, draft[:k], sequence)
                return k, token
        raise InferenceError("teacher-forced pass returned too few rows")  # unreachable

    def _decode_rows(self, ctx: LlamaContext, sequence: list[int], start: int, first_wanted: int) -> list[np.ndarray]:
        """Decode sequence[start:] in batches; logit rows of positions >= first_wanted."""
        rows: list[np.ndarray] = []
        step = ctx.size.n_batch
        for i in range(start, len(sequence), step):
            part = sequence[i : i + step]
            positions = range(i, i + len(part))
            want = [p >= first_wanted for p in positions]
            logits = ctx.decode(part, positions, [0] * len(part), want)
            self.decode_calls += 1
            rows.extend(logits)
        return rows

    def _trim(self, ctx: LlamaContext, prompt: list[int], out: list[int], sequence: list[int]) -> None:
        """Finished inside the draft: keep prompt + out in the KV cache, drop the rest."""
        kept = len(prompt) + len(out)
        if kept < len(sequence) and not ctx.seq_rm(0, kept, -1):
            ctx.clear()
            self._cached = []
            return
        self._cached = sequence[:kept]

    def close(self) -> None:
        if self._ctx is not None:
            self._ctx.free()
            self._ctx = None
        self._cached = []
        self._saved.clear()
