"""Nouns of the corpus that Mozc's open-source dictionary lacks, as lattice words.

The file (`data/dictionary/corpus_nouns.tsv.gz`, written by `python -m karukan_engine.training
nouns`) lists reading, surface, Mozc user POS and word cost, one noun a line. They join every
lattice as system words do: the same connections (their POS's ids), a cost fitted to how
often they occur, and the word n-gram scores them like any word it knows.
"""

from __future__ import annotations

import gzip
import logging
from pathlib import Path
from typing import Iterator

from karukan_engine.core.types import Source
from karukan_engine.dictionary.system import Entry, SystemDictionary
from karukan_engine.lattice.lattice import ExtraWord

log = logging.getLogger(__name__)

BUNDLED = Path(__file__).resolve().parent.parent / "data" / "dictionary" / "corpus_nouns.tsv.gz"


class CorpusWordSource:
    """The corpus nouns by reading; words_at finds those starting at a position."""

    def __init__(self, words: dict[str, tuple[ExtraWord, ...]]) -> None:
        self.words = words
        self.lengths = tuple(sorted({len(r) for r in words}))

    @classmethod
    def load(cls, dictionary: SystemDictionary, path: Path = BUNDLED) -> "CorpusWordSource":
        """The nouns of the file; none (said in the log) when it is missing or unreadable. A
        line that does not parse, or names a POS the dictionary lacks, is skipped."""
        found: dict[str, list[ExtraWord]] = {}
        try:
            with gzip.open(path, "rt", encoding="utf-8") as handle:
                lines = handle.read().splitlines()
        except (OSError, EOFError, UnicodeDecodeError) as exc:
            log.warning("corpus nouns unavailable (%s); converting without them", type(exc).__name__)
            return cls({})
        pos_ids = dictionary.user_pos
        for line in lines:
            fields = line.split("\t")
            if len(fields) != 4 or not fields[0] or not fields[1] or fields[2] not in pos_ids:
                continue
            try:
                cost = int(fields[3])
            except ValueError:
                continue
            pos = pos_ids[fields[2]]
            found.setdefault(fields[0], []).append(
                ExtraWord(fields[0], fields[1], pos, pos, max(0, min(cost, 32767)), Source.DICTIONARY))
        return cls({reading: tuple(words) for reading, words in found.items()})

    def __len__(self) -> int:
        return sum(map(len, self.words.values()))

    def words_at(self, text: str, start: int, min_end: int = 0) -> Iterator[ExtraWord]:
        rest = len(text) - start
        for length in self.lengths:
            if length > rest:
                return
            if start + length >= min_end:
                yield from self.words.get(text[start:start + length], ())


class LexiconWithWords:
    """The system dictionary as alignment, segment lists and predictions read it (prefixes,
    lookup, predictive, cheapest_cost), with the corpus words beside its entries: a conversion
    the lattice spelt with one (ですね笑) aligns to its words like any other, and ばんごは
    suggests 晩御飯. Everything else is the dictionary's."""

    def __init__(self, dictionary: SystemDictionary, words: CorpusWordSource) -> None:
        self.dictionary = dictionary
        self.words = words

    def __getattr__(self, name: str):
        return getattr(self.dictionary, name)

    def prefixes(self, text: str) -> list[str]:
        found = self.dictionary.prefixes(text)
        extra = [text[:n] for n in self.words.lengths if n <= len(text) and text[:n] in self.words.words]
        return sorted(set(found).union(extra), key=len) if extra else found

    def predictive(self, prefix: str, limit: int = 50) -> list[str]:
        """The dictionary's readings extending `prefix`, then the corpus words' it lacks."""
        found = self.dictionary.predictive(prefix, limit)
        known = set(found)
        return found + sorted(r for r in self.words.words if r.startswith(prefix) and r not in known)

    def cheapest_cost(self, reading: str) -> int | None:
        costs = [w.cost for w in self.words.words.get(reading, ())]
        own = self.dictionary.cheapest_cost(reading)
        return min(costs + ([own] if own is not None else []), default=None)

    def lookup(self, reading: str) -> list[Entry]:
        """All entries of an exact reading, cheapest first (the corpus words among them)."""
        extra = self.words.words.get(reading, ())
        entries = self.dictionary.lookup(reading)
        if not extra:
            return entries
        return sorted([*entries, *(Entry(reading, w.surface, w.lid, w.rid, w.cost) for w in extra)],
                      key=lambda e: e.cost)
