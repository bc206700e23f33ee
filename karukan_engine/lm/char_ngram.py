"""A character n-gram language model, counted from text and shipped compact.

The bundled model pairs it with the small neural model: counted exactly over the general-domain
training text, it tells which spelling of a reading is the common one after the left context
(機会 or 機械) better than a 2.6 M-parameter network can (docs/model-card.md), for a few
milliseconds per conversion. conversion/ranking.py weighs its score with the others.

Two smoothings, both scored in backoff form: a text's score is the sum over its characters of
log P(w | h) for the longest history h (up to order - 1 characters) with a stored h w, plus a
backoff weight for every longer history that was dropped (natural log).

- "kneser-ney" (what ships): interpolated modified Kneser-Ney (Chen & Goodman 1998). Orders
  below the top count the distinct characters seen before an n-gram instead of its
  occurrences (n-grams that open a sentence keep their counts: nothing comes before them); each
  order has three discounts from its count-of-counts; P is a normalised probability, and the
  backoff weight of a history is the probability mass its discounts set aside. A history that
  was pruned away (or never seen) weighs 1: the score is the shorter history's.
- "stupid" (the issue's baseline, Brants et al. 2007): S(w | h) = c(h w) / c(h), times alpha
  for every character dropped; at the bottom (c(w) + 1) / (N + V) over every id. Not
  normalised.

Counting is numpy only: characters map to small ints, an n-gram is an int64 code (sum of
id * base^position), each order's codes are counted with np.unique and looked up with
np.searchsorted; the count of a history is the sum of the counts of its continuations.

The file (`save` / `load`) keeps, per order >= 2, the sorted codes of the n-grams counted at
least `min_count` times (delta-coded, compressed) with their log P quantised to 1/16 nat (and,
for Kneser-Ney, their backoff weights as histories, quantised alike), and the dense unigram
logs; n-grams pruned away back off to the shorter history, as unseen ones do. Format 1 files
(stupid backoff, before Kneser-Ney) still load.
"""

from __future__ import annotations

import math
import unicodedata
import zipfile
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np

UNK = 0          # a character outside the vocabulary
BOUNDARY = 1     # sentence start / end
FIRST_CHAR_ID = 2
INT64_MAX = np.iinfo(np.int64).max
ORDER = 5
ALPHA = 0.4                  # stupid backoff's weight per dropped character
KNESER_NEY, STUPID = "kneser-ney", "stupid"
SMOOTHINGS = (KNESER_NEY, STUPID)
FORMAT = 2                   # 1: stupid backoff only, no smoothing field (still read)
MIN_DISCOUNT = 0.1           # a discount never below this: unseen characters keep some mass
LOG_STEP = 1.0 / 16          # nats per quantisation step of a stored log P or backoff weight
LOG_LEVELS = 255             # the steps a uint8 holds: down to -15.9 nats
# The file shipped beside the bundled model (`python -m karukan_engine.training ngram` writes it).
BUNDLED = Path(__file__).resolve().parent.parent / "data" / "model" / "char-5gram.npz"


class CharNgramError(ValueError):
    """The n-gram file is missing, damaged or of another format (the message says which)."""


def normalise(text: str) -> str:
    """NFKC; a newline inside a text is a sentence boundary, other line breaks become it too."""
    return unicodedata.normalize("NFKC", text).replace("\r\n", "\n").replace("\r", "\n")


def codepoints(text: str) -> np.ndarray:
    return np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32).astype(np.int64)


def max_base(order: int) -> int:
    """The largest base whose order-th power still fits an int64 code."""
    base = int(round(INT64_MAX ** (1.0 / order)))
    while base ** order > INT64_MAX:
        base -= 1
    return base


