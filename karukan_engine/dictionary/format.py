"""The compiled system dictionary's files: the one definition of the format, both directions.

tools/build_dictionary.py turns Mozc's source data into a CompiledDictionary and calls write();
SystemDictionary reads it back with read(). A directory holds:

  readings.marisa   reading trie; a reading's key id selects a run of entries
  surfaces.marisa   trie of surfaces that are neither the reading nor its katakana
  system.npz        entry arrays (offsets, lid, rid, cost, surface), connection matrix,
                    packed segmenter bits, boundary penalties
  symbols.tsv       reading, symbol, description (symbol candidates)
  meta.json         format version, counts, POS ids, user POS names, provenance, and the sha256
                    of the other four (marisa reads a damaged trie without complaint and may crash)
"""

from __future__ import annotations

import hashlib
import json
import zipfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import marisa_trie
import numpy as np

from karukan_engine.kana import to_katakana

FORMAT_VERSION = 2   # 2: meta.json carries the sha256 of every data file
HASHED_FILES = ("readings.marisa", "surfaces.marisa", "system.npz", "symbols.tsv")
FILES = (*HASHED_FILES, "meta.json")

# An entry's surface id when its surface is not stored: the reading itself, or its katakana.
SURFACE_IS_READING = -1
SURFACE_IS_KATAKANA = -2

# No compiled dictionary file comes near this; a larger one (a sparse or runaway file) is
# refused before it is read.
MAX_FILE_BYTES = 1 << 30


class DictionaryFormatError(ValueError):
    """The compiled dictionary's files are present but unreadable or inconsistent."""


def file_sha256(path: Path) -> str:
    """The file's sha256, read in pieces (constant memory)."""
    digest = hashlib.sha256()
    with open(path, "rb") as stream:
        while chunk := stream.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


@dataclass
class CompiledDictionary:
    """Everything write() stores: one row per entry, the POS tables, and meta fields."""

    readings: Sequence[str]
    surfaces: Sequence[str]
    lids: np.ndarray
    rids: np.ndarray
    costs: np.ndarray
    matrix: np.ndarray              # connection cost [rid, lid]
    segmenter: np.ndarray           # bool [rid, lid]: a bunsetsu boundary lies between them
    prefix_penalty: np.ndarray
    suffix_penalty: np.ndarray
    symbols: Sequence[tuple[str, str, str]] = ()
    meta: dict[str, Any] = field(default_factory=dict)   # POS ids, user POS, provenance, ...


