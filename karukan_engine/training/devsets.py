"""The `devsets` stage: a dev set per register from the corpus's held-out documents.

Every "lines" source that holds out a share of its documents (`heldout_percent`: chat and the
typed dialogues by dialogue, the Wikipedia paragraphs, the white paper, Wikinews, laws) gives
`pairs/heldout/<name>_heldout.jsonl`, one span per sentence with its full left context
(pairs.evaluation_pair), as fused_quality.py and the lattice LM fit read them; the annotated
Wikipedia dev and test splits give theirs from the gold readings, and the held-out Debian
documentation (GIMP's and GNOME's Japanese help, fetched with `apt-get download` as the corpus
stage does) gives `pairs/heldout/docs_heldout.jsonl`, technical prose no source trains on.
Only the held-out text is annotated (fugashi + SudachiPy agreement, training/readings.py), at
most `limit` sentences a part, spread evenly over it, so the stage takes minutes, not the hours
the whole corpus would.
"""

from __future__ import annotations

import json
import random
import subprocess
from multiprocessing import Pool
from pathlib import Path

from karukan_engine.training.corpus import build_source
from karukan_engine.training.pairs import _write, evaluation_pair
from karukan_engine.training.paths import stage_dir
from karukan_engine.training.readings import _annotate_line, annotated_sentences, gold_chunks
from karukan_engine.training.sources import SOURCES, heldout_part

SENTENCES_PER_SET = 1500
DOCS_PART = "docs_heldout"


def spread(items: list, limit: int) -> list:
    """At most `limit` items taken evenly over the list (every k-th)."""
    step = max(1, -(-len(items) // max(1, limit)))
    return items[::step][:limit]


def build_devsets(corpus_dir: Path | None, processes: int = 2, limit: int = SENTENCES_PER_SET,
                  force: bool = False, seed: int = 0, docs: bool = True) -> dict[str, Path]:
    """docs: also the Debian documentation's part (its packages fetched once, then cached)."""
    if corpus_dir is None:
        raise FileNotFoundError("no corpus directory: pass --corpus DIR (see docs/training.md)")
    out_dir = stage_dir("pairs") / "heldout"
    out_dir.mkdir(exist_ok=True)
    written: dict[str, Path] = {}
    for source in SOURCES:
        if not source.file or not (corpus_dir / source.file).is_file():
            continue
        if source.kind == "annotated" and source.split == "heldout":
            part = source.name
        elif source.kind == "lines" and source.heldout_percent:
            part = heldout_part(source.name)
        else:
            continue
        out = out_dir / f"{part}.jsonl"
        if out.exists() and not force:
            written[part] = out
            continue
        if source.kind == "annotated":
            chunk_lists = [gold_chunks(words) for words in annotated_sentences(corpus_dir / source.file)]
        else:
            build_source(source, corpus_dir)   # the corpus stage's part files (cached)
            chunk_lists = _annotated(_part_sentences(part), processes, limit)
        written[part] = _write_part(out, part, chunk_lists, seed)
    docs_out = out_dir / f"{DOCS_PART}.jsonl"
    if docs and (force or not docs_out.exists()):
        try:
            sentences = []
            for source in (s for s in SOURCES if s.kind == "debian"):
                build_source(source, corpus_dir)
                sentences += _part_sentences(source.name)
        except (OSError, subprocess.CalledProcessError) as exc:
            # no apt here, or no network: the other dev sets stand without this one
            print(f"note: {DOCS_PART} skipped (the Debian help could not be fetched: {exc})")
            return written
        _write_part(docs_out, DOCS_PART, _annotated(sentences, processes, limit), seed)
    if docs:
        written[DOCS_PART] = docs_out
    return written


def _part_sentences(part: str) -> list[str]:
    return (stage_dir("corpus") / f"{part}.txt").read_text(encoding="utf-8").splitlines()


def _annotated(sentences: list[str], processes: int, limit: int) -> list[list]:
    """Each of at most `limit` sentences (spread over them) as readable chunks."""
    with Pool(processes) as pool:
        lines = pool.map(_annotate_line, spread(sentences, limit), chunksize=64)
    return [json.loads(line)["chunks"] for line in lines]


def _write_part(out: Path, part: str, chunk_lists: list[list], seed: int) -> Path:
    rng = random.Random(f"{seed}:{part}")
    pairs = [p for p in (evaluation_pair(chunks, rng, part) for chunks in chunk_lists) if p is not None]
    _write(out, pairs)
    print(f"{part}: {len(pairs):,} dev pairs from {len(chunk_lists):,} sentences")
    return out
