"""Pairs to token ids and length-bucketed batches for training."""

from __future__ import annotations

import random
from typing import Iterator

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


def encode_pair(tokenizer: CharTokenizer, pair: Pair, n_ctx: int) -> tuple[list[int], int] | None:
    """(ids, prompt length): prompt + surface + EOS; None when it does not fit n_ctx."""
    prompt = prompt_ids(tokenizer, pair.context, pair.reading)
    ids = prompt + tokenizer.encode(pair.surface) + [EOS_ID]
    return (ids, len(prompt)) if len(ids) <= n_ctx else None


def collate(examples: list[tuple[list[int], int]]) -> tuple[torch.Tensor, torch.Tensor]:
    """Right-padded inputs and targets; only surface tokens and EOS are predicted (loss mask)."""
    length = max(len(ids) for ids, _ in examples) - 1
    inputs = torch.full((len(examples), length), PAD_ID, dtype=torch.long)
    targets = torch.full((len(examples), length), IGNORE, dtype=torch.long)
    for row, (ids, prompt_len) in enumerate(examples):
        seq = torch.tensor(ids, dtype=torch.long)
        inputs[row, : len(ids) - 1] = seq[:-1]
        # Position prompt_len-1 (the output mark) predicts the first surface token.
        targets[row, prompt_len - 1 : len(ids) - 1] = seq[prompt_len:]
    return inputs, targets


def batches(examples: list[tuple[list[int], int]], tokens_per_batch: int, rng: random.Random,
            ) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    """One epoch: shuffle, sort windows by length (little padding), batch by token count."""
    order = examples[:]
    rng.shuffle(order)
    window = 4096
    planned: list[list[tuple[list[int], int]]] = []
    for start in range(0, len(order), window):
        chunk = sorted(order[start : start + window], key=lambda e: len(e[0]))
        batch: list[tuple[list[int], int]] = []
        for example in chunk:
            if batch and (len(batch) + 1) * len(example[0]) > tokens_per_batch:
                planned.append(batch)
                batch = []
            batch.append(example)
        if batch:
            planned.append(batch)
    rng.shuffle(planned)
    for batch in planned:
        yield collate(batch)