class CharNgram:
    """Backoff-form scores over stored n-grams: keys[k - 1] are the sorted order-k codes,
    logs[k - 1] their log P (for k = 1: the dense unigram log of every id). backoffs[j - 1]:
    the log backoff weight of each order-j n-gram as a history (j = 1: dense over ids), for
    Kneser-Ney; None for stupid backoff (log alpha per dropped character). A counted model also
    keeps its exact counts (counts, history_counts); a loaded one has only what scoring needs."""

    def __init__(self, chars: np.ndarray, order: int, keys: list[np.ndarray], logs: list[np.ndarray],
                 backoffs: list[np.ndarray] | None = None, alpha: float = ALPHA,
                 counts: list[np.ndarray] | None = None, history_counts: list[np.ndarray] | None = None) -> None:
        self.chars = chars                      # sorted code points of the vocabulary
        self.base = len(chars) + FIRST_CHAR_ID
        self.order, self.alpha = order, alpha
        self.keys, self.logs, self.backoffs = keys, logs, backoffs
        self.counts, self.history_counts = counts, history_counts

    @property
    def smoothing(self) -> str:
        return STUPID if self.backoffs is None else KNESER_NEY

    # --- counting ---------------------------------------------------------------------------

    @classmethod
    def count(cls, sentences: Iterable[str], order: int = ORDER, smoothing: str = KNESER_NEY,
              alpha: float = ALPHA, max_vocabulary: int | None = None) -> "CharNgram":
        """Count every n-gram (n = 1..order) of the sentences, each framed by boundaries, and
        smooth them. The most frequent characters are the vocabulary (as many as int64 codes
        allow, or max_vocabulary); any others count as UNK."""
        lines = [s for s in (normalise(s).replace("\n", "") for s in sentences) if s]
        cps = codepoints("\n" + "".join(line + "\n" for line in lines))
        chars, freq = np.unique(cps[cps != ord("\n")], return_counts=True)
        limit = max_base(order) - FIRST_CHAR_ID
        if max_vocabulary is not None:
            limit = min(limit, max_vocabulary)
        if len(chars) > limit:
            chars = chars[np.sort(np.argsort(-freq, kind="stable")[:limit])]
        return cls.from_ids(_map_ids(cps, chars), chars, order, smoothing, alpha)

    @classmethod
    def from_ids(cls, ids: np.ndarray, chars: np.ndarray, order: int, smoothing: str = KNESER_NEY,
                 alpha: float = ALPHA) -> "CharNgram":
        """ids: BOUNDARY s1 BOUNDARY s2 ... BOUNDARY. An n-gram never crosses a sentence: a
        boundary may only be its first symbol (a sentence start) or its last (a sentence end)."""
        if smoothing not in SMOOTHINGS:
            raise ValueError(f"smoothing {smoothing!r}: one of {', '.join(SMOOTHINGS)}")
        base = len(chars) + FIRST_CHAR_ID
        if base ** order > INT64_MAX:
            raise ValueError(f"{len(chars)} characters: order-{order} codes would not fit int64")
        ids = np.asarray(ids, dtype=np.int64)
        is_boundary = ids == BOUNDARY
        keys, counts, history_counts, logs = [], [], [], []
        codes, valid = ids, np.ones(len(ids), dtype=bool)
        for k in range(1, order + 1):
            n = max(0, len(ids) - k + 1)
            if k == 1:
                selected = ids[1:]          # every symbol but the opening boundary is predicted
            else:
                codes = codes[:n] * base + ids[k - 1:k - 1 + n]
                valid = valid[:n]
                if k >= 3:                  # symbol i + k - 2 is now inside the n-gram at i
                    valid = valid & ~is_boundary[k - 2:k - 2 + n]
                selected = codes[valid]
            unique, count = np.unique(selected, return_counts=True)
            count = count.astype(np.int64)
            keys.append(unique)
            counts.append(count)
            if k == 1:
                history_counts.append(np.zeros(0, dtype=np.int64))
                if smoothing == STUPID:
                    dense = np.zeros(base, dtype=np.int64)
                    dense[unique] = count
                    logs.append(np.log((dense + 1) / (count.sum() + base)))
            else:   # a history's count: the sum over its continuations (prefixes of sorted codes are sorted)
                prefix = unique // base
                starts = np.flatnonzero(np.r_[True, prefix[1:] != prefix[:-1]]) if len(prefix) else prefix
                sums = (np.add.reduceat(count, starts).astype(np.int64) if len(prefix)
                        else np.zeros(0, dtype=np.int64))
                history_counts.append(sums)
                if smoothing == STUPID:
                    per_gram = np.repeat(sums, np.diff(np.r_[starts, len(prefix)])) if len(prefix) else sums
                    logs.append(np.log(count / np.maximum(per_gram, 1)))
            del selected
        if smoothing == KNESER_NEY:
            logs, backoffs = _kneser_ney(keys, counts, base)
            return cls(chars, order, keys, logs, backoffs, alpha, counts, history_counts)
        return cls(chars, order, keys, logs, None, alpha, counts, history_counts)

    def pruned(self, min_count: int) -> "CharNgram":
        """The n-grams of order >= 2 counted at least min_count times (a counted model only);
        their scores stay those of the full counts, the rest back off."""
        if self.counts is None:
            raise ValueError("only a counted model can be pruned")
        keys, logs = [self.keys[0]], [self.logs[0]]
        backoffs = None if self.backoffs is None else [self.backoffs[0]]
        for k in range(2, self.order + 1):
            keep = self.counts[k - 1] >= min_count
            keys.append(self.keys[k - 1][keep])
            logs.append(self.logs[k - 1][keep])
            if backoffs is not None and k < self.order:
                backoffs.append(self.backoffs[k - 1][keep])
        return CharNgram(self.chars, self.order, keys, logs, backoffs, self.alpha)

    # --- scoring ----------------------------------------------------------------------------

    def ids_of(self, text: str) -> np.ndarray:
        return _map_ids(codepoints(normalise(text)), self.chars)

    def window_scores(self, windows: np.ndarray, lengths: np.ndarray) -> np.ndarray:
        """log P of each window's last symbol given the symbols before it.
        windows: (P, order) ids, right-aligned; lengths: how many of them are real (1..order)."""
        windows = np.asarray(windows, dtype=np.int64)
        lengths = np.asarray(lengths, dtype=np.int64)
        score = self.logs[0][windows[:, -1]].copy()
        matched = np.ones(len(windows), dtype=np.int64)   # length of the longest stored n-gram
        for k in range(self.order, 1, -1):
            rows = np.flatnonzero((lengths >= k) & (matched == 1))
            if not len(rows):
                continue
            pos, seen = self._find(k, windows[rows, self.order - k:])
            r = rows[seen]
            score[r] = self.logs[k - 1][pos[seen]]
            matched[r] = k
        if self.backoffs is None:
            return score + (lengths - matched) * math.log(self.alpha)
        # Every history longer than the match's was backed off from: its weight (1 if not stored).
        for j in range(1, self.order):
            rows = np.flatnonzero((lengths > j) & (matched <= j))
            if not len(rows):
                continue
            history = windows[rows, self.order - 1 - j:self.order - 1]
            if j == 1:
                score[rows] += self.backoffs[0][history[:, 0]]
                continue
            pos, seen = self._find(j, history)
            score[rows[seen]] += self.backoffs[j - 1][pos[seen]]
        return score

    def _find(self, k: int, grams: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Where each row of `grams` ((P, k) ids) is among the stored order-k n-grams, and
        whether it is there."""
        keys = self.keys[k - 1]
        if not len(keys):
            return np.zeros(len(grams), dtype=np.int64), np.zeros(len(grams), dtype=bool)
        code = np.zeros(len(grams), dtype=np.int64)
        for j in range(k):
            code = code * self.base + grams[:, j]
        pos = np.minimum(np.searchsorted(keys, code), len(keys) - 1)
        return pos, keys[pos] == code

    def history_ids(self, context: str, open_start: bool = False) -> np.ndarray:
        """The ids what comes after `context` is conditioned on: up to order - 1, from its last
        sentence start (the start of the text, when the context is empty or short, or where a
        newline in it is), that start's BOUNDARY included. open_start: the text before the
        context is unknown, so the context's first character is not taken to start a sentence."""
        history = np.r_[[] if open_start else [BOUNDARY], self.ids_of(context)].astype(np.int64)
        starts = np.flatnonzero(history == BOUNDARY)
        return history[max(int(starts[-1]) if starts.size else 0, len(history) - (self.order - 1)):]

    def score(self, text: str, context: str = "") -> float:
        """log P(text | context): the sum of its characters' log P, natural log."""
        return float(self.score_many([(text, context)])[0])

    def score_many(self, pairs: Sequence[tuple[str, str]], open_start: bool = False) -> np.ndarray:
        """log P(text | context) for every (text, context), in one vectorised pass (open_start:
        as history_ids).

        Each pair becomes one run of ids: order - 1 fillers, the context's history_ids (each
        distinct context worked out once: Space scores ten spellings after one context), then
        the text. A text character's window is the order ids of its run ending at it, so it
        never reaches into the run before."""
        out = np.zeros(len(pairs))
        if not pairs:
            return out
        histories: dict[str, np.ndarray] = {}
        texts = [codepoints(normalise(text)) for text, _ in pairs]
        lengths = np.array([len(t) for t in texts], dtype=np.int64)
        if not lengths.sum():
            return out
        targets = _map_ids(np.concatenate(texts), self.chars)   # one lookup for every text
        filler = np.full(self.order - 1, -1, dtype=np.int64)
        runs, places, known = [], [], []
        at, taken = 0, 0
        for (_, context), n in zip(pairs, lengths.tolist()):
            history = histories.get(context)
            if history is None:
                history = histories[context] = self.history_ids(context, open_start)
            runs += [filler, history, targets[taken:taken + n]]
            text_start = at + len(filler) + len(history)
            places.append(np.arange(text_start, text_start + n))
            known.append(len(history) + 1 + np.arange(n))   # symbols up to and including it
            at, taken = text_start + n, taken + n
        ids = np.concatenate(runs)
        ends = np.concatenate(places)
        windows = ids[ends[:, None] + np.arange(1 - self.order, 1)]
        scores = self.window_scores(windows, np.minimum(self.order, np.concatenate(known)))
        np.add.at(out, np.repeat(np.arange(len(pairs)), lengths), scores)
        return out

    def distinct(self) -> dict[int, int]:
        """Stored n-grams per order (for order 1: the characters and boundary seen)."""
        first = int((self.counts[0] > 0).sum()) if self.counts is not None else len(self.keys[0])
        return {1: first, **{k: len(self.keys[k - 1]) for k in range(2, self.order + 1)}}

    # --- the file ---------------------------------------------------------------------------

    def save(self, path: Path) -> None:
        arrays = {"format": np.array(FORMAT), "order": np.array(self.order), "alpha": np.array(self.alpha),
                  "smoothing": np.array(self.smoothing),
                  "chars": self.chars.astype(np.uint32), "unigram": self.logs[0].astype(np.float32)}
        for k in range(2, self.order + 1):
            keys = self.keys[k - 1]
            arrays[f"delta{k}"] = np.diff(keys, prepend=np.int64(0))
            arrays[f"quant{k}"] = _quantised(self.logs[k - 1])
        if self.backoffs is not None:
            arrays["backoff1"] = self.backoffs[0].astype(np.float32)
            for k in range(2, self.order):
                arrays[f"backoff{k}"] = _quantised(self.backoffs[k - 1])
        path = Path(path)
        partial = path.with_name(path.name + ".partial")
        with partial.open("wb") as out:
            np.savez_compressed(out, **arrays)
        partial.replace(path)

    @classmethod
    def load(cls, path: Path) -> "CharNgram":
        """The model in `path`; CharNgramError when it is missing, damaged or another format."""
        try:
            with np.load(Path(path), allow_pickle=False) as data:
                version = int(data["format"])
                if version not in (1, FORMAT):
                    raise CharNgramError(f"{Path(path).name}: n-gram format {version}, expected {FORMAT}")
                smoothing = str(data["smoothing"]) if version >= 2 else STUPID
                if smoothing not in SMOOTHINGS:
                    raise CharNgramError(f"{Path(path).name}: unknown smoothing {smoothing!r}")
                order, alpha = int(data["order"]), float(data["alpha"])
                chars = data["chars"].astype(np.int64)
                keys = [np.arange(len(chars) + FIRST_CHAR_ID, dtype=np.int64)]
                logs = [data["unigram"].astype(np.float64)]
                for k in range(2, order + 1):
                    keys.append(np.cumsum(data[f"delta{k}"], dtype=np.int64))
                    logs.append(_restored(data[f"quant{k}"]))
                backoffs = None
                if smoothing == KNESER_NEY:
                    backoffs = [data["backoff1"].astype(np.float64)]
                    backoffs += [_restored(data[f"backoff{k}"]) for k in range(2, order)]
        except (OSError, KeyError, ValueError, EOFError, zipfile.BadZipFile) as exc:
            if isinstance(exc, CharNgramError):
                raise
            raise CharNgramError(f"{Path(path).name}: not a readable n-gram file ({type(exc).__name__})") from exc
        model = cls(chars, order, keys, logs, backoffs, alpha)
        model._check()
        return model

    def _check(self) -> None:
        if not 1 <= self.order <= 8 or not 0 < self.alpha <= 1:
            raise CharNgramError(f"n-gram file: order {self.order} / alpha {self.alpha} out of range")
        if len(self.logs[0]) != self.base or not np.all(self.logs[0] <= 0):
            raise CharNgramError("n-gram file: the unigram table does not match the vocabulary")
        for k in range(2, self.order + 1):
            keys = self.keys[k - 1]
            if len(keys) != len(self.logs[k - 1]) or (len(keys) > 1 and not np.all(keys[1:] > keys[:-1])):
                raise CharNgramError(f"n-gram file: order-{k} keys are not sorted or do not match their scores")
        if self.backoffs is not None:
            sizes = [self.base] + [len(self.keys[k - 1]) for k in range(2, self.order)]
            if ([len(b) for b in self.backoffs] != sizes
                    or not all(np.all(b <= 0) for b in self.backoffs)):
                raise CharNgramError("n-gram file: the backoff weights do not match the n-grams")


def _quantised(logs: np.ndarray) -> np.ndarray:
    return np.clip(np.rint(-logs / LOG_STEP), 0, LOG_LEVELS).astype(np.uint8)


def _restored(quantised: np.ndarray) -> np.ndarray:
    return -quantised.astype(np.float32) * np.float32(LOG_STEP)


def _kneser_ney(keys: list[np.ndarray], counts: list[np.ndarray], base: int) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Interpolated modified Kneser-Ney over exact counts: per order, log P of every counted
    n-gram (order 1: dense over ids), and per order below the top the log backoff weight of
    every counted n-gram as a history (order 1: dense)."""
    order = len(keys)
    adjusted = [counts[order - 1].astype(np.float64)]
    for k in range(order - 1, 0, -1):
        # order k: how many distinct symbols precede each n-gram (its order-(k+1) extensions)
        suffixes, before = np.unique(keys[k] % base ** k, return_counts=True)
        a = np.zeros(len(keys[k - 1]))
        a[np.searchsorted(keys[k - 1], suffixes)] = before
        if k >= 2:   # an n-gram opening a sentence has nothing before it: its own count
            opens = keys[k - 1] // base ** (k - 1) == BOUNDARY
            a[opens] = counts[k - 1][opens]
        adjusted.insert(0, np.where(a > 0, a, counts[k - 1]))
    logs, backoffs = [], []
    # order 1, interpolated with the uniform distribution over every id
    a1 = np.zeros(base)
    a1[keys[0]] = adjusted[0]
    d1 = _discount(a1, _discounts(adjusted[0]))
    total = a1.sum()
    p1 = np.maximum(a1 - d1, 0.0) / total + d1.sum() / total / base
    logs.append(np.log(p1))
    lower = p1
    for k in range(2, order + 1):
        code, a = keys[k - 1], adjusted[k - 1]
        if not len(code):   # text too short for this order: nothing stored, every history weighs 1
            logs.append(np.zeros(0))
            backoffs.append(np.zeros(base if k == 2 else len(keys[k - 2])))
            lower = np.zeros(0)
            continue
        d = _discount(a, _discounts(a))
        history = code // base
        starts = np.flatnonzero(np.r_[True, history[1:] != history[:-1]])
        sizes = np.diff(np.r_[starts, len(code)])
        total = np.add.reduceat(a, starts)
        weight = np.add.reduceat(d, starts) / total              # mass set aside per history
        suffix = code % base ** (k - 1)
        below = lower[suffix] if k == 2 else lower[np.searchsorted(keys[k - 2], suffix)]
        p = (a - d) / np.repeat(total, sizes) + np.repeat(weight, sizes) * below
        logs.append(np.log(p))
        # The histories' weights, aligned with the order-(k-1) n-grams (dense for order 1).
        table = np.zeros(base if k == 2 else len(keys[k - 2]))
        table[history[starts] if k == 2 else np.searchsorted(keys[k - 2], history[starts])] = np.log(weight)
        backoffs.append(table)
        lower = p
    return logs, backoffs


def _discounts(adjusted: np.ndarray) -> np.ndarray:
    """D1, D2, D3+ from the counts of counts (Chen & Goodman), index 0 unused; each at least
    MIN_DISCOUNT and at most its count, so tiny texts still leave mass for the unseen."""
    n = [int(np.count_nonzero(adjusted == j)) for j in (1, 2, 3, 4)]
    y = n[0] / (n[0] + 2 * n[1]) if n[0] + n[1] else 0.5
    raw = [1 - 2 * y * n[1] / n[0] if n[0] else 0.5,
           2 - 3 * y * n[2] / n[1] if n[1] else 1.0,
           3 - 4 * y * n[3] / n[2] if n[2] else 1.5]
    return np.array([0.0] + [min(max(d, MIN_DISCOUNT), j) for j, d in zip((1, 2, 3), raw)])


def _discount(adjusted: np.ndarray, discounts: np.ndarray) -> np.ndarray:
    return discounts[np.minimum(adjusted, 3).astype(np.int64)]


def _map_ids(cps: np.ndarray, chars: np.ndarray) -> np.ndarray:
    """Code points to ids: newline = BOUNDARY, a vocabulary character its id, others UNK."""
    ids = np.full(len(cps), UNK, dtype=np.int64)
    if len(chars):
        pos = np.minimum(np.searchsorted(chars, cps), len(chars) - 1)
        known = chars[pos] == cps
        ids[known] = pos[known] + FIRST_CHAR_ID
    ids[cps == ord("\n")] = BOUNDARY
    return ids
