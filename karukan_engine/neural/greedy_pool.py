"""Greedy decoding for many owners in one llama context: one sequence id per owner, batched.

Each owner (an input context) keeps its tokens in the KV cache under its own sequence id, so its
next call re-decodes only what follows the longest common prefix with them, and its previous
output serves as a draft, checked in the same pass (see `GreedyRun`). `generate_many` decodes
every job's prompt tail (+ draft) in one batch, then steps all unfinished jobs one token each per
llama_decode: on a CPU a decode of a few tokens costs little more than one, so owners that are
ready together share the cost. Owners beyond the sequence ids are evicted least recently used
first by saving their sequence state (llama.cpp's per-sequence state API), and restored the
same way instead of re-prefilling. Every job's result is plain greedy's, unless its
`should_stop` abandons it between decode steps.
"""

from __future__ import annotations

import ctypes
from collections import OrderedDict
from dataclasses import dataclass, replace
from typing import AbstractSet, Callable, Hashable, Sequence

import numpy as np

from karukan_engine.core.lru import Lru
from karukan_engine.neural.errors import InferenceError
from karukan_engine.neural.logprob import argmax_logprob
from karukan_engine.neural.runtime import LLAMA_MAX_SEQ, ContextSize, LlamaContext, LlamaModel

INITIAL_CELLS = 256
MAX_BATCH = 256
# A re-created context is sized for every resident owner's cells too (they are re-prefilled once,
# then fit), up to this many cells; beyond it only the calling owners are sized for.
MAX_POOL_CELLS = 8192
SAVED_STATES = 32  # evicted owners' sequence states kept (least recently used dropped)
# The previous output is the automatic draft only when at most this many tokens of the new
# prompt changed: the tokens after the prefix it shares with the previous prompt, less the tokens
# both share at their end (at most SHARED_END_TOKENS). Every prompt ends with the output mark:
# one token where the vocabulary has one, three UTF-8 byte tokens where it has not (the zenz /
# jinen v1 vocabulary), so typing a kana changes 1 token (2 when a BPE merge crosses the edit)
# and deleting one 0 in every family. Counting the mark as a change, as this rule first did,
# never let a zenz-family model draft (benchmarks/draft_acceptance_bench.py: 0 of 360 jobs). With
# single-token marks the limit is the one measured with the bundled model on dev-set typing
# (benchmarks/speculative_bench.py, second table, where the mark counted: 1-2 changed tokens had
# 3.2-3.8 draft tokens accepted at 0.76-1.0x the cost of no draft; a new sentence with a new
# left context, >= 9, nothing accepted at 1.47x).
AUTO_DRAFT_MAX_CHANGED = 2
SHARED_END_TOKENS = 3  # the longest output mark: U+EE01 as UTF-8 bytes

Result = tuple[list[int], float, bool]  # tokens without the stop token, summed log p, stopped


def common_prefix_len(a: Sequence[int], b: Sequence[int]) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


def common_suffix_len(a: Sequence[int], b: Sequence[int]) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[len(a) - 1 - i] == b[len(b) - 1 - i]:
        i += 1
    return i


def pool_context_size(needed: int, slots: int) -> ContextSize:
    """Context of the next power of two >= needed cells (at least 256), so a growing pool is
    re-created only a few times and re-prefills its owners' prompts once each."""
    cells = INITIAL_CELLS
    while cells < needed:
        cells *= 2
    return ContextSize(n_ctx=cells, n_batch=min(cells, MAX_BATCH), n_seq_max=slots)


def auto_draft(previous_prompt: Sequence[int], previous_output: Sequence[int], prompt: Sequence[int]) -> list[int]:
    """The previous output when `prompt` is a near continuation of `previous_prompt`, else []."""
    shared = common_prefix_len(previous_prompt, prompt)
    shared_end = min(SHARED_END_TOKENS, common_suffix_len(previous_prompt[shared:], prompt[shared:]))
    changed = len(prompt) - shared - shared_end
    return list(previous_output) if previous_prompt and changed <= AUTO_DRAFT_MAX_CHANGED else []


def valid_prefix(tokens: Sequence[int], n_vocab: int) -> list[int]:
    """tokens up to the first id outside the vocabulary (a draft is only a guess)."""
    out: list[int] = []
    for t in tokens:
        if not 0 <= t < n_vocab:
            break
        out.append(int(t))
    return out


