"""Negative log-likelihood of a surface given its reading (and left context).

score = -(sum of log p of the surface tokens [+ the EOS that ends it]) / number of surface
characters. Lower is better. The batched form decodes the shared prompt once into sequence 0,
copies it to one sequence per candidate and decodes all candidates in as few batches as fit.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from karukan_engine.neural.logprob import log_normalizers, log_softmax_rows
from karukan_engine.neural.runtime import LLAMA_MAX_SEQ, ContextSize, GrowingContext, LlamaContext, LlamaModel

MAX_SCORE_BATCH = 512
MAX_CANDIDATES_PER_ROUND = LLAMA_MAX_SEQ - 1  # sequence 0 holds the prompt
KV_SLACK = 64


def nll_per_char(rows_logprob: np.ndarray, targets: Sequence[int], n_chars: int) -> float:
    """rows_logprob[i] is the distribution that predicts targets[i]."""
    picked = rows_logprob[np.arange(len(targets)), np.asarray(targets, dtype=np.int64)]
    return float(-picked.sum() / max(1, n_chars))


def _rounded_up(size: ContextSize) -> ContextSize:
    """Powers of two from 256 cells: candidate sets of slowly growing length share a context."""
    cells = 256
    while cells < size.n_ctx:
        cells *= 2
    return ContextSize(cells, max(size.n_batch, 64), max(size.n_seq_max, 1))


class NllScorer:
    """Scores surfaces with its own llama context; use one per thread. The context is cleared
    at the start of every call, so calls are independent."""

    def __init__(self, model: LlamaModel, n_threads: int, eos_id: int) -> None:
        self._model = model
        self._eos_id = eos_id
        self._contexts = GrowingContext(model, n_threads, _rounded_up)

    def _targets(self, surface_ids: Sequence[int], with_eos: bool) -> list[int]:
        return list(surface_ids) + ([self._eos_id] if with_eos else [])

    def score_ids(self, prompt: Sequence[int], surface_ids: Sequence[int], n_chars: int, with_eos: bool = True) -> float:
        """One candidate alone: prompt + surface decoded in one sequence (the reference path)."""
        targets = self._targets(surface_ids, with_eos)
        if not targets:
            return 0.0
        full = list(prompt) + list(surface_ids)
        base = len(prompt)
        ctx = self._contexts.get(ContextSize(len(full) + 1, min(len(full), MAX_SCORE_BATCH), 1))
        ctx.clear()
        try:
            rows = []
            step = ctx.size.n_batch
            for i in range(0, len(full), step):
                chunk = range(i, min(i + step, len(full)))
                want = [p >= base - 1 and p - (base - 1) < len(targets) for p in chunk]
                out = ctx.decode([full[p] for p in chunk], list(chunk), [0] * len(chunk), want)
                rows.append(out)
        finally:
            ctx.clear()
        return nll_per_char(log_softmax_rows(np.concatenate(rows)), targets, n_chars)

    def score_many_ids(self, prompt: Sequence[int], surfaces: Sequence[Sequence[int]], n_chars: Sequence[int], with_eos: bool = True) -> list[float]:
        """Many candidates for one prompt: the prompt is decoded once and shared."""
        if not surfaces:
            return []
        base = len(prompt)
        total = sum(len(s) for s in surfaces)
        groups = min(len(surfaces), MAX_CANDIDATES_PER_ROUND)
        size = ContextSize(base + total + KV_SLACK, max(min(MAX_SCORE_BATCH, total), base, 1), groups + 1)
        ctx = self._contexts.get(size)
        ctx.clear()
        scores: list[float] = [0.0] * len(surfaces)
        try:
            first = log_softmax_rows(ctx.decode_run(list(prompt), 0, seq=0)[None, :])[0]
            for start in range(0, len(surfaces), MAX_CANDIDATES_PER_ROUND):
                index = list(range(start, min(start + MAX_CANDIDATES_PER_ROUND, len(surfaces))))
                self._score_round(ctx, base, first, index, surfaces, n_chars, with_eos, scores)
        finally:
            ctx.clear()
        return scores

    def _score_round(self, ctx: LlamaContext, base: int, first: np.ndarray, index: list[int], surfaces, n_chars, with_eos: bool, scores: list[float]) -> None:
        # Candidate i of this round lives in sequence i + 1, sharing the prompt cells of seq 0.
        # Each decoded row is needed only at the token it predicts (the candidate's next token,
        # or EOS after its last), so only that log p is kept: logit - log normaliser, the very
        # number log_softmax_rows gives there, without a float64 copy of every row.
        entries: list[tuple[int, int, int]] = []  # (token, position, seq)
        predicts: list[int] = []  # the target each entry's row predicts (-1: none)
        for seq, i in enumerate(index, start=1):
            ids = surfaces[i]
            if ids:
                ctx.seq_cp(0, seq)
            targets = self._targets(ids, with_eos)
            entries += [(tok, base + p, seq) for p, tok in enumerate(ids)]
            predicts += [targets[p + 1] if p + 1 < len(targets) else -1 for p in range(len(ids))]
        picked = np.zeros(len(entries), dtype=np.float64)
        step = ctx.size.n_batch
        for s in range(0, len(entries), step):
            chunk = entries[s : s + step]
            out = ctx.decode([e[0] for e in chunk], [e[1] for e in chunk], [e[2] for e in chunk], [True] * len(chunk))
            want = np.asarray(predicts[s : s + len(chunk)])
            rows = np.flatnonzero(want >= 0)
            if len(rows):
                logits = out[rows]
                picked[s + rows] = logits[np.arange(len(rows)), want[rows]].astype(np.float64) - log_normalizers(logits)[:, 0]
        offset = 0
        for seq, i in enumerate(index, start=1):
            ids = list(surfaces[i])
            targets = self._targets(ids, with_eos)
            if targets:
                # the prompt's last row predicts targets[0]; then each candidate token's row
                total = first[targets[0]] + picked[offset : offset + len(targets) - 1].sum()
                scores[i] = float(-total / max(1, n_chars[i]))
            else:
                scores[i] = 0.0
            offset += len(ids)
            ctx.seq_rm(seq)

    def close(self) -> None:
        self._contexts.free()
