"""Pairs to token ids and length-bucketed batches for training."""

from __future__ import annotations

import random
from typing import Iterator, NamedTuple

import torch

from karukan_engine.neural.prompt import CONTEXT_MARK, INPUT_MARK, OUTPUT_MARK
from karukan_engine.training.pairs import Pair
from karukan_engine.training.vocab import EOS_ID, PAD_ID, CharTokenizer

IGNORE = -100


def prompt_ids(tokenizer: CharTokenizer, context: str, reading: str) -> list[int]:
    """The jinen/zenz-v3 prompt as ids (marks as their own ids, never parsed from text)."""
    return ([tokenizer.mark_id(CONTEXT_MARK)] + tokenizer.encode(context)
            + [tokenizer.mark_id(INPUT_MARK)] + tokenizer.encode(reading)
            + [tokenizer.mark_id(OUTPUT_MARK)])


class Example(NamedTuple):
    ids: list[int]       # prompt + surface + EOS
    prompt_len: int      # marks, context and reading
    context_len: int     # context tokens right after the context mark


def encode_pair(tokenizer: CharTokenizer, pair: Pair, n_ctx: int) -> Example | None:
    """The training sequence of a pair; None when it does not fit n_ctx."""
    prompt = prompt_ids(tokenizer, pair.context, pair.reading)
    ids = prompt + tokenizer.encode(pair.surface) + [EOS_ID]
    # The context's ids sit between the context mark and the input mark.
    context_len = prompt.index(tokenizer.mark_id(INPUT_MARK)) - 1
    return Example(ids, len(prompt), context_len) if len(ids) <= n_ctx else None


def collate(examples: list[Example], context_weight: float = 0.0,
            ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Right-padded inputs, targets and per-token loss weights.

    The surface and EOS are always predicted (weight 1). With context_weight > 0 the left context
    is predicted too, as plain language modelling: the runtime never reads those logits, but the
    context is real text, so it teaches the model Japanese at no extra cost per step.
    """
    length = max(len(e.ids) for e in examples) - 1
    inputs = torch.full((len(examples), length), PAD_ID, dtype=torch.long)
    targets = torch.full((len(examples), length), IGNORE, dtype=torch.long)
    weights = torch.zeros((len(examples), length), dtype=torch.float32)
    for row, (ids, prompt_len, context_len) in enumerate(examples):
        seq = torch.tensor(ids, dtype=torch.long)
        inputs[row, : len(ids) - 1] = seq[:-1]
        # Position prompt_len-1 (the output mark) predicts the first surface token.
        targets[row, prompt_len - 1 : len(ids) - 1] = seq[prompt_len:]
        weights[row, prompt_len - 1 : len(ids) - 1] = 1.0
        if context_weight > 0 and context_len:
            # Position 0 (the context mark) predicts the first context token.
            targets[row, :context_len] = seq[1 : context_len + 1]
            weights[row, :context_len] = context_weight
    return inputs, targets, weights


def batches(examples: list[Example], tokens_per_batch: int, rng: random.Random,
            context_weight: float = 0.0) -> Iterator[tuple[torch.Tensor, torch.Tensor, torch.Tensor]]:
    """One epoch: shuffle, sort windows by length (little padding), batch by token count."""
    order = examples[:]
    rng.shuffle(order)
    window = 4096
    planned: list[list[Example]] = []
    for start in range(0, len(order), window):
        chunk = sorted(order[start : start + window], key=lambda e: len(e.ids))
        batch: list[Example] = []
        for example in chunk:
            if batch and (len(batch) + 1) * len(example.ids) > tokens_per_batch:
                planned.append(batch)
                batch = []
            batch.append(example)
        if batch:
            planned.append(batch)
    rng.shuffle(planned)
    for batch in planned:
        yield collate(batch, context_weight)