@dataclass(frozen=True)
class GreedyJob:
    owner: Hashable
    prompt: Sequence[int]
    max_new: int
    stop_ids: AbstractSet[int]
    draft: Sequence[int] | None = None  # None: the owner's previous output where it fits
    # Asked before every decode step; True abandons the job (its result is None), e.g. a
    # conversion superseded by a newer key while its batch runs.
    should_stop: Callable[[], bool] | None = None

    def stopping(self) -> bool:
        return self.should_stop is not None and self.should_stop()


@dataclass(frozen=True)
class _Memory:
    """What a sequence holds: its tokens in the KV cache, its last prompt and output (replaced,
    never changed in place: a saved owner may share it)."""

    cached: list[int]
    prompt: list[int]
    output: list[int]


EMPTY = _Memory([], [], [])


class GreedyRun:
    """One greedy generation's bookkeeping: feed it next-token logits until `done`."""

    def __init__(self, prompt: list[int], draft: list[int], max_new: int, stop_ids: AbstractSet[int]) -> None:
        self.prompt = prompt
        self.draft = draft
        self.max_new = max_new
        self.stop_ids = stop_ids
        self.out: list[int] = []
        self.total = 0.0
        self.stopped = False
        self.done = False
        self.accepted = 0

    @property
    def next_pos(self) -> int:
        """Position of the last output token (the next one to decode)."""
        return len(self.prompt) + len(self.out) - 1

    @property
    def kv_len(self) -> int:
        """Tokens of prompt + out whose KV the finished run keeps (the last output token is
        never decoded unless a stop token followed it)."""
        return self.next_pos + (1 if self.stopped else 0)

    def feed(self, logits: np.ndarray) -> None:
        token, lp = argmax_logprob(logits)
        self.total += lp
        if token in self.stop_ids:
            self.stopped = self.done = True
            return
        self.out.append(token)
        self.done = len(self.out) >= self.max_new

    def feed_draft_rows(self, rows: Sequence[np.ndarray]) -> None:
        """Rows of one teacher-forced pass: rows[k] follows prompt + draft[:k]. Feeds them up to
        the first disagreement with the draft; greedy decoding goes on from there."""
        for k, logits in enumerate(rows):
            self.feed(logits)
            if self.done or k >= len(self.draft) or self.out[-1] != self.draft[k]:
                return
            self.accepted += 1

    def result(self) -> Result:
        return self.out, self.total, self.stopped


