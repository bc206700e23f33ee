"""The language models' training text: every corpus source's training part, read in place.

The character n-gram (`ngram` stage) counts it. Each "lines" source gives its training part
(its held-out documents never: they are the dev sets of training/devsets.py), every
`lm_every`-th paragraph of it; the annotated Wikipedia training split gives its sentences (the
concatenated surfaces). Nothing is written to the work directory: the corpus is read as it is.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

from karukan_engine.training.corpus import corpus_sentences
from karukan_engine.training.readings import annotated_sentences
from karukan_engine.training.sources import SOURCES, Source


def lm_sources() -> list[Source]:
    """The sources that train: every corpus source but the held-out ones and the Debian docs."""
    return [s for s in SOURCES if s.split == "train" and s.kind in ("lines", "annotated")]


def source_text(source: Source, corpus_dir: Path) -> list[str]:
    """One source's training sentences as the language models read them."""
    if source.kind == "annotated":
        return ["".join(word[0] for word in words) for words in annotated_sentences(corpus_dir / source.file)]
    return corpus_sentences(source, corpus_dir, every=source.lm_every)[source.name]


def lm_text(corpus_dir: Path | None) -> Iterator[tuple[str, list[str]]]:
    """(source name, its sentences) for every training source found in corpus_dir."""
    if corpus_dir is None:
        raise FileNotFoundError("no corpus directory: pass --corpus DIR (see docs/training.md)")
    for source in lm_sources():
        if (corpus_dir / source.file).is_file():
            yield source.name, source_text(source, corpus_dir)
        else:
            print(f"note: {source.file} not in the corpus directory; {source.name} skipped")
