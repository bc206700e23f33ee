"""Stage `pools`: the candidate pools the engine would rank, for a sample of training pairs.

The language-model objective teaches the model to write text; what the product asks of it is
narrower: pick the right spelling among the few the dictionary and the model already propose.
This stage records, for a seeded sample of training pairs, exactly what FusedConverter ranks
(the lattice N-best plus the model's own candidates, each with its dictionary path cost) together
with the token ids the runtime scores them with, so `rerank_train` can train the model on that
choice. Only pools that hold the gold spelling (NFKC) and at least one other spelling carry a
signal; the others are counted and dropped. The output holds token ids and costs, never text.
"""

from __future__ import annotations

import json
import random
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator, Sequence

from karukan_engine.kana import nfkc, to_hiragana
from karukan_engine.training.pairs import DEV_LOSS_PAIRS, Pair, read_pairs
from karukan_engine.training.paths import PACKAGE_MODEL_DIR, stage_dir

# Shares of the sample per source: the registers users type most (chat, everyday sentences,
# encyclopaedic prose) first; old literature last (it is the least like typed text).
SOURCE_SHARES = {"chat": 0.35, "tatoeba": 0.2, "wikipedia": 0.2, "wac_train": 0.2, "aozora": 0.05}


@dataclass(frozen=True)
class Pool:
    """One training choice: the prompt, every ranked candidate, which one is right."""

    prompt: list[int]
    candidates: list[list[int]]        # surface ids (NFKC), EOS not included
    chars: list[int]                   # NFKC surface characters of each candidate
    costs: list[int | None]            # dictionary path cost (None: the dictionary cannot write it)
    gold: int                          # index of the right candidate
    reading_chars: int
    source: str

    def to_json(self) -> str:
        return json.dumps(self.__dict__, separators=(",", ":"))

    @staticmethod
    def from_json(line: str) -> "Pool":
        return Pool(**json.loads(line))


def sample_pairs(pairs: Sequence[Pair], count: int, seed: int,
                 shares: dict[str, float] = SOURCE_SHARES) -> list[Pair]:
    """About `count` pairs drawn without replacement, per source in proportion to `shares`."""
    rng = random.Random(seed)
    by_source: dict[str, list[Pair]] = {}
    for pair in pairs:
        by_source.setdefault(pair.source, []).append(pair)
    total = sum(shares.get(s, 0.0) for s in by_source) or 1.0
    chosen: list[Pair] = []
    for source in sorted(by_source):
        want = round(count * shares.get(source, 0.0) / total)
        chosen += rng.sample(by_source[source], min(want, len(by_source[source])))
    rng.shuffle(chosen)
    return chosen


def gold_index(surfaces: Sequence[str], gold: str) -> int | None:
    target = nfkc(gold)
    for i, surface in enumerate(surfaces):
        if nfkc(surface) == target:
            return i
    return None


def pools_for(pairs: Iterable[Pair], model_dir: Path = PACKAGE_MODEL_DIR, threads: int = 1) -> Iterator[Pool | None]:
    """One Pool per pair (None where the pool cannot teach anything), as the engine ranks it."""
    from karukan_engine.conversion.fused import FusedConverter
    from karukan_engine.conversion.model_slot import ModelSlot
    from karukan_engine.conversion.settings import ConversionSettings
    from karukan_engine.core.types import ConversionRequest, Source
    from karukan_engine.dictionary.system import SystemDictionary
    from karukan_engine.lattice.converter import LatticeConverter
    from karukan_engine.neural.model import ModelOptions, load_model

    model = load_model(next(model_dir.glob("*.gguf")), ModelOptions(n_threads=threads))
    dictionary = SystemDictionary()
    base = LatticeConverter(dictionary, None, None)
    slot = ModelSlot(model, "pools")
    settings = ConversionSettings()
    fused = FusedConverter(base, [slot], settings, lexicon=dictionary)
    for pair in pairs:
        request = ConversionRequest(to_hiragana(pair.reading), pair.context)
        try:
            listed = base.candidates(request, settings.lattice_nbest)
            pool = [c for c in listed + fused.model_candidates(slot, model, request)
                    if c.source != Source.VARIANT]
        except Exception:  # a reading the engine refuses (too long for the model, …)
            yield None
            continue
        surfaces = list(dict.fromkeys(c.surface for c in pool))
        gold = gold_index(surfaces, pair.surface)
        if gold is None or len(surfaces) < 2:
            yield None
            continue
        ids = [model.tokenizer.encode(nfkc(s)) for s in surfaces]
        try:
            prompt = model.prompt_ids(request.reading, request.left_context, reserve=max(map(len, ids)) + 1)
        except Exception:
            yield None
            continue
        yield Pool(prompt, ids, [len(nfkc(s)) for s in surfaces],
                   [a.cost if a is not None else None for a in fused.alignments(request.reading, surfaces)], gold,
                   len(request.reading), pair.source)


def source_pairs(split: str, count: int, seed: int) -> list[Pair]:
    """The pairs pools are made from. "dev": the dev pairs train.py never scores (it scores the
    first DEV_LOSS_PAIRS) and never trains on, all of them, so the pools show the model's
    confidence on unseen text; "train": a sample of the training pairs by SOURCE_SHARES (the
    model has seen them, so its NLL there is more confident than on what users type)."""
    if split == "dev":
        pairs = read_pairs(stage_dir("pairs") / "dev.jsonl")[DEV_LOSS_PAIRS:]
        random.Random(seed).shuffle(pairs)
        return pairs[:count]
    return sample_pairs(read_pairs(stage_dir("pairs") / "train.jsonl"), count, seed)


def build_pools(count: int, seed: int = 0, out: Path | None = None, model_dir: Path = PACKAGE_MODEL_DIR,
                threads: int = 1, split: str = "dev", log=print) -> Path:
    """<work>/pools/pools.jsonl from up to `count` pairs of `split`. An interrupted run resumes:
    `pools.done` holds the pairs done and the lines written at the last flush, and lines after
    those (written while stopping) are cut before the run goes on."""
    out = out or stage_dir("pools") / "pools.jsonl"
    out.parent.mkdir(parents=True, exist_ok=True)
    pairs = source_pairs(split, count, seed)
    done_file = out.with_suffix(".done")
    start, lines = map(int, done_file.read_text().split()) if done_file.exists() else (0, 0)
    if out.exists():
        kept_lines = out.read_text(encoding="utf-8").splitlines(keepends=True)[:lines]
        out.write_text("".join(kept_lines), encoding="utf-8")
    kept = dropped = 0
    started = time.monotonic()
    with out.open("a", encoding="utf-8") as sink:
        for index, pool in enumerate(pools_for(pairs[start:], model_dir, threads), start + 1):
            if pool is None:
                dropped += 1
            else:
                kept += 1
                sink.write(pool.to_json() + "\n")
            if index % 200 == 0 or index == len(pairs):
                sink.flush()
                done_file.write_text(f"{index} {lines + kept}")
                log(f"pools: {index}/{len(pairs)} pairs, {lines + kept} kept, {dropped} dropped this run, "
                    f"{(time.monotonic() - started) / max(1, index - start) * 1000:.0f} ms/pair")
    return out


def read_pools(path: Path) -> list[Pool]:
    return [Pool.from_json(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
