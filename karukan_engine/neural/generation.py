"""The result type shared by greedy and beam decoding."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Generation:
    """One decoded continuation of a prompt.

    text: the surface (stop token removed, cut at control marks, trimmed).
    token_ids: generated ids, without the stop token.
    logprob: summed log-softmax of every generated token, the stop token included.
    finished: True when the model emitted a stop token (EOS/EOG, a mark or its first byte) within max_new.
    """

    text: str
    token_ids: tuple[int, ...]
    logprob: float
    finished: bool
