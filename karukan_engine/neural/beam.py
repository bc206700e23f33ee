"""Beam search with a shared prompt and KV-cache reuse.

The prompt is decoded once into sequence 0 and shared with every open beam by `seq_cp` (zero
copy in a unified KV cache). Each step decodes one token per open beam in a single batch. Open
beams sit in slots 0..beam-1; after choosing the survivors the KV cache is permuted through the
scratch slots beam..2*beam-1: stage each survivor's parent into scratch, clear the open slots,
move scratch back. Scores are summed log-softmax without length penalty (all terms <= 0, which
makes the early stop exact).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import AbstractSet, Callable, Sequence

import numpy as np

from karukan_engine.neural.errors import InferenceError
from karukan_engine.neural.logprob import log_normalizers, top_k_rows
from karukan_engine.neural.runtime import LLAMA_MAX_SEQ, ContextSize, GrowingContext, LlamaContext, LlamaModel

MAX_BEAM = LLAMA_MAX_SEQ // 2  # open + scratch slots must fit llama.cpp's 256 sequences
KV_HEADROOM_CELLS = 64
BATCH_HEADROOM = 8
MIN_EXPANSION = 4


@dataclass
class Hypothesis:
    tokens: list[int]  # generated tokens; a finished one ends with its stop token
    score: float
    finished: bool = False


def clamp_beam(beam: int) -> int:
    return max(1, min(int(beam), MAX_BEAM))


def beam_context_size(prompt_len: int, beam: int, max_new: int) -> ContextSize:
    """KV pool = prompt + 2*beam*(max_new+1) + 64 cells; batch = max(prompt, 2*beam) + 8."""
    n_seq = 2 * beam
    return ContextSize(
        n_ctx=prompt_len + n_seq * (max_new + 1) + KV_HEADROOM_CELLS,
        n_batch=max(prompt_len, n_seq) + BATCH_HEADROOM,
        n_seq_max=n_seq,
    )


def converged(finished: Sequence[Hypothesis], active: Sequence[Hypothesis], beam: int) -> bool:
    """True when no open beam can enter the final top-`beam`: scores only fall as tokens are added,
    so once `beam` finished hypotheses all beat the best open one, the result is fixed."""
    if len(finished) < beam or not active:
        return not active
    kth_best_finished = sorted((f.score for f in finished), reverse=True)[beam - 1]
    return max(a.score for a in active) < kth_best_finished


def select(active: Sequence[Hypothesis], logits: np.ndarray, beam: int, stop_ids: AbstractSet[int]) -> list[tuple[int, Hypothesis]]:
    """Expand every open beam by its max(beam, 4) best tokens and keep the global top `beam`
    as (parent slot, child). Ties keep parent order, then token rank (stable sort).

    Ranking a row by its float32 logits is ranking it by log p, so only the chosen entries are
    turned into log p (float64(logit) - log normaliser: the same numbers log_softmax_rows gives)."""
    logits = np.asarray(logits, dtype=np.float32)
    ids, vals = top_k_rows(logits, max(beam, MIN_EXPANSION))
    lps = vals.astype(np.float64) - log_normalizers(logits)
    parent_scores = np.array([a.score for a in active])
    totals = (parent_scores[:, None] + lps).ravel()
    order = np.argsort(-totals, kind="stable")[:beam]
    k = ids.shape[1]
    out = []
    for flat in order:
        slot, rank = divmod(int(flat), k)
        token = int(ids[slot, rank])
        child = Hypothesis(active[slot].tokens + [token], float(totals[flat]), token in stop_ids)
        out.append((slot, child))
    return out


def finalize(finished: list[Hypothesis], active: list[Hypothesis], beam: int) -> list[Hypothesis]:
    ranked = sorted(finished + active, key=lambda h: -h.score)  # stable: finished first on ties
    return ranked[:beam]


def permute_kv(ctx: LlamaContext, parents: Sequence[int], n_open: int, beam: int) -> None:
    """Make open slot j hold the KV history of slot parents[j] (several children may share a
    parent, and a parent's slot may be another child's destination)."""
    if all(p == j for j, p in enumerate(parents)):
        for slot in range(len(parents), n_open):  # survivors already in place: drop the rest
            ctx.seq_rm(slot)
        return
    for j, parent in enumerate(parents):  # 1) stage every survivor's parent in scratch
        ctx.seq_cp(parent, beam + j)
    for slot in range(n_open):  # 2) clear all open slots (frees dropped beams' cells)
        ctx.seq_rm(slot)
    for j in range(len(parents)):  # 3) scratch j -> open j, free scratch
        ctx.seq_cp(beam + j, j)
        ctx.seq_rm(beam + j)


class BeamSearcher:
    """Owns one reusable beam context (grown on demand); one per thread."""

    def __init__(self, model: LlamaModel, n_threads: int) -> None:
        self._contexts = GrowingContext(model, n_threads)
        self.decoded_tokens = 0  # tokens sent to llama_decode by the last call (for benchmarks)

    def search(self, prompt: Sequence[int], max_new: int, beam: int, stop_ids: AbstractSet[int],
               should_stop: Callable[[], bool] | None = None) -> list[Hypothesis]:
        """Best-first hypotheses (at most `beam`); [] when there is nothing to do.
        should_stop: asked before each decode step; True ends the search at once with what it
        has so far (the caller, which asked, knows the result is cut short)."""
        self.decoded_tokens = 0
        if beam <= 0 or max_new <= 0 or not prompt:
            return []
        beam = clamp_beam(beam)
        prompt = list(prompt)
        base = len(prompt)
        ctx = self._contexts.get(beam_context_size(base, beam, max_new))
        ctx.clear()
        try:
            logits = ctx.decode_run(prompt, 0, seq=0)
            self.decoded_tokens = base
            first = select([Hypothesis([], 0.0)], logits[None, :], beam, stop_ids)
            finished = [h for _, h in first if h.finished]
            active = [h for _, h in first if not h.finished]
            for slot in range(1, len(active)):  # share the prompt with every open beam
                ctx.seq_cp(0, slot)
            if not active:
                ctx.seq_rm(0)
            for _ in range(max_new - 1):
                if not active or converged(finished, active, beam):
                    break
                if should_stop is not None and should_stop():
                    break
                n = len(active)
                rows = ctx.decode(
                    [h.tokens[-1] for h in active],
                    [base + len(h.tokens) - 1 for h in active],
                    range(n),
                    [True] * n,
                )
                self.decoded_tokens += n
                chosen = select(active, rows, beam, stop_ids)
                finished += [h for _, h in chosen if h.finished]
                survivors = [(slot, h) for slot, h in chosen if not h.finished]
                permute_kv(ctx, [slot for slot, _ in survivors], n, beam)
                active = [h for _, h in survivors]
            return finalize(finished, active, beam)
        except InferenceError:
            ctx.clear()
            raise

    @property
    def context(self) -> LlamaContext | None:
        return self._contexts.ctx

    def close(self) -> None:
        self._contexts.free()
