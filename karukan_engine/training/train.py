"""Stage 4: train the character model on CPU (or GPU) within a wall-clock budget.

The learning-rate schedule runs on elapsed training time (warm-up, then cosine to 10 %), so a
budget of N minutes always ends on a decayed rate. A checkpoint (model, optimiser, elapsed time,
epoch) is written every few minutes and on SIGTERM/SIGINT; rerunning the command resumes from it.
Metrics go to <work>/train/log.jsonl (never any corpus text).
"""

from __future__ import annotations

import json
import math
import random
import signal
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn.functional as F

from karukan_engine.training.data import IGNORE, Example, batches, encode_pair
from karukan_engine.training.model import CharGPT, ModelConfig
from karukan_engine.training.pairs import DEV_LOSS_PAIRS, Pair, read_pairs
from karukan_engine.training.paths import stage_dir
from karukan_engine.training.vocab import CharTokenizer, build_vocabulary


@dataclass
class TrainOptions:
    minutes: float = 60.0
    # Optional hard step limit (tests, smoke runs); the time budget still applies.
    max_steps: int | None = None
    n_embd: int = 256
    n_layer: int = 4
    n_head: int = 4
    n_ctx: int = 128
    vocab_size: int = 6000
    tokens_per_batch: int = 4096
    lr: float = 2e-3
    # Loss weight of the left-context tokens (language modelling on real text; 0 = surface only).
    context_weight: float = 0.5
    weight_decay: float = 0.05
    warmup_minutes: float = 2.0
    threads: int = 2
    checkpoint_minutes: float = 5.0
    dev_every_minutes: float = 10.0
    seed: int = 0
    device: str = "cpu"


def learning_rate(options: TrainOptions, elapsed_s: float) -> float:
    minutes = elapsed_s / 60.0
    if minutes < options.warmup_minutes:
        return options.lr * max(minutes / options.warmup_minutes, 0.01)
    progress = min(1.0, (minutes - options.warmup_minutes) / max(options.minutes - options.warmup_minutes, 1e-9))
    return options.lr * (0.1 + 0.9 * 0.5 * (1.0 + math.cos(math.pi * progress)))


def vocabulary_for(train: list[Pair], size: int) -> CharTokenizer:
    texts = (text for pair in train for text in (pair.context, pair.reading, pair.surface))
    return CharTokenizer(build_vocabulary(texts, size))


def weighted_loss(logits: torch.Tensor, targets: torch.Tensor, weights: torch.Tensor,
                  ) -> torch.Tensor:
    per_token = F.cross_entropy(logits.flatten(0, 1), targets.flatten(), ignore_index=IGNORE,
                                reduction="none")
    return (per_token * weights.flatten()).sum() / weights.sum().clamp(min=1e-9)


@torch.no_grad()
def mean_loss(model: CharGPT, examples: list[Example], tokens_per_batch: int,
              device: str) -> float:
    """Mean NLL per predicted token (surface + EOS) over examples."""
    model.eval()
    total, count = 0.0, 0
    for inputs, targets, _ in batches(examples, tokens_per_batch, random.Random(0)):
        inputs, targets = inputs.to(device), targets.to(device)
        logits = model(inputs)
        total += F.cross_entropy(logits.flatten(0, 1), targets.flatten(), ignore_index=IGNORE,
                                 reduction="sum").item()
        count += int((targets != IGNORE).sum())
    model.train()
    return total / max(count, 1)


def _save(path: Path, payload: dict) -> None:
    tmp = path.with_suffix(".partial")
    torch.save(payload, tmp)
    tmp.replace(path)


