"""Where the training text comes from: the general-domain corpus, and the held-out Debian docs.

The corpus files are read in place from a corpus directory (`--corpus DIR`, default
`../shared/corpus` beside the repository when it exists); their text is never copied into the
repository. Each source has a licence that combines with CC BY-SA 4.0, so the weights can be
released under it (docs/model-card.md). `weight` scales how many spans are cut per sentence:
chat and Wikipedia are closest to what users type, Aozora is older prose and is weighted down.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from karukan_engine.training.paths import REPO_ROOT


@dataclass(frozen=True)
class Source:
    name: str
    # "lines": one sentence or utterance a line (blank lines separate dialogues or works);
    # "annotated": the Kyoto Wikipedia Annotated Corpus JSONL with gold readings;
    # "debian": Japanese documentation fetched from Debian packages (held out only).
    kind: str
    licence: str
    file: str = ""
    # "train" feeds training (a hashed 2 % of its sentences becomes dev); "heldout" never trains.
    split: str = "train"
    weight: float = 1.0
    # Keep every k-th paragraph (a large source sampled evenly); 1 keeps all.
    every: int = 1
    # Blank-line-separated groups (dialogues) whose hash falls in this share are held out.
    heldout_percent: int = 0
    packages: tuple[str, ...] = ()
    globs: tuple[str, ...] = ()


SOURCES: tuple[Source, ...] = (
    Source("chat", "lines", "CC BY-SA 4.0 (RealPersonaChat, nu-dialogue/real-persona-chat)",
           file="chat.txt.xz", weight=1.0, every=2, heldout_percent=3),
    Source("tatoeba", "lines", "CC BY-SA 4.0 (graded-enja: Tanaka corpus CC BY, Kyoto basic "
           "sentences CC BY 3.0)", file="tatoeba.txt.xz", weight=1.0),
    Source("wikipedia", "lines", "CC BY-SA 4.0 (Japanese Wikipedia via JGLUE JSQuAD)",
           file="wikipedia.txt.xz", weight=1.5),
    Source("wac_train", "annotated", "CC BY-SA 4.0 (Kyoto University Wikipedia Annotated Corpus)",
           file="wac_train.jsonl.xz", weight=1.5),
    Source("wac_dev", "annotated", "CC BY-SA 4.0 (Kyoto University Wikipedia Annotated Corpus)",
           file="wac_dev.jsonl.xz", split="heldout"),
    Source("wac_test", "annotated", "CC BY-SA 4.0 (Kyoto University Wikipedia Annotated Corpus)",
           file="wac_test.jsonl.xz", split="heldout"),
    Source("aozora", "lines", "public domain (Aozora Bunko, aozorahack/aozorabunko_text)",
           file="aozora.txt.xz", weight=0.5, every=40),
    # Held out for evaluation: never used for training, tuning or vocabulary choice.
    Source("gimp-help-ja", "debian", "GFDL-1.2+ (no invariant sections)", split="heldout",
           packages=("gimp-help-ja",), globs=("usr/share/gimp/2.0/help/ja/**/*.html",)),
    Source("gnome-user-docs-ja", "debian", "CC-BY-SA-3.0", split="heldout",
           packages=("gnome-user-docs",), globs=("usr/share/help/ja/**/*.page",)),
)


def default_corpus_dir() -> Path | None:
    """$KARUKAN_CORPUS, else ../shared/corpus beside the repository when it exists."""
    named = os.environ.get("KARUKAN_CORPUS")
    if named:
        return Path(named)
    beside = REPO_ROOT.parent / "shared" / "corpus"
    return beside if beside.is_dir() else None


def heldout_part(name: str) -> str:
    return f"{name}_heldout"


def corpus_parts() -> list[tuple[Source, str, str]]:
    """(source, part name, split) for every part the corpus stage writes or the readings read."""
    parts = []
    for source in SOURCES:
        parts.append((source, source.name, source.split))
        if source.heldout_percent:
            parts.append((source, heldout_part(source.name), "heldout"))
    return parts
