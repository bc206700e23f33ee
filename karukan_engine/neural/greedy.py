"""Greedy decoding by a persistent decoder: KV-prefix reuse and draft verification.

Typing adds one kana at a time, so consecutive prompts share a long prefix: the decoder keeps
the tokens it holds in its KV cache and re-decodes only what follows the longest common prefix.

The output usually changes little from key to key too. A draft (by default the previous output,
when the new prompt is a near continuation of the previous one) is appended to the prompt and
checked in one batched, teacher-forced llama_decode: the model's argmax at every draft position
comes from that one pass, the agreeing prefix is kept, and plain greedy decoding continues from
the first disagreement. The argmax chain is plain greedy's, so the result is too; a right draft
costs one llama_decode instead of one per output token.

One worker thread may serve many input contexts: `switch_to(owner)` saves the current owner's
sequence state (llama.cpp's per-sequence state API) and restores the next owner's instead of
re-prefilling. The decoder is a one-sequence GreedyPool (greedy_pool.py) used one call at a time.
"""

from __future__ import annotations

from typing import AbstractSet, Hashable, Sequence

from karukan_engine.neural.greedy_pool import GreedyJob, GreedyPool, Result
from karukan_engine.neural.runtime import LlamaContext, LlamaModel


class GreedyDecoder:
    """One llama context (sequence 0) owned by one thread; not thread-safe by design."""

    def __init__(self, model: LlamaModel, n_threads: int) -> None:
        self._pool = GreedyPool(model, n_threads, slots=1)
        self._owner: Hashable | None = None

    def generate(self, prompt: Sequence[int], max_new: int, stop_ids: AbstractSet[int],
                 draft: Sequence[int] | None = None) -> Result:
        """Greedy tokens after prompt (stop token excluded), their summed log p, and whether a
        stop token ended them. The caller bounds len(prompt) + max_new by the model context.

        draft: tokens expected after the prompt; None = the previous output when the prompt is a
        near continuation of the previous one. It only changes the cost, never the result."""
        return self._pool.generate_many([GreedyJob(self._owner, prompt, max_new, stop_ids, draft)])[0]

    def first_disagreement(self, prompt: Sequence[int], draft: Sequence[int]) -> tuple[int, int]:
        """One teacher-forced pass over prompt + draft: how many draft tokens the model's argmax
        agrees with, and its argmax token right after them (a stop id when it would end there)."""
        return self._pool.first_disagreement(self._owner, prompt, draft)

    def switch_to(self, owner: Hashable | None) -> bool:
        """Make `owner`'s KV state current; True when a saved state was restored."""
        self._owner = owner
        return self._pool.attach(owner)[1]

    def reset(self) -> None:
        """Forget the cache and the previous output (the context is kept): the next call
        decodes from scratch."""
        self._pool.reset()

    def close(self) -> None:
        self._pool.close()

    @property
    def context(self) -> LlamaContext | None:
        return self._pool.context

    # What the last call did (tests, benchmarks, the scheduler's timing predictor).

    @property
    def decoded_tokens(self) -> int:
        """Tokens sent to llama_decode, rejected draft tokens included."""
        return self._pool.decoded_tokens

    @property
    def decode_calls(self) -> int:
        return self._pool.decode_calls

    @property
    def reused_tokens(self) -> int:
        """Prompt tokens found in the KV cache."""
        return self._pool.reused_tokens

    @property
    def draft_tokens(self) -> int:
        return self._pool.draft_tokens

    @property
    def accepted_tokens(self) -> int:
        """Draft tokens the model agreed with."""
        return self._pool.accepted_tokens

    @property
    def cold(self) -> bool:
        """The llama context had to be created (the timing is not typical)."""
        return self._pool.cold
