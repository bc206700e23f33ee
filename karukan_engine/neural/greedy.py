"""Greedy decoding in a persistent session that reuses its KV cache across calls.

Typing adds one kana at a time, so consecutive prompts share a long prefix: the session keeps
the tokens it holds in its KV cache and re-decodes only what follows the longest common prefix.
"""

from __future__ import annotations

from typing import AbstractSet, Sequence

from karukan_engine.neural.errors import InferenceError
from karukan_engine.neural.logprob import argmax_logprob
from karukan_engine.neural.runtime import ContextSize, LlamaContext, LlamaModel

INITIAL_CELLS = 256
MAX_BATCH = 256


def common_prefix_len(a: Sequence[int], b: Sequence[int]) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


def session_context_size(needed: int) -> ContextSize:
    """One-sequence context of the next power of two >= needed cells (at least 256), so a
    growing session is re-created only a few times and re-prefills its kept prefix once each."""
    cells = INITIAL_CELLS
    while cells < needed:
        cells *= 2
    return ContextSize(n_ctx=cells, n_batch=min(cells, MAX_BATCH), n_seq_max=1)


class GreedySession:
    """One llama context (sequence 0) owned by one thread; not thread-safe by design."""

    def __init__(self, model: LlamaModel, n_threads: int) -> None:
        self._model = model
        self._n_threads = n_threads
        self._ctx: LlamaContext | None = None
        self._cached: list[int] = []  # exactly the tokens present in the KV cache, in order
        self.decoded_tokens = 0  # tokens sent to llama_decode by the last call
        self.reused_tokens = 0  # prompt tokens the last call found in the KV cache

    def _ensure_capacity(self, needed: int) -> LlamaContext:
        if self._ctx is not None and self._ctx.n_ctx >= needed:
            return self._ctx
        if self._ctx is not None:
            self._ctx.free()
        self._ctx = None
        self._cached = []
        self._ctx = LlamaContext(self._model, session_context_size(needed), self._n_threads)
        return self._ctx

    def generate(self, prompt: Sequence[int], max_new: int, stop_ids: AbstractSet[int]) -> tuple[list[int], float, bool]:
        """Greedy tokens after prompt (stop token excluded), their summed log p, and whether a
        stop token ended them. The caller bounds len(prompt) + max_new by the model context."""
        prompt = list(prompt)
        self.decoded_tokens = self.reused_tokens = 0
        if not prompt or max_new <= 0:
            return [], 0.0, False
        ctx = self._ensure_capacity(len(prompt) + max_new)
        start = min(common_prefix_len(self._cached, prompt), len(prompt) - 1)  # re-decode the last
        cached, self._cached = self._cached, []  # invalid until this call completes
        if start < len(cached) and not ctx.seq_rm(0, start, -1):
            ctx.clear()  # partial removal unsupported: start over
            start = 0
        try:
            logits = ctx.decode_run(prompt[start:], start, seq=0)
            self.reused_tokens = start
            self.decoded_tokens = len(prompt) - start
            out: list[int] = []
            total = 0.0
            while True:
                token, lp = argmax_logprob(logits)
                total += lp
                if token in stop_ids:
                    self._cached = prompt + out
                    return out, total, True
                out.append(token)
                if len(out) >= max_new:
                    self._cached = prompt + out[:-1]  # the last token was never decoded
                    return out, total, False
                logits = ctx.decode_run([token], len(prompt) + len(out) - 1, seq=0)
                self.decoded_tokens += 1
        except InferenceError:
            ctx.clear()
            raise

    def reset(self) -> None:
        """Forget the cached prompt (the context is kept): the next call decodes from scratch."""
        if self._ctx is not None:
            self._ctx.clear()
        self._cached = []

    @property
    def context(self) -> LlamaContext | None:
        return self._ctx

    def close(self) -> None:
        if self._ctx is not None:
            self._ctx.free()
            self._ctx = None
        self._cached = []
