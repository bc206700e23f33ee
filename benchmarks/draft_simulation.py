"""Simulated draft acceptance for random-weight mimics (issue 26).

Random weights reject almost every draft, so a mimic's speed is the worst case. Here each greedy
job's draft is the model's own greedy output for that prompt (computed beforehand, untimed) for
its first ceil(A * n) tokens and wrong after that, so a replay shows what a model that accepts
the share A of its draft tokens would cost. Used by model_shape_bench.py (--acceptance).
"""

from __future__ import annotations

import math
from typing import Sequence

# The bundled (trained) model's share of accepted draft tokens while typing
# (docs/benchmarks.md, "Draft acceptance while typing").
BUNDLED_ACCEPTANCE = 0.655


def simulated_draft(own: Sequence[int], acceptance: float, n_vocab: int) -> list[int]:
    """own[:ceil(acceptance * len(own))], then a token other than the model's at every place."""
    keep = min(len(own), math.ceil(acceptance * len(own) - 1e-9))
    return list(own[:keep]) + [(t + 1) % n_vocab for t in own[keep:]]


class DraftOracle:
    """ModelSlot's draft_for hook. First `recording` (no draft; the prompts are noted), then
    `fill` computes each prompt's own greedy output, then `acceptance` = A serves drafts."""

    def __init__(self) -> None:
        self.own: dict[tuple[int, ...], list[int]] = {}
        self.acceptance: float | None = None   # None: recording
        self.served = self.missing = 0

    def __call__(self, prompt: Sequence[int], room: int) -> list[int] | None:
        key = tuple(prompt)
        if self.acceptance is None:
            self.own.setdefault(key, [])
            return []   # no draft while recording
        own = self.own.get(key)
        if not own:
            self.missing += 1
            return []   # a prompt the recording run did not see (the replay is deterministic)
        self.served += 1
        return simulated_draft(own[:room], self.acceptance, self._n_vocab)

    def fill(self, model, tokens: int) -> None:
        """Each recorded prompt's greedy output of `tokens` tokens (stops ignored, as the
        benchmarks' fixed-token jobs do), with the model's own decoder."""
        decoder = model.greedy_decoder()
        self._n_vocab = model.llama.n_vocab
        for prompt in self.own:
            out, _logprob, _finished = decoder.generate(list(prompt), tokens, frozenset())
            self.own[prompt] = list(out)
