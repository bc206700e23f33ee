"""Stage `rerank`: fine-tune the trained model on the choice the product asks of it.

Each pool (training/pools.py) is what the engine ranks for one reading: the dictionary's and the
model's candidates with their path costs. The fused score of a candidate is the ranking's
(conversion/ranking.py: fused_score):

    score = lattice * cost / 1000 per reading char + nll * NLL per char
            + nll_total * NLL of the surface + unaligned (when the dictionary cannot write it)

and the loss is the cross-entropy of the softmax over -score with the gold candidate as target,
so the model learns what the dictionary's cost misses, not the whole choice again. The four
weights are learned with it (kept positive). Language-model loss on the gold spelling is added
(weight `lm_weight`) so greedy and beam generation stay what they were. Pools are held out at the
end of the file for a dev score: pool top-1 accuracy of the dictionary order and of the fused
score, before and after.
"""

from __future__ import annotations

import json
import math
import random
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import torch
import torch.nn.functional as F

from karukan_engine.training.data import Example, encode_pair
from karukan_engine.training.model import CharGPT, ModelConfig
from karukan_engine.training.pairs import DEV_LOSS_PAIRS, read_pairs
from karukan_engine.training.paths import stage_dir
from karukan_engine.training.pools import Pool, read_pools
from karukan_engine.training.train import mean_loss
from karukan_engine.training.vocab import EOS_ID, PAD_ID, CharTokenizer

WEIGHT_NAMES = ("lattice", "nll", "nll_total", "unaligned")


@dataclass
class RerankOptions:
    minutes: float = 30.0
    # One pass by default: a second one teaches the model these very pools (memorising them),
    # not the choice.
    epochs: int = 1
    lr: float = 1e-4
    pools_per_step: int = 16
    max_candidates: int = 4           # gold + the best-ranked others (dictionary order first)
    lm_weight: float = 1.0
    dev_pools: int = 1000
    threads: int = 1
    seed: int = 0
    initial_weights: tuple[float, float, float, float] = (1.0, 0.5, 0.05, 2.0)


def trimmed(pool: Pool, limit: int) -> Pool:
    """At most `limit` (≥ 2) candidates, the gold and the dictionary's first among them, the
    rest in the pool's order."""
    keep = [i for i in range(len(pool.candidates)) if i != pool.gold][: max(2, limit) - 1]
    keep = sorted(keep + [pool.gold])
    return Pool(pool.prompt, [pool.candidates[i] for i in keep], [pool.chars[i] for i in keep],
                [pool.costs[i] for i in keep], keep.index(pool.gold), pool.reading_chars, pool.source)


def length_batches(pools: Sequence[Pool], per_batch: int, rng: random.Random) -> list[list[Pool]]:
    """One epoch of batches, shuffled, each cut from a length-sorted window (little padding)."""
    order = list(pools)
    rng.shuffle(order)
    batches: list[list[Pool]] = []
    window = per_batch * 32
    for start in range(0, len(order), window):
        chunk = sorted(order[start : start + window], key=packed_length)
        batches += [chunk[i : i + per_batch] for i in range(0, len(chunk), per_batch)]
    rng.shuffle(batches)
    return batches


def packed_length(pool: Pool) -> int:
    return len(pool.prompt) + sum(len(c) for c in pool.candidates)


def dictionary_choice(pool: Pool) -> int:
    """What the dictionary alone puts first: pools list the lattice's N-best first, in order."""
    return 0


