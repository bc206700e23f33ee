"""The compiled system dictionary (Mozc OSS data, built by tools/build_dictionary.py).

Readings live in a marisa trie (memory-mapped: fast common-prefix and predictive search); each
reading's key id selects a slice of the entry arrays (lid, rid, cost, surface), cheapest first.
The connection matrix and segmenter bits are numpy arrays loaded once.
"""

from __future__ import annotations

import hashlib
import json
import zipfile
import zlib
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Iterator

import marisa_trie
import numpy as np

from karukan_engine.kana import to_katakana

DEFAULT_DIR = Path(__file__).resolve().parent.parent / "data" / "dictionary"
_FILES = ("readings.marisa", "surfaces.marisa", "system.npz", "symbols.tsv", "meta.json")

SURFACE_IS_READING = -1
SURFACE_IS_KATAKANA = -2


@dataclass(frozen=True)
class Entry:
    reading: str
    surface: str
    lid: int
    rid: int
    cost: int


# No compiled dictionary file comes near this; a larger one (a sparse or runaway file) is
# refused before it is read.
MAX_FILE_BYTES = 1 << 30


def file_sha256(path: Path) -> str:
    """The file's sha256, read in pieces (constant memory)."""
    digest = hashlib.sha256()
    with open(path, "rb") as stream:
        while chunk := stream.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


class DictionaryFormatError(ValueError):
    """The compiled dictionary's files are present but unreadable or inconsistent."""


FORMAT_VERSION = 2   # 2: meta.json carries the sha256 of every data file
HASHED_FILES = ("readings.marisa", "surfaces.marisa", "system.npz", "symbols.tsv")


class SystemDictionary:
    def __init__(self, directory: Path = DEFAULT_DIR) -> None:
        missing = [name for name in _FILES if not (directory / name).is_file()]
        if missing:
            raise FileNotFoundError(f"compiled dictionary incomplete in {directory.name}/: "
                                    f"missing {', '.join(missing)} (run tools/build_dictionary.py)")
        self.directory = directory
        try:
            self._load(directory)
            self._check()
        except DictionaryFormatError:
            raise
        except (OSError, EOFError, ValueError, RuntimeError, KeyError, TypeError, zipfile.BadZipFile,
                zlib.error, ArithmeticError, MemoryError) as exc:
            # marisa reports a damaged trie as RuntimeError; a damaged .npz surfaces as
            # BadZipFile, zlib.error or EOFError depending on where the damage lies.
            raise DictionaryFormatError(f"compiled dictionary in {directory.name}/ is unreadable "
                                        f"({type(exc).__name__}); rebuild it with tools/build_dictionary.py") from exc

    def _load(self, directory: Path) -> None:
        oversized = [name for name in _FILES if (directory / name).stat().st_size > MAX_FILE_BYTES]
        if oversized:
            raise DictionaryFormatError(f"compiled dictionary in {directory.name}/ is damaged ({oversized[0]} is "
                                        "impossibly large); rebuild it with tools/build_dictionary.py")
        self.meta = json.loads((directory / "meta.json").read_text(encoding="utf-8"))
        if not isinstance(self.meta, dict) or self.meta.get("format") != FORMAT_VERSION:
            raise DictionaryFormatError(f"compiled dictionary in {directory.name}/ has an unknown format "
                                        f"(expected {FORMAT_VERSION}); rebuild it with tools/build_dictionary.py")
        hashes = self.meta.get("sha256")
        if not isinstance(hashes, dict) or any(file_sha256(directory / name) != hashes.get(name)
                                               for name in HASHED_FILES):
            raise DictionaryFormatError(f"compiled dictionary in {directory.name}/ is damaged (checksum "
                                        "mismatch); rebuild it with tools/build_dictionary.py")
        self._readings = marisa_trie.Trie()
        self._readings.mmap(str(directory / "readings.marisa"))
        self._surfaces = marisa_trie.Trie()
        self._surfaces.mmap(str(directory / "surfaces.marisa"))
        with np.load(directory / "system.npz") as arrays:
            self.offsets = arrays["offsets"]
            self.lid = arrays["lid"]
            self.rid = arrays["rid"]
            self.cost = arrays["cost"]
            self.surface_ids = arrays["surface"]
            self.matrix = arrays["matrix"]
            self._segmenter_bits = arrays["segmenter"]
            self.prefix_penalty = arrays["prefix_penalty"]
            self.suffix_penalty = arrays["suffix_penalty"]
        self.pos_size = int(self.matrix.shape[0])

    def _check(self) -> None:
        """Cheap consistency checks, so a damaged file fails here and not in the middle of a
        conversion (an index out of range, a wrong surface)."""
        entries, readings = int(self.meta["entries"]), int(self.meta["readings"])
        problems = []
        if len(self._readings) != readings or len(self._surfaces) != int(self.meta["stored_surfaces"]):
            problems.append("trie sizes differ from meta.json")
        if self.offsets.shape != (readings + 1,) or (readings and (
                int(self.offsets[0]) != 0 or int(self.offsets[-1]) != entries or np.any(np.diff(self.offsets) < 0))):
            problems.append("entry offsets")
        if any(a.shape != (entries,) for a in (self.lid, self.rid, self.cost, self.surface_ids)):
            problems.append("entry array lengths")
        if self.matrix.ndim != 2 or self.matrix.shape != (self.pos_size, self.pos_size):
            problems.append("connection matrix shape")
        elif entries and (min(int(self.lid.min()), int(self.rid.min())) < 0
                          or max(int(self.lid.max()), int(self.rid.max())) >= self.pos_size):
            problems.append("POS ids out of range")
        if entries and (int(self.surface_ids.min()) < SURFACE_IS_KATAKANA
                        or int(self.surface_ids.max()) >= len(self._surfaces)):
            problems.append("surface ids out of range")
        if problems:
            raise DictionaryFormatError(f"compiled dictionary in {self.directory.name}/ is inconsistent "
                                        f"({', '.join(problems)}); rebuild it with tools/build_dictionary.py")

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

    def iter_entries(self) -> Iterator[Entry]:
        """Every entry (for tests and tools; slow)."""
        for reading in self._readings.iterkeys():
            yield from self.lookup(reading)
