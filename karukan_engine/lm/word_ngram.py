"""The word n-gram's file and its lookups: (surface, reading) words, 8-bit log probabilities.

Words are ids: UNK, BOS, EOS, then the vocabulary most frequent first ("surface\\treading",
reading in hiragana). N-grams are packed int64 keys (16 bits a word, lm/kneser_ney.py), sorted,
found with np.searchsorted; their log probabilities and backoff weights are quantised to 256
even steps between the array's least and greatest value (half a step of error at most).
The file is an uncompressed .npz whose arrays are memory-mapped where they lie in it, so a
process pages in only the n-grams its conversions touch.
"""

from __future__ import annotations

import hashlib
import io
import struct
import zipfile
from functools import cached_property
from pathlib import Path

import numpy as np

from karukan_engine.lm.kneser_ney import BITS, BOS, EOS, MASK, UNK, Estimate

FORMAT = 1
BUNDLED = Path(__file__).resolve().parent.parent / "data" / "model" / "word-3gram.npz"
SPECIALS = ("<unk>", "<s>", "</s>")
_PADDING_ID = 0xA11C   # a zip extra-field id no reader knows: skipped as padding


class WordNgramError(Exception):
    """The file is missing, damaged or of another format."""


def quantise(values: np.ndarray) -> tuple[np.ndarray, float, float]:
    """uint8 codes and (low, step) so that low + code * step is within step / 2 of each value."""
    values = np.asarray(values, dtype=np.float64)
    if values.size == 0:
        return np.zeros(0, np.uint8), 0.0, 1.0
    low, high = float(values.min()), float(values.max())
    step = (high - low) / 255 if high > low else 1.0
    return np.clip(np.rint((values - low) / step), 0, 255).astype(np.uint8), low, step


