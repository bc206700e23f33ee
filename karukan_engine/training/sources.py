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
    # A file with no blank lines between its documents (a paragraph or an utterance a line) is
    # held out by runs of this many consecutive lines instead (0: blank lines only).
    group_lines: int = 0
    # The word-level and character language models (training/lm_text.py) keep every k-th
    # paragraph of the training part: laws and older literature are weighed down against the
    # modern registers by reading less of them.
    lm_every: int = 1
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
           file="aozora.txt.xz", weight=0.5, every=40, lm_every=8),
    # Added with the corpus of 2026-12: each holds out a share of its documents as a dev set
    # of its register (pairs/heldout/<name>_heldout.jsonl, training/devsets.py).
    Source("jaquad", "lines", "CC BY-SA 3.0, adaptable under CC BY-SA 4.0 (Japanese Wikipedia via "
           "JaQuAD, SkelterLabsInc/JaQuAD)", file="jaquad.txt.xz", weight=1.5, heldout_percent=4,
           group_lines=8),
    Source("whitepaper", "lines", "CC BY 4.0 (情報通信白書, Ministry of Internal Affairs and "
           "Communications, yashikota/ict-white-paper)", file="whitepaper.txt.xz", heldout_percent=3,
           group_lines=10),
    Source("wikinews", "lines", "CC BY 2.5 (Japanese Wikinews contributors, "
           "tm4roon/jawikinews-headline-dataset)", file="wikinews.txt.xz", weight=1.5,
           heldout_percent=5),
    Source("asdc", "lines", "CC BY 4.0 (megagonlabs/asdc)", file="asdc.txt.xz", heldout_percent=4,
           group_lines=20),
    Source("mpchat", "lines", "CC BY-SA 4.0 (nu-dialogue/multi-relational-multi-party-chat-corpus)",
           file="mpchat.txt.xz", heldout_percent=5),
    Source("laws", "lines", "public domain (Japanese laws, Copyright Act art. 13; e-Gov text via "
           "ledmonster/japanese-law)", file="laws.txt.xz", weight=0.2, lm_every=4, every=20,
           heldout_percent=2, group_lines=50),
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
