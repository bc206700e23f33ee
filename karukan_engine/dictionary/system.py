"""The compiled system dictionary (Mozc OSS data, built by tools/build_dictionary.py; its files
are defined, written and read by format.py).

Readings live in a marisa trie (memory-mapped: fast common-prefix and predictive search); each
reading's key id selects a slice of the entry arrays (lid, rid, cost, surface), cheapest first.
The connection matrix and segmenter bits are numpy arrays loaded once.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Iterator

import numpy as np

from karukan_engine.dictionary import format as dictionary_format
from karukan_engine.dictionary.format import SURFACE_IS_KATAKANA, SURFACE_IS_READING
from karukan_engine.kana import to_katakana

DEFAULT_DIR = Path(__file__).resolve().parent.parent / "data" / "dictionary"


@dataclass(frozen=True)
class Entry:
    reading: str
    surface: str
    lid: int
    rid: int
    cost: int


class SystemDictionary:
    def __init__(self, directory: Path = DEFAULT_DIR) -> None:
        """FileNotFoundError or format.DictionaryFormatError when the files are missing or damaged."""
        self.directory = directory
        files = dictionary_format.read(directory)
        self.meta, self._readings, self._surfaces = files.meta, files.readings, files.surfaces
        self.offsets, self.lid, self.rid, self.cost = files.offsets, files.lid, files.rid, files.cost
        self.surface_ids, self.matrix, self._segmenter_bits = files.surface_ids, files.matrix, files.segmenter_bits
        self.prefix_penalty, self.suffix_penalty = files.prefix_penalty, files.suffix_penalty
        self.pos_size = int(self.matrix.shape[0])

    @cached_property
    def segmenter(self) -> np.ndarray:
        """bool[rid, lid]: a bunsetsu boundary lies between these two words."""
        return np.unpackbits(self._segmenter_bits, axis=1, count=self.pos_size).astype(bool)

    @property
    def user_pos(self) -> dict[str, int]:
        return self.meta["user_pos"]

    def connection(self, rid: int, lid: int) -> int:
        return int(self.matrix[rid, lid])

    def surface(self, reading: str, surface_id: int) -> str:
        if surface_id == SURFACE_IS_READING:
            return reading
        if surface_id == SURFACE_IS_KATAKANA:
            return to_katakana(reading)
        return self._surfaces.restore_key(int(surface_id))

    def surface_id_of(self, surface: str) -> int | None:
        """Id of a stored surface (one that is neither its reading nor the katakana of it)."""
        return self._surfaces.get(surface)

    def key_range(self, reading: str) -> tuple[int, int] | None:
        """Entry index range [start, stop) of an exact reading, or None."""
        key = self._readings.get(reading)
        if key is None:
            return None
        return int(self.offsets[key]), int(self.offsets[key + 1])

    def prefixes(self, text: str) -> list[str]:
        """Readings in the dictionary that are prefixes of text (common-prefix search)."""
        return self._readings.prefixes(text)

    def predictive(self, prefix: str, limit: int = 50) -> list[str]:
        """Readings starting with prefix (predictive search), in trie order, at most limit."""
        result = []
        for key in self._readings.iterkeys(prefix):
            result.append(key)
            if len(result) >= limit:
                break
        return result

    def lookup(self, reading: str) -> list[Entry]:
        """All entries of an exact reading, cheapest first."""
        span = self.key_range(reading)
        if span is None:
            return []
        return [Entry(reading, self.surface(reading, int(self.surface_ids[i])), int(self.lid[i]),
                      int(self.rid[i]), int(self.cost[i])) for i in range(*span)]

    def cheapest_cost(self, reading: str) -> int | None:
        """The cost of the cheapest entry of an exact reading (no surface decoded), or None."""
        key = self._readings.get(reading)
        return None if key is None else int(self.cost[int(self.offsets[key])])

    def iter_entries(self) -> Iterator[Entry]:
        """Every entry (for tests and tools; slow)."""
        for reading in self._readings.iterkeys():
            yield from self.lookup(reading)
