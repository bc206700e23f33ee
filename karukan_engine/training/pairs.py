"""Stage 3: training / dev / test pairs (left context, katakana reading, surface).

Spans are cut at chunk boundaries of annotated sentences (see readings.py) and contain only
chunks with an agreed reading; the text before the span (its tail, up to the prompt's context
budget) is the left context, as zenz/jinen data are made. A source's weight scales how many
spans each of its sentences gives. Held-out parts (annotated Wikipedia dev/test, held-out chat
dialogues) give one evaluation span per sentence; the held-out Debian docs give test.jsonl.
Output: <work>/pairs/{train,dev,test}.jsonl and <work>/pairs/heldout/<part>.jsonl, lines
{"context", "reading", "surface", "source"}.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator

from karukan_engine.training.paths import stage_dir
from karukan_engine.training.sources import corpus_parts

MAX_CONTEXT_CHARS = 20   # the runtime's default context budget (karukan_engine.neural.prompt)
MAX_SURFACE_CHARS = 32
MAX_READING_CHARS = 48
DEV_PERCENT = 2
_HAS_KANJI = re.compile(r"[\u4e00-\u9fff\u3005]")


# train.py scores the dev loss on the first this many dev pairs; the rest stay unseen by any
# training step, which the rerank pools use (training/pools.py).
DEV_LOSS_PAIRS = 2000

@dataclass(frozen=True)
class Pair:
    context: str
    reading: str
    surface: str
    source: str

    def to_json(self) -> str:
        return json.dumps(self.__dict__, ensure_ascii=False)

    @staticmethod
    def from_json(line: str) -> "Pair":
        return Pair(**json.loads(line))


def is_dev_sentence(text: str) -> bool:
    """A stable 2 % of training-source sentences, chosen by hash so reruns agree."""
    return hashlib.sha1(text.encode("utf-8")).digest()[0] * 100 < DEV_PERCENT * 256


def readable_runs(chunks: list[list]) -> list[tuple[int, int]]:
    """Maximal [begin, end) chunk-index ranges whose chunks all have readings."""
    runs, start = [], None
    for i, (_, reading) in enumerate(chunks):
        if reading is not None and start is None:
            start = i
        elif reading is None and start is not None:
            runs.append((start, i))
            start = None
    if start is not None:
        runs.append((start, len(chunks)))
    return runs


def span_pair(chunks: list[list], begin: int, end: int, context_chars: int, source: str) -> Pair | None:
    surface = "".join(chunks[i][0] for i in range(begin, end))
    reading = "".join(chunks[i][1] for i in range(begin, end))
    if not surface or len(surface) > MAX_SURFACE_CHARS or len(reading) > MAX_READING_CHARS:
        return None
    prefix = "".join(chunk[0] for chunk in chunks[:begin])
    context = prefix[len(prefix) - context_chars:].lstrip() if context_chars else ""
    return Pair(context, reading, surface, source)


def random_spans(chunks: list[list], rng: random.Random, count: int) -> Iterator[tuple[int, int]]:
    """Up to `count` spans inside readable runs, 1 to MAX_SURFACE_CHARS characters long."""
    runs = [run for run in readable_runs(chunks) if run[1] > run[0]]
    if not runs:
        return
    for _ in range(count):
        run_begin, run_end = rng.choice(runs)
        begin = rng.randrange(run_begin, run_end)
        target = rng.choice((2, 4, 6, 8, 10, 12, 16, 20, 24, 32))
        end, length = begin, 0
        while end < run_end and length + len(chunks[end][0]) <= target:
            length += len(chunks[end][0])
            end += 1
        if end == begin:
            end = begin + 1
        yield begin, end


def _context_chars(rng: random.Random) -> int:
    # A fifth of the pairs see no context, as at the start of a text field.
    return 0 if rng.random() < 0.2 else rng.randint(1, MAX_CONTEXT_CHARS)


def sentence_pairs(chunks: list[list], rng: random.Random, source: str, count: int) -> list[Pair]:
    pairs = []
    for begin, end in random_spans(chunks, rng, count):
        pair = span_pair(chunks, begin, end, _context_chars(rng), source)
        # Kana-only spans teach little; keep a share of them so the model also learns to leave kana.
        if pair is not None and (_HAS_KANJI.search(pair.surface) or rng.random() < 0.3):
            pairs.append(pair)
    return pairs


def _read_chunks(name: str) -> Iterator[list[list]]:
    with (stage_dir("readings") / f"{name}.jsonl").open(encoding="utf-8") as handle:
        for line in handle:
            yield json.loads(line)["chunks"]


EVAL_SURFACE_CHARS = (4, 24)


def evaluation_pair(chunks: list[list], rng: random.Random, source: str) -> Pair | None:
    """One span a user would convert in one go: 4-24 characters with a kanji, full left context.

    Spans are drawn from the readable runs (seeded), so a set is the same on every rebuild.
    """
    candidates = []
    for run_begin, run_end in readable_runs(chunks):
        for begin in range(run_begin, run_end):
            length = 0
            for end in range(begin + 1, run_end + 1):
                length += len(chunks[end - 1][0])
                if length > EVAL_SURFACE_CHARS[1]:
                    break
                if length >= EVAL_SURFACE_CHARS[0]:
                    candidates.append((begin, end))
    rng.shuffle(candidates)
    for begin, end in candidates:
        pair = span_pair(chunks, begin, end, MAX_CONTEXT_CHARS, source)
        if pair is not None and _HAS_KANJI.search(pair.surface):
            return pair
    return None


def _write(path: Path, pairs: Iterable[Pair]) -> int:
    tmp = path.with_suffix(".partial")
    n = 0
    with tmp.open("w", encoding="utf-8") as handle:
        for pair in pairs:
            handle.write(pair.to_json() + "\n")
            n += 1
    tmp.rename(path)
    return n


def build_pairs(seed: int = 0, test_limit: int = 2000, force: bool = False) -> dict[str, Path]:
    out = stage_dir("pairs")
    heldout_dir = out / "heldout"
    heldout_dir.mkdir(exist_ok=True)
    paths = {split: out / f"{split}.jsonl" for split in ("train", "dev", "test")}
    if all(p.exists() for p in paths.values()) and not force:
        return paths
    rng = random.Random(seed)
    train: list[Pair] = []
    dev: list[Pair] = []
    test: list[Pair] = []
    for source, part, split in corpus_parts():
        heldout: list[Pair] = []
        part_rng = random.Random(f"{seed}:{part}")
        for chunks in _read_chunks(part):
            text = "".join(chunk[0] for chunk in chunks)
            known = sum(len(c[0]) for c in chunks if c[1] is not None)
            if split == "heldout" and source.kind == "debian":
                test.extend(sentence_pairs(chunks, rng, part, 1))
            elif split == "heldout":
                pair = evaluation_pair(chunks, part_rng, part)
                if pair is not None:
                    heldout.append(pair)
            elif is_dev_sentence(text):
                dev.extend(sentence_pairs(chunks, rng, part, 1))
            else:
                count = max(1, round(known / 8 * source.weight))
                train.extend(sentence_pairs(chunks, rng, part, count))
        if heldout:
            _write(heldout_dir / f"{part}.jsonl", heldout)
    rng.shuffle(train)
    rng.shuffle(test)
    rng.shuffle(dev)
    _write(paths["train"], train)
    _write(paths["dev"], dev)
    _write(paths["test"], test[:test_limit])
    return paths


def read_pairs(path: Path) -> list[Pair]:
    return [Pair.from_json(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