def packed(pools: Sequence[Pool]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, list[list[tuple[list[int], list[int]]]]]:
    """One row per pool: the prompt once, then every candidate after it, each candidate seeing
    only the prompt and itself, at the positions it would have alone. Returns ids, positions,
    mask and, per pool and candidate, (rows whose logits predict it, the tokens they predict)."""
    width = max(packed_length(p) for p in pools)
    ids = torch.full((len(pools), width), PAD_ID, dtype=torch.long)
    positions = torch.zeros((len(pools), width), dtype=torch.long)
    mask = torch.eye(width, dtype=torch.bool).repeat(len(pools), 1, 1)   # padding sees itself
    reads: list[list[tuple[list[int], list[int]]]] = []
    for row, pool in enumerate(pools):
        n_prompt = len(pool.prompt)
        ids[row, :n_prompt] = torch.tensor(pool.prompt)
        positions[row, :n_prompt] = torch.arange(n_prompt)
        mask[row, :n_prompt, :n_prompt] = torch.tril(torch.ones(n_prompt, n_prompt, dtype=torch.bool))
        at, per_candidate = n_prompt, []
        for cand in pool.candidates:
            n = len(cand)
            if n:
                ids[row, at : at + n] = torch.tensor(cand)
                positions[row, at : at + n] = torch.arange(n_prompt, n_prompt + n)
                mask[row, at : at + n, :n_prompt] = True
                mask[row, at : at + n, at : at + n] = torch.tril(torch.ones(n, n, dtype=torch.bool))
            # The prompt's last token predicts the first surface token; each surface token the next
            # one, the last of them EOS.
            per_candidate.append(([n_prompt - 1] + list(range(at, at + n)), list(cand) + [EOS_ID]))
            at += n
        reads.append(per_candidate)
    return ids, positions, mask, reads


def candidate_nlls(model: CharGPT, pools: Sequence[Pool]) -> list[torch.Tensor]:
    """Per pool, each candidate's summed NLL of its surface + EOS (equal to scoring each one
    alone after the prompt: tests/training/test_training_rerank.py)."""
    ids, positions, mask, reads = packed(pools)
    hidden = model.hidden(ids, positions, mask)
    pool_index, rows, targets, owners = [], [], [], []
    for p, per_candidate in enumerate(reads):
        for k, (read_rows, read_targets) in enumerate(per_candidate):
            pool_index += [p] * len(read_rows)
            rows += read_rows
            targets += read_targets
            owners += [(p, k)] * len(read_rows)
    picked = hidden[torch.tensor(pool_index), torch.tensor(rows)]
    per_token = F.cross_entropy(model.logits(picked), torch.tensor(targets), reduction="none")
    flat_owner = torch.tensor([sum(len(r) for r in reads[:p]) + k for p, k in owners])
    sums = torch.zeros(sum(len(r) for r in reads)).index_add(0, flat_owner, per_token)
    out, start = [], 0
    for per_candidate in reads:
        out.append(sums[start : start + len(per_candidate)])
        start += len(per_candidate)
    return out


def features(pool: Pool) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    cost = torch.tensor([(c or 0) / 1000.0 / max(1, pool.reading_chars) for c in pool.costs])
    unaligned = torch.tensor([1.0 if c is None else 0.0 for c in pool.costs])
    chars = torch.tensor([max(1, n) for n in pool.chars], dtype=torch.float32)
    return cost, unaligned, chars


def fused_scores(weights: torch.Tensor, pool: Pool, nll_sum: torch.Tensor) -> torch.Tensor:
    lattice, nll, nll_total, unaligned_cost = weights
    cost, unaligned, chars = features(pool)
    return lattice * cost + nll * nll_sum / chars + nll_total * nll_sum + unaligned_cost * unaligned


def positive(raw: torch.Tensor) -> torch.Tensor:
    return F.softplus(raw)


def inverse_positive(values: Sequence[float]) -> torch.Tensor:
    return torch.tensor([math.log(math.expm1(max(v, 1e-4))) for v in values])


@torch.no_grad()
def dev_accuracy(model: CharGPT, raw_weights: torch.Tensor, pools: Sequence[Pool]) -> dict:
    model.eval()
    weights = positive(raw_weights)
    fused = dictionary = 0
    for start in range(0, len(pools), 32):
        chunk = pools[start : start + 32]
        for pool, nll_sum in zip(chunk, candidate_nlls(model, chunk)):
            fused += int(torch.argmin(fused_scores(weights, pool, nll_sum)).item() == pool.gold)
            dictionary += int(dictionary_choice(pool) == pool.gold)
    model.train()
    n = max(1, len(pools))
    return {"pools": len(pools), "dictionary_top1": dictionary / n, "fused_top1": fused / n,
            "weights": dict(zip(WEIGHT_NAMES, [round(float(w), 4) for w in weights]))}


def lm_dev_examples(payload: dict, path: Path) -> list[Example]:
    """train.py's dev examples, so the language-model dev loss can be compared with its log."""
    if not path.exists():
        return []
    tokenizer = CharTokenizer(payload["tokens"])
    n_ctx = payload["config"]["n_ctx"]
    return [e for e in (encode_pair(tokenizer, p, n_ctx) for p in read_pairs(path)[:DEV_LOSS_PAIRS]) if e]