class WordNgram:
    def __init__(self, arrays: dict[str, np.ndarray]) -> None:
        self.order = int(arrays["order"])
        vocabulary = bytes(arrays["vocabulary"])
        self.words = vocabulary.decode("utf-8").split("\n")
        # files bound to these ids (lm/topic_vectors.py) carry it
        self.vocabulary_digest = hashlib.sha256(vocabulary).hexdigest()[:16]
        self.unigram_logp = np.asarray(arrays["unigram_logp"], dtype=np.float32)
        self.unigram_backoff = np.asarray(arrays["unigram_backoff"], dtype=np.float32)
        # plain ndarray views of the maps (np.memmap's own indexing costs more than the search)
        self.keys = [np.asarray(arrays[f"keys{n}"]) for n in range(2, self.order + 1)]
        self._codes = [np.asarray(arrays[f"logp{n}"]) for n in range(2, self.order + 1)]
        self._backoff_codes = [np.asarray(arrays[f"backoff{n}"]) for n in range(2, self.order)]
        scale = np.asarray(arrays["scale"], dtype=np.float64)   # (low, step) per quantised array
        self._logp_scale = [tuple(scale[2 * (n - 2)]) for n in range(2, self.order + 1)]
        self._backoff_scale = [tuple(scale[2 * (n - 2) + 1]) for n in range(2, self.order)]

    # -- building --------------------------------------------------------------------------------
    @staticmethod
    def save(path: Path, estimate: Estimate, words: list[str]) -> None:
        """Write an estimate whose ids 3.. are `words` ("surface\\treading" each)."""
        order = len(estimate.keys) + 1
        arrays = {"format": np.array(FORMAT), "order": np.array(order),
                  "vocabulary": np.frombuffer("\n".join([*SPECIALS, *words]).encode("utf-8"), dtype=np.uint8),
                  "unigram_logp": estimate.unigram_logp.astype(np.float32),
                  "unigram_backoff": estimate.unigram_backoff.astype(np.float32)}
        scale = np.zeros((2 * (order - 1), 2))
        for n in range(2, order + 1):
            # two words fit 32 bits: the bigram keys take half the room
            arrays[f"keys{n}"] = estimate.keys[n - 2].astype(np.uint32 if n == 2 else np.int64)
            arrays[f"logp{n}"], *scale[2 * (n - 2)] = quantise(estimate.logp[n - 2])
            if n < order:
                arrays[f"backoff{n}"], *scale[2 * (n - 2) + 1] = quantise(estimate.backoff[n - 2])
        arrays["scale"] = scale
        path = Path(path)
        partial = path.with_name(path.name + ".partial")
        _write_aligned_npz(partial, arrays)
        partial.replace(path)

    @classmethod
    def load(cls, path: Path = BUNDLED) -> "WordNgram":
        try:
            arrays = _mapped_npz(Path(path))
            if int(arrays["format"]) != FORMAT:
                raise WordNgramError(f"{Path(path).name}: word n-gram format {int(arrays['format'])}, expected {FORMAT}")
            return cls(arrays)
        except (OSError, KeyError, ValueError, zipfile.BadZipFile) as exc:
            raise WordNgramError(f"{Path(path).name}: not a readable word n-gram ({type(exc).__name__})") from exc

    # -- words -----------------------------------------------------------------------------------
    @cached_property
    def _ids(self) -> dict[str, int]:
        return {word: i for i, word in enumerate(self.words) if i > EOS}

    @cached_property
    def _by_surface(self) -> dict[str, int]:
        """Each surface's most frequent word (ids are in frequency order)."""
        found: dict[str, int] = {}
        for i, word in enumerate(self.words[EOS + 1:], EOS + 1):
            found.setdefault(word.split("\t", 1)[0], i)
        return found

    def ids_by_key(self) -> dict[str, int]:
        """{"surface\treading": id} of every word but the specials."""
        return self._ids

    def word_id(self, surface: str, reading: str) -> int:
        """The id of (surface, hiragana reading), UNK when the vocabulary lacks it."""
        return self._ids.get(f"{surface}\t{reading}", UNK)

    def surface_id(self, surface: str) -> int:
        return self._by_surface.get(surface, UNK)

    def __len__(self) -> int:
        return len(self.words)

    # -- probabilities ---------------------------------------------------------------------------
    def logp_packed(self, keys: np.ndarray, n: int) -> np.ndarray:
        """Natural log P of each packed n-gram's last word after the others (backing off)."""
        keys = np.asarray(keys, dtype=np.int64)
        if n == 1:
            return self.unigram_logp[keys].astype(np.float64)
        table = self.keys[n - 2]
        out = np.empty(keys.size)
        hit = np.zeros(keys.size, dtype=bool)
        if table.size:
            at, hit = _find(table, keys)
            low, step = self._logp_scale[n - 2]
            out[hit] = low + step * self._codes[n - 2][at[hit]]
        miss = ~hit
        if miss.any():
            lower = keys[miss] & ((1 << (BITS * (n - 1))) - 1)
            out[miss] = self.backoff_packed(keys[miss] >> BITS, n - 1) + self.logp_packed(lower, n - 1)
        return out

    def backoff_packed(self, contexts: np.ndarray, n: int) -> np.ndarray:
        """Log backoff weight of each packed n-gram as a context (0 when not kept)."""
        if n == 1:
            return self.unigram_backoff[contexts].astype(np.float64)
        table = self.keys[n - 2]
        if table.size == 0 or n >= self.order:
            return np.zeros(contexts.size)
        at, hit = _find(table, np.asarray(contexts, dtype=np.int64))
        low, step = self._backoff_scale[n - 2]
        return np.where(hit, low + step * self._backoff_codes[n - 2][at], 0.0)

    def bigram_hits(self, prev: np.ndarray, cur: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """For word pairs: which bigrams the model keeps, and their log P (where kept)."""
        keys = (np.asarray(prev, dtype=np.int64) << BITS) | np.asarray(cur, dtype=np.int64)
        table = self.keys[0]
        if table.size == 0 or keys.size == 0:
            return np.zeros(keys.size, dtype=bool), np.zeros(keys.size)
        at, hit = _find(table, keys)
        low, step = self._logp_scale[0]
        return hit, low + step * self._codes[0][at].astype(np.float64)

    def sentence_logp(self, ids: list[int], history: tuple[int, ...] = (BOS,)) -> float:
        """log P of the words after `history` (the model's full order; no EOS added)."""
        context = list(history)
        total = 0.0
        keys, orders = [], []
        for word in ids:
            gram = (context + [word])[-self.order:]
            key = 0
            for w in gram:
                key = (key << BITS) | (w & MASK)
            keys.append(key)
            orders.append(len(gram))
            context.append(word)
        for n in set(orders):
            picked = [k for k, o in zip(keys, orders) if o == n]
            total += float(self.logp_packed(np.array(picked, dtype=np.int64), n).sum())
        return total


def _find(table: np.ndarray, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Where each key is (or would be) in a sorted table, and whether it is there; the keys are
    cast to the table's type first (mixed types would copy the whole table)."""
    same = keys.astype(table.dtype) if table.dtype != keys.dtype else keys
    at = np.minimum(np.searchsorted(table, same), table.size - 1)
    return at, (table[at] == same) & (keys >= 0) & (keys <= np.iinfo(table.dtype).max)


def _write_aligned_npz(path: Path, arrays: dict[str, np.ndarray]) -> None:
    """An .npz np.load reads, its members stored (not deflated) and each array's data 64-byte
    aligned in the file (padding in the zip's extra field): a memory map of unaligned data would
    make numpy copy the whole table on every search."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as archive:
        for name, array in arrays.items():
            buffer = io.BytesIO()
            np.lib.format.write_array(buffer, np.asarray(array), allow_pickle=False)
            info = zipfile.ZipInfo(name + ".npy", date_time=(2026, 1, 1, 0, 0, 0))
            header_end = archive.fp.tell() + 30 + len(info.filename.encode()) + 4
            # the .npy header is a multiple of 64 bytes: aligning its start aligns the data
            info.extra = struct.pack("<HH", _PADDING_ID, (-header_end) % 64) + bytes((-header_end) % 64)
            archive.writestr(info, buffer.getvalue())


def _mapped_npz(path: Path) -> dict[str, np.ndarray]:
    """The arrays of an uncompressed .npz, each memory-mapped at its place in the file."""
    arrays = {}
    with zipfile.ZipFile(path) as archive, open(path, "rb") as raw:
        for info in archive.infolist():
            if info.compress_type != zipfile.ZIP_STORED:
                raise ValueError("compressed member")
            raw.seek(info.header_offset)
            header = raw.read(30)
            start = info.header_offset + 30 + int.from_bytes(header[26:28], "little") + int.from_bytes(header[28:30], "little")
            raw.seek(start)
            version = np.lib.format.read_magic(raw)
            read_header = (np.lib.format.read_array_header_1_0 if version == (1, 0)
                           else np.lib.format.read_array_header_2_0)
            shape, fortran, dtype = read_header(raw)
            name = info.filename[:-4] if info.filename.endswith(".npy") else info.filename
            if int(np.prod(shape)) == 0:
                arrays[name] = np.zeros(shape, dtype=dtype)
            elif not shape:
                arrays[name] = np.frombuffer(raw.read(dtype.itemsize), dtype=dtype).reshape(())
            else:
                arrays[name] = np.memmap(path, dtype=dtype, mode="r", offset=raw.tell(), shape=shape,
                                         order="F" if fortran else "C")
    return arrays


__all__ = ["BOS", "BUNDLED", "EOS", "UNK", "WordNgram", "WordNgramError", "quantise"]
