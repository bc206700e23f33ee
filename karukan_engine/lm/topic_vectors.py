"""Topic vectors: how strongly two content words keep company, from a low-rank PMI matrix.

Each content word of the word n-gram's vocabulary (a surface with a kanji or katakana) has a
vector e(w); with the eigenvalues' signs D, e(a) · D · e(b) approximates the positive PMI of a
and b appearing within a few content words of each other in the corpus (training/topics.py).
A word's association with a set of context words is measured against the corpus's average
context (`mean`), so an unrelated context says about nothing and a related one pays a bonus:
航海 after 船 gains, 公開 does not.

The file is an uncompressed .npz (memory-mapped like the word n-gram's) bound to one word
n-gram vocabulary by its digest: ids mean nothing under another vocabulary.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

import numpy as np

from karukan_engine.kana import has_kanji_or_katakana
from karukan_engine.lm.word_ngram import _mapped_npz, _write_aligned_npz

FORMAT = 1
BUNDLED = Path(__file__).resolve().parent.parent / "data" / "model" / "topic-vectors.npz"
NO_ROW = 0xFFFF


class TopicVectorsError(Exception):
    """The file is missing, damaged, of another format or of another vocabulary."""


def is_content(surface: str) -> bool:
    """A word that says what a text is about: one with a kanji or a katakana letter."""
    return has_kanji_or_katakana(surface)


class TopicVectors:
    def __init__(self, arrays: dict[str, np.ndarray]) -> None:
        self.digest = bytes(arrays["digest"]).decode("ascii")
        self.rows = np.asarray(arrays["rows"])
        codes = np.asarray(arrays["codes"]).astype(np.float32)
        # decoded once: a few MB resident, and every lookup is a plain gather
        self.vectors = codes * np.asarray(arrays["row_scale"], dtype=np.float32)[:, None]
        self.signs = np.asarray(arrays["signs"]).astype(np.float32)
        self.mean = np.asarray(arrays["mean"], dtype=np.float32)
        if self.vectors.shape[1] != self.signs.size or self.mean.size != self.signs.size:
            raise ValueError("inconsistent dimensions")
        if not (np.isfinite(self.vectors).all() and np.isfinite(self.mean).all()):
            raise ValueError("values that are not numbers")

    @staticmethod
    def save(path: Path, embedding: np.ndarray, signs: np.ndarray, mean: np.ndarray, kept: np.ndarray,
             digest: str) -> None:
        """embedding: one row per word id (kept[id]: has a vector); 8 bits a value, a scale a row."""
        ids = np.flatnonzero(kept)
        if ids.size >= NO_ROW:
            raise ValueError("too many words for 16-bit rows")
        rows = np.full(kept.size, NO_ROW, dtype=np.uint16)
        rows[ids] = np.arange(ids.size)
        kept_vectors = np.asarray(embedding, dtype=np.float64)[ids]
        # the scale as it is stored (16 bits), so the codes are rounded against what decodes them
        scale = np.maximum(np.abs(kept_vectors).max(axis=1) / 127, 1e-6).astype(np.float16).astype(np.float64)
        codes = np.clip(np.rint(kept_vectors / scale[:, None]), -127, 127).astype(np.int8)
        arrays = {"format": np.array(FORMAT), "digest": np.frombuffer(digest.encode("ascii"), dtype=np.uint8),
                  "rows": rows, "codes": codes, "row_scale": scale.astype(np.float16),
                  "signs": np.sign(signs).astype(np.int8), "mean": np.asarray(mean, dtype=np.float32)}
        path = Path(path)
        partial = path.with_name(path.name + ".partial")
        _write_aligned_npz(partial, arrays)
        partial.replace(path)

    @classmethod
    def load(cls, path: Path = BUNDLED, digest: str | None = None) -> "TopicVectors":
        """digest: the word n-gram's vocabulary digest the file must have been built for."""
        try:
            arrays = _mapped_npz(Path(path))
            if int(arrays["format"]) != FORMAT:
                raise TopicVectorsError(f"{Path(path).name}: topic vectors format {int(arrays['format'])}, expected {FORMAT}")
            vectors = cls(arrays)
        except (OSError, KeyError, ValueError, UnicodeDecodeError, zipfile.BadZipFile) as exc:
            raise TopicVectorsError(f"{Path(path).name}: not readable topic vectors ({type(exc).__name__})") from exc
        if digest is not None and vectors.digest != digest:
            raise TopicVectorsError(f"{Path(path).name}: built for another word n-gram vocabulary")
        return vectors

    def rows_of(self, word_ids) -> np.ndarray:
        """Rows of the words that have a vector (others dropped), in order."""
        rows, has = self._rows(np.asarray(word_ids, dtype=np.int64))
        return rows[has]

    def _rows(self, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        inside = (ids >= 0) & (ids < self.rows.size)
        rows = np.where(inside, self.rows[np.where(inside, ids, 0)], NO_ROW).astype(np.int64)
        return rows, rows != NO_ROW

    def associations(self, texts: list[list[int]], context_rows: np.ndarray) -> np.ndarray:
        """For each text (its words' ids), summed over its content words: each word's mean PMI
        with its company (the context's words and the text's other words) less its PMI with
        the corpus's average context, times the square root of the company's size, in nats.
        A mean alone would let a long context drown the word that settles it, a sum would let
        it count its words' shared topic over and over (tools/topic_fit.py tried the three).
        A word with no company adds 0. All texts in one pass (the judged paths of a key)."""
        out = np.zeros(len(texts))
        lengths = np.array([len(t) for t in texts], dtype=np.int64)
        if not lengths.sum():
            return out
        rows, has = self._rows(np.concatenate([np.asarray(t, dtype=np.int64) for t in texts]))
        owner = np.repeat(np.arange(len(texts)), lengths)[has]
        rows = rows[has]
        if not rows.size:
            return out
        own = self.vectors[rows].astype(np.float64)
        sums = np.zeros((len(texts), own.shape[1]))
        np.add.at(sums, owner, own)
        sizes = np.bincount(owner, minlength=len(texts))
        context_rows = np.asarray(context_rows, dtype=np.int64)
        context_sum = self.vectors[context_rows].sum(axis=0, dtype=np.float64)
        company_size = context_rows.size + sizes[owner] - 1
        alone = company_size < 1
        company = context_sum + sums[owner] - own
        centred = company / np.maximum(company_size, 1)[:, None] - self.mean
        per_word = np.einsum("ij,ij->i", own * self.signs, centred) * np.sqrt(np.maximum(company_size, 1))
        per_word[alone] = 0.0
        return np.bincount(owner, weights=per_word, minlength=len(texts))