class GreedyPool:
    """One llama context, one sequence id per owner; one thread at a time (not thread-safe)."""

    def __init__(self, model: LlamaModel, n_threads: int, slots: int = 16) -> None:
        self._model = model
        self._n_threads = n_threads
        self.slots = max(1, min(slots, LLAMA_MAX_SEQ))
        self._ctx: LlamaContext | None = None
        self._seqs: list[_Memory] = [EMPTY] * self.slots
        self._owners: OrderedDict[Hashable, int] = OrderedDict()  # least recently used first
        self._saved: Lru[Hashable, tuple[bytes, _Memory]] = Lru(SAVED_STATES)
        # What the last call did (tests, benchmarks); summed over its jobs.
        self.decoded_tokens = 0  # tokens sent to llama_decode, rejected draft tokens included
        self.decode_calls = 0
        self.reused_tokens = 0  # prompt tokens found in the KV cache
        self.draft_tokens = 0  # draft tokens checked
        self.accepted_tokens = 0  # draft tokens the model agreed with
        self.cold = False  # the llama context had to be created (the timing is not typical)

    @property
    def context(self) -> LlamaContext | None:
        return self._ctx

    def generate_many(self, jobs: Sequence[GreedyJob]) -> list[Result | None]:
        """Plain greedy's result for every job (owners must differ), decoded together; None for
        a job abandoned by its should_stop()."""
        if len({job.owner for job in jobs}) != len(jobs):
            raise ValueError("one job per owner")
        self._start_call()
        results: list[Result | None] = [([], 0.0, False)] * len(jobs)
        live = [i for i, job in enumerate(jobs) if job.prompt and job.max_new > 0]
        for group in range(0, len(live), self.slots):
            indices = live[group : group + self.slots]
            for i, result in zip(indices, self._generate_group([jobs[i] for i in indices])):
                results[i] = result
        return results

    def first_disagreement(self, owner: Hashable, prompt: Sequence[int], draft: Sequence[int]) -> tuple[int, int]:
        """One teacher-forced pass over prompt + draft: how many draft tokens the model's argmax
        agrees with, and its argmax token right after them (a stop id when it would end there)."""
        prompt = list(prompt)
        self._start_call()
        if not prompt:
            raise InferenceError("empty prompt")
        draft = valid_prefix(draft, self._model.n_vocab)
        self.draft_tokens = len(draft)
        ctx = self._ensure_capacity([owner], len(prompt) + len(draft) + 1)
        seq = self.attach(owner)[0]
        sequence = prompt + draft
        try:
            rows = self._decode_tails(ctx, [(seq, sequence, len(prompt))])[0]
            agreed = next(k for k, logits in enumerate(rows) if k == len(draft) or int(np.argmax(logits)) != draft[k])
            self._keep(ctx, seq, _Memory(sequence[: len(prompt) + agreed], prompt, draft[:agreed]))
        except InferenceError:
            self._forget_all(ctx)
            raise
        self.accepted_tokens = agreed
        return agreed, int(np.argmax(rows[agreed]))

    def attach(self, owner: Hashable, pinned: AbstractSet[int] = frozenset()) -> tuple[int, bool]:
        """The owner's sequence id, and whether its saved state was just restored.

        A new owner takes a free id or the least recently used owner's (never one in `pinned`),
        whose state is saved first; without a saved state of its own it starts from what the
        sequence holds (the common-prefix rule keeps that correct)."""
        if owner in self._owners:
            self._owners.move_to_end(owner)
            return self._owners[owner], False
        taken = set(self._owners.values())
        free = [s for s in range(self.slots) if s not in taken]
        if free:
            seq = free[0]
        else:
            victim = next(o for o, s in self._owners.items() if s not in pinned)
            seq = self._owners.pop(victim)
            self._save(victim, seq)
        self._owners[owner] = seq
        saved = self._saved.pop(owner, None)
        ctx = self._ctx
        if saved is None or ctx is None or not ctx.ptr:
            return seq, False
        state, memory = saved
        ctx.seq_rm(seq, -1, -1)
        buffer = (ctypes.c_uint8 * len(state)).from_buffer_copy(state)
        if not ctx._lib.llama_state_seq_set_data(ctx.ptr, buffer, len(state), seq):
            ctx.seq_rm(seq, -1, -1)  # refused: start from scratch
            self._seqs[seq] = EMPTY
            return seq, False
        self._seqs[seq] = memory
        return seq, True

    def reset(self) -> None:
        """Forget every cache, output and saved state (the context is kept)."""
        if self._ctx is not None:
            self._ctx.clear()
        self._seqs = [EMPTY] * self.slots
        self._saved.clear()

    def close(self) -> None:
        if self._ctx is not None:
            self._ctx.free()
            self._ctx = None
        self._seqs = [EMPTY] * self.slots
        self._owners.clear()
        self._saved.clear()

    # --- internals ------------------------------------------------------------------------

    def _start_call(self) -> None:
        self.decoded_tokens = self.decode_calls = self.reused_tokens = 0
        self.draft_tokens = self.accepted_tokens = 0
        self.cold = False

    def _generate_group(self, jobs: Sequence[GreedyJob]) -> list[Result | None]:
        ctx = self._ensure_capacity([job.owner for job in jobs], sum(len(j.prompt) + j.max_new for j in jobs))
        seqs: list[int] = []
        for job in jobs:
            seqs.append(self.attach(job.owner, pinned=frozenset(seqs))[0])
        runs: list[GreedyRun] = []
        for job, seq in zip(jobs, seqs):
            prompt = list(job.prompt)
            memory = self._seqs[seq]
            draft = auto_draft(memory.prompt, memory.output, prompt) if job.draft is None else job.draft
            # Only max_new - 1 draft tokens can be checked: the first output follows the prompt.
            runs.append(GreedyRun(prompt, valid_prefix(draft[: job.max_new - 1], self._model.n_vocab), job.max_new, job.stop_ids))
        self.draft_tokens += sum(len(run.draft) for run in runs)
        try:
            tails = self._decode_tails(ctx, [(seq, run.prompt + run.draft, len(run.prompt)) for run, seq in zip(runs, seqs)])
            for run, seq, rows in zip(runs, seqs, tails):
                run.feed_draft_rows(rows)
                if not run.done:
                    self._trim(ctx, seq, run.next_pos)  # drop the rejected part of the draft
            abandoned: set[int] = set()
            active = [i for i, run in enumerate(runs) if not run.done]
            while active:
                # An abandoned run keeps what it decoded so far (prompt + out minus its last token).
                abandoned.update(i for i in active if jobs[i].stopping())
                active = [i for i in active if i not in abandoned]
                if not active:
                    break
                logits = ctx.decode([runs[i].out[-1] for i in active], [runs[i].next_pos for i in active],
                                    [seqs[i] for i in active], [True] * len(active))
                self.decode_calls += 1
                self.decoded_tokens += len(active)
                for i, row in zip(active, logits):
                    runs[i].feed(row)
                active = [i for i in active if not runs[i].done]
            for run, seq in zip(runs, seqs):
                self._keep(ctx, seq, _Memory((run.prompt + run.out)[: run.kv_len], run.prompt, list(run.out)))
        except InferenceError:
            self._forget_all(ctx)
            raise
        self.accepted_tokens += sum(run.accepted for run in runs)
        return [None if i in abandoned else run.result() for i, run in enumerate(runs)]

    def _decode_tails(self, ctx: LlamaContext, entries: Sequence[tuple[int, list[int], int]]) -> list[list[np.ndarray]]:
        """entries: (seq, tokens, prompt_len). Decode, in as few batches as n_batch allows, what
        of each entry's tokens its sequence lacks (at least the last prompt token, whose logits
        are needed); per entry the logit rows from its last prompt token on."""
        items: list[tuple[int, int, int, int, bool]] = []  # entry, token, position, seq, wanted
        for index, (seq, tokens, prompt_len) in enumerate(entries):
            cached = self._seqs[seq].cached
            start = min(common_prefix_len(cached, tokens), prompt_len - 1)
            self._seqs[seq] = replace(self._seqs[seq], cached=[])  # invalid until the call completes
            if start < len(cached) and not ctx.seq_rm(seq, start, -1):
                ctx.seq_rm(seq, -1, -1)  # partial removal unsupported: start over
                start = 0
            self.reused_tokens += start
            items += [(index, tokens[p], p, seq, p >= prompt_len - 1) for p in range(start, len(tokens))]
        rows: list[list[np.ndarray]] = [[] for _ in entries]
        step = ctx.size.n_batch
        for i in range(0, len(items), step):
            part = items[i : i + step]
            logits = ctx.decode([it[1] for it in part], [it[2] for it in part], [it[3] for it in part], [it[4] for it in part])
            self.decode_calls += 1
            self.decoded_tokens += len(part)
            for (index, *_), row in zip([it for it in part if it[4]], logits):
                rows[index].append(row)
        return rows

    def _ensure_capacity(self, owners: Sequence[Hashable], needed: int) -> LlamaContext:
        """A context with room for `needed` new cells besides what the other owners keep."""
        mine = {self._owners[o] for o in owners if o in self._owners}
        kept = sum(len(m.cached) for s, m in enumerate(self._seqs) if s not in mine)
        if self._ctx is not None and self._ctx.n_ctx >= needed + kept:
            return self._ctx
        self.cold = True
        if self._ctx is not None:
            self._ctx.free()
        self._ctx = None
        self._forget_all(None)
        self._saved.clear()  # states of a smaller context are not restored into a new one
        cells = needed + kept if needed + kept <= MAX_POOL_CELLS else needed
        self._ctx = LlamaContext(self._model, pool_context_size(cells, self.slots), self._n_threads)
        return self._ctx

    def _keep(self, ctx: LlamaContext, seq: int, memory: _Memory) -> None:
        self._trim(ctx, seq, len(memory.cached))
        self._seqs[seq] = memory

    @staticmethod
    def _trim(ctx: LlamaContext, seq: int, kept: int) -> None:
        if not ctx.seq_rm(seq, kept, -1):
            raise InferenceError("could not drop rejected draft tokens")

    def _forget_all(self, ctx: LlamaContext | None) -> None:
        """Every sequence's KV is gone (or untrustworthy); prompts and outputs stay as drafts."""
        if ctx is not None:
            ctx.clear()
        self._seqs = [replace(m, cached=[]) for m in self._seqs]

    def _save(self, owner: Hashable, seq: int) -> None:
        """Keep a copy of the evicted owner's state; its KV stays until overwritten."""
        ctx = self._ctx
        memory = self._seqs[seq]
        if ctx is None or not ctx.ptr or not memory.cached:
            return
        lib = ctx._lib
        size = int(lib.llama_state_seq_get_size(ctx.ptr, seq))
        if size <= 0:
            return
        buffer = (ctypes.c_uint8 * size)()
        written = int(lib.llama_state_seq_get_data(ctx.ptr, buffer, size, seq))
        if written <= 0:
            return
        self._saved.put(owner, (bytes(buffer[:written]), memory))