def write(output: Path, compiled: CompiledDictionary) -> dict[str, Any]:
    """Write the dictionary's files into output; returns what meta.json holds."""
    readings, surfaces = list(compiled.readings), list(compiled.surfaces)
    reading_trie = marisa_trie.Trie(readings)
    reading_ids = np.array([reading_trie.key_id(r) for r in readings], dtype=np.int64)
    stored: list[str] = []
    surface_codes = np.empty(len(readings), dtype=np.int64)
    for i, (reading, surface) in enumerate(zip(readings, surfaces)):
        if surface == reading:
            surface_codes[i] = SURFACE_IS_READING
        elif surface == to_katakana(reading):
            surface_codes[i] = SURFACE_IS_KATAKANA
        else:
            surface_codes[i] = len(stored)
            stored.append(surface)
    surface_trie = marisa_trie.Trie(stored)
    surface_ids = np.array([c if c < 0 else surface_trie.key_id(stored[c]) for c in surface_codes],
                           dtype=np.int32)

    # one run of entries per reading, cheapest first, so a reading's words are a slice
    order = np.lexsort((compiled.costs, reading_ids))
    counts = np.bincount(reading_ids, minlength=len(reading_trie))
    offsets = np.zeros(len(reading_trie) + 1, dtype=np.int32)
    np.cumsum(counts, out=offsets[1:])

    output.mkdir(parents=True, exist_ok=True)
    reading_trie.save(str(output / "readings.marisa"))
    surface_trie.save(str(output / "surfaces.marisa"))
    np.savez_compressed(
        output / "system.npz",
        offsets=offsets,
        lid=compiled.lids[order], rid=compiled.rids[order], cost=compiled.costs[order], surface=surface_ids[order],
        matrix=compiled.matrix,
        segmenter=np.packbits(compiled.segmenter, axis=1),
        prefix_penalty=compiled.prefix_penalty, suffix_penalty=compiled.suffix_penalty,
    )
    (output / "symbols.tsv").write_text(
        "".join(f"{r}\t{s}\t{d}\n" for r, s, d in compiled.symbols), encoding="utf-8")
    meta = {
        "format": FORMAT_VERSION,
        "entries": len(readings),
        "readings": len(reading_trie),
        "stored_surfaces": len(surface_trie),
        "pos_ids": int(compiled.matrix.shape[0]),
        **compiled.meta,
        "sha256": {name: file_sha256(output / name) for name in HASHED_FILES},
    }
    (output / "meta.json").write_text(json.dumps(meta, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    return meta


@dataclass
class CompiledFiles:
    """What read() found: the meta, both tries (memory-mapped) and the arrays."""

    meta: dict[str, Any]
    readings: marisa_trie.Trie
    surfaces: marisa_trie.Trie
    offsets: np.ndarray
    lid: np.ndarray
    rid: np.ndarray
    cost: np.ndarray
    surface_ids: np.ndarray
    matrix: np.ndarray
    segmenter_bits: np.ndarray      # packed; np.unpackbits(axis=1, count=pos_size) restores it
    prefix_penalty: np.ndarray
    suffix_penalty: np.ndarray


def read(directory: Path) -> CompiledFiles:
    """Read and check a compiled dictionary. FileNotFoundError when a file is missing,
    DictionaryFormatError (one line, naming the fix) when one is damaged or inconsistent."""
    missing = [name for name in FILES if not (directory / name).is_file()]
    if missing:
        raise FileNotFoundError(f"compiled dictionary incomplete in {directory.name}/: "
                                f"missing {', '.join(missing)} (run tools/build_dictionary.py)")
    try:
        files = _load(directory)
        _check(directory, files)
        return files
    except DictionaryFormatError:
        raise
    except (OSError, EOFError, ValueError, RuntimeError, KeyError, TypeError, zipfile.BadZipFile,
            zlib.error, ArithmeticError, MemoryError) as exc:
        # marisa reports a damaged trie as RuntimeError; a damaged .npz surfaces as
        # BadZipFile, zlib.error or EOFError depending on where the damage lies.
        raise DictionaryFormatError(f"compiled dictionary in {directory.name}/ is unreadable "
                                    f"({type(exc).__name__}); rebuild it with tools/build_dictionary.py") from exc


def _load(directory: Path) -> CompiledFiles:
    oversized = [name for name in FILES if (directory / name).stat().st_size > MAX_FILE_BYTES]
    if oversized:
        raise DictionaryFormatError(f"compiled dictionary in {directory.name}/ is damaged ({oversized[0]} is "
                                    "impossibly large); rebuild it with tools/build_dictionary.py")
    meta = json.loads((directory / "meta.json").read_text(encoding="utf-8"))
    if not isinstance(meta, dict) or meta.get("format") != FORMAT_VERSION:
        raise DictionaryFormatError(f"compiled dictionary in {directory.name}/ has an unknown format "
                                    f"(expected {FORMAT_VERSION}); rebuild it with tools/build_dictionary.py")
    hashes = meta.get("sha256")
    if not isinstance(hashes, dict) or any(file_sha256(directory / name) != hashes.get(name)
                                           for name in HASHED_FILES):
        raise DictionaryFormatError(f"compiled dictionary in {directory.name}/ is damaged (checksum "
                                    "mismatch); rebuild it with tools/build_dictionary.py")
    readings = marisa_trie.Trie()
    readings.mmap(str(directory / "readings.marisa"))
    surfaces = marisa_trie.Trie()
    surfaces.mmap(str(directory / "surfaces.marisa"))
    with np.load(directory / "system.npz") as arrays:
        return CompiledFiles(
            meta=meta, readings=readings, surfaces=surfaces,
            offsets=arrays["offsets"], lid=arrays["lid"], rid=arrays["rid"], cost=arrays["cost"],
            surface_ids=arrays["surface"], matrix=arrays["matrix"], segmenter_bits=arrays["segmenter"],
            prefix_penalty=arrays["prefix_penalty"], suffix_penalty=arrays["suffix_penalty"],
        )


def _check(directory: Path, f: CompiledFiles) -> None:
    """Cheap consistency checks, so a damaged file fails here and not in the middle of a
    conversion (an index out of range, a wrong surface)."""
    entries, readings = int(f.meta["entries"]), int(f.meta["readings"])
    pos_size = int(f.matrix.shape[0]) if f.matrix.ndim else 0
    problems = []
    if len(f.readings) != readings or len(f.surfaces) != int(f.meta["stored_surfaces"]):
        problems.append("trie sizes differ from meta.json")
    if f.offsets.shape != (readings + 1,) or (readings and (
            int(f.offsets[0]) != 0 or int(f.offsets[-1]) != entries or np.any(np.diff(f.offsets) < 0))):
        problems.append("entry offsets")
    if any(a.shape != (entries,) for a in (f.lid, f.rid, f.cost, f.surface_ids)):
        problems.append("entry array lengths")
    if f.matrix.ndim != 2 or f.matrix.shape != (pos_size, pos_size):
        problems.append("connection matrix shape")
    elif entries and (min(int(f.lid.min()), int(f.rid.min())) < 0
                      or max(int(f.lid.max()), int(f.rid.max())) >= pos_size):
        problems.append("POS ids out of range")
    if entries and (int(f.surface_ids.min()) < SURFACE_IS_KATAKANA
                    or int(f.surface_ids.max()) >= len(f.surfaces)):
        problems.append("surface ids out of range")
    if problems:
        raise DictionaryFormatError(f"compiled dictionary in {directory.name}/ is inconsistent "
                                    f"({', '.join(problems)}); rebuild it with tools/build_dictionary.py")