def lm_dev_loss(model: CharGPT, examples: list[Example]) -> float | None:
    return round(mean_loss(model, examples, 2048, "cpu"), 4) if examples else None


def rerank_train(options: RerankOptions, weights_in: Path | None = None, pools_path: Path | None = None,
                 out_dir: Path | None = None, lm_dev_path: Path | None = None, log=print) -> Path:
    """Fine-tune train/model.pt on the pools; writes <work>/rerank/model.pt (same format)."""
    torch.set_num_threads(options.threads)
    torch.manual_seed(options.seed)
    weights_in = weights_in or stage_dir("train") / "model.pt"
    pools_path = pools_path or stage_dir("pools") / "pools.jsonl"
    out_dir = out_dir or stage_dir("rerank")
    out_dir.mkdir(parents=True, exist_ok=True)
    payload = torch.load(weights_in, weights_only=False, map_location="cpu")
    model = CharGPT(ModelConfig(**payload["config"]))
    model.load_state_dict(payload["model"])
    pools = [trimmed(p, options.max_candidates) for p in read_pools(pools_path)]
    dev, train = pools[-options.dev_pools:], pools[: -options.dev_pools]
    raw_weights = torch.nn.Parameter(inverse_positive(options.initial_weights))
    optimizer = torch.optim.AdamW([{"params": list(model.parameters()), "lr": options.lr},
                                   {"params": [raw_weights], "lr": 0.02, "weight_decay": 0.0}],
                                  betas=(0.9, 0.98), weight_decay=0.0)
    log_file = (out_dir / "log.jsonl").open("a", encoding="utf-8")

    def record(entry: dict) -> None:
        log_file.write(json.dumps(entry) + "\n")
        log_file.flush()
        log(entry)

    lm_dev = lm_dev_examples(payload, lm_dev_path or stage_dir("pairs") / "dev.jsonl")
    record({"dev_before": dev_accuracy(model, raw_weights, dev), "train_pools": len(train),
            "lm_dev_loss": lm_dev_loss(model, lm_dev)})
    rng = random.Random(options.seed)
    started, step = time.monotonic(), 0
    budget = options.minutes * 60
    total_steps = max(1, options.epochs * math.ceil(len(train) / options.pools_per_step))
    for _epoch in range(options.epochs):
        for chunk in length_batches(train, options.pools_per_step, rng):
            elapsed = time.monotonic() - started
            if elapsed >= budget:
                break
            # Cosine decay to 10 % over the run (its steps or its time, whichever ends first),
            # after a short warm-up.
            progress = min(1.0, max(elapsed / budget, step / total_steps))
            scale = min(1.0, (step + 1) / 20) * (0.1 + 0.45 * (1 + math.cos(math.pi * progress)))
            optimizer.param_groups[0]["lr"] = options.lr * scale
            weights = positive(raw_weights)
            nlls = candidate_nlls(model, chunk)
            rank_loss = lm_loss = torch.zeros(())
            for pool, nll_sum in zip(chunk, nlls):
                rank_loss = rank_loss + F.cross_entropy(-fused_scores(weights, pool, nll_sum)[None],
                                                        torch.tensor([pool.gold]))
                lm_loss = lm_loss + nll_sum[pool.gold] / (len(pool.candidates[pool.gold]) + 1)
            loss = (rank_loss + options.lm_weight * lm_loss) / len(chunk)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            step += 1
            if step % 50 == 0:
                record({"step": step, "minutes": round(elapsed / 60, 2), "rank_loss": round(rank_loss.item() / len(chunk), 4),
                        "lm_loss": round(lm_loss.item() / len(chunk), 4),
                        "weights": [round(float(w), 3) for w in positive(raw_weights).detach()]})
        if time.monotonic() - started >= budget:
            break
    record({"dev_after": dev_accuracy(model, raw_weights, dev), "steps": step,
            "lm_dev_loss": lm_dev_loss(model, lm_dev)})
    final = out_dir / "model.pt"
    tmp = final.with_suffix(".partial")
    torch.save({**payload, "model": model.state_dict(),
                "rerank_weights": dict(zip(WEIGHT_NAMES, [float(w) for w in positive(raw_weights).detach()]))}, tmp)
    tmp.replace(final)
    return final