def train(options: TrainOptions, out_dir: Path | None = None, train_pairs: list[Pair] | None = None,
          dev_pairs: list[Pair] | None = None, log=print) -> Path:
    """Train (resuming when a checkpoint exists); returns the path of the final weights."""
    out_dir = out_dir or stage_dir("train")
    out_dir.mkdir(parents=True, exist_ok=True)
    torch.set_num_threads(options.threads)
    torch.manual_seed(options.seed)
    if train_pairs is None:
        train_pairs = read_pairs(stage_dir("pairs") / "train.jsonl")
    if dev_pairs is None:
        dev_pairs = read_pairs(stage_dir("pairs") / "dev.jsonl")
    checkpoint_path = out_dir / "checkpoint.pt"
    state = torch.load(checkpoint_path, weights_only=False) if checkpoint_path.exists() else None
    tokenizer = CharTokenizer(state["tokens"]) if state else vocabulary_for(train_pairs, options.vocab_size)
    config = ModelConfig(**state["config"]) if state else ModelConfig(
        vocab_size=len(tokenizer), n_ctx=options.n_ctx, n_embd=options.n_embd,
        n_layer=options.n_layer, n_head=options.n_head)
    model = CharGPT(config).to(options.device)
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    optimizer = torch.optim.AdamW([{"params": decay, "weight_decay": options.weight_decay},
                                   {"params": no_decay, "weight_decay": 0.0}],
                                  lr=options.lr, betas=(0.9, 0.98))
    progress = {"elapsed": 0.0, "epoch": 0, "batch_index": 0, "step": 0, "tokens_seen": 0}
    if state:
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        progress = state["progress"]
    log(f"model: {model.n_params() / 1e6:.2f} M parameters, vocab {len(tokenizer)}, "
        f"resume at {progress['elapsed'] / 60:.1f} min")

    train_examples = [e for e in (encode_pair(tokenizer, p, config.n_ctx) for p in train_pairs) if e]
    dev_examples = [e for e in (encode_pair(tokenizer, p, config.n_ctx) for p in dev_pairs[:DEV_LOSS_PAIRS]) if e]
    log(f"examples: {len(train_examples)} train, {len(dev_examples)} dev")

    stop = {"now": False}

    def request_stop(signum, frame) -> None:  # finish the step, checkpoint, then return
        stop["now"] = True

    # Signal handlers can only be set from the main thread.
    in_main = threading.current_thread() is threading.main_thread()
    previous = {s: signal.signal(s, request_stop) for s in (signal.SIGTERM, signal.SIGINT)} if in_main else {}

    def checkpoint() -> None:
        _save(checkpoint_path, {"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                                "config": config.to_dict(), "tokens": tokenizer.tokens,
                                "progress": dict(progress)})

    def out_of_time() -> bool:
        steps_done = options.max_steps is not None and progress["step"] >= options.max_steps
        return progress["elapsed"] >= options.minutes * 60 or steps_done or stop["now"]

    log_file = (out_dir / "log.jsonl").open("a", encoding="utf-8")
    last_checkpoint = last_dev = progress["elapsed"]
    window_tokens, window_start = 0, time.monotonic()
    try:
        while not out_of_time():
            # The batch order of an epoch depends only on (seed, epoch): a resumed run skips
            # the batches it already trained on.
            rng = random.Random(options.seed * 1000 + progress["epoch"])
            epoch = batches(train_examples, options.tokens_per_batch, rng, options.context_weight)
            for index, (inputs, targets, weights) in enumerate(epoch):
                if index < progress["batch_index"]:
                    continue
                started = time.monotonic()
                for group in optimizer.param_groups:
                    group["lr"] = learning_rate(options, progress["elapsed"])
                inputs, targets = inputs.to(options.device), targets.to(options.device)
                loss = weighted_loss(model(inputs), targets, weights.to(options.device))
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                optimizer.step()
                progress["elapsed"] += time.monotonic() - started
                progress["step"] += 1
                progress["batch_index"] = index + 1
                progress["tokens_seen"] += inputs.numel()
                window_tokens += inputs.numel()
                if progress["step"] % 20 == 0:
                    rate = window_tokens / (time.monotonic() - window_start)
                    window_tokens, window_start = 0, time.monotonic()
                    record = {**progress, "minutes": round(progress["elapsed"] / 60, 2),
                              "loss": round(loss.item(), 4), "lr": optimizer.param_groups[0]["lr"],
                              "tokens_per_s": round(rate)}
                    log_file.write(json.dumps(record) + "\n")
                    log_file.flush()
                if progress["elapsed"] - last_dev >= options.dev_every_minutes * 60:
                    last_dev = progress["elapsed"]
                    dev_loss = mean_loss(model, dev_examples, options.tokens_per_batch, options.device)
                    record = {"step": progress["step"], "minutes": round(progress["elapsed"] / 60, 2),
                              "dev_loss": round(dev_loss, 4), "dev_ppl": round(math.exp(dev_loss), 3)}
                    log_file.write(json.dumps(record) + "\n")
                    log_file.flush()
                    log(f"dev {record}")
                if progress["elapsed"] - last_checkpoint >= options.checkpoint_minutes * 60:
                    last_checkpoint = progress["elapsed"]
                    checkpoint()
                if out_of_time():
                    break
            else:
                progress["epoch"] += 1
                progress["batch_index"] = 0
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        checkpoint()
        log_file.close()
    dev_loss = mean_loss(model, dev_examples, options.tokens_per_batch, options.device)
    final = out_dir / "model.pt"
    _save(final, {"model": model.state_dict(), "config": config.to_dict(), "tokens": tokenizer.tokens,
                  "progress": dict(progress), "dev_loss": dev_loss})
    log(f"done: {progress['step']} steps, {progress['tokens_seen']} tokens, "
        f"{progress['elapsed'] / 60:.1f} min, dev loss {dev_loss:.4f}")
    return final
