"""What comes next: the character n-gram's most likely kana continuations of a text.

Predictions while typing (issue #14, item 5) offer, besides learned phrases and dictionary
words, the model's continuation of what is composed: after お世話になって, おります; after
ありがとう, ございます. The bundled character n-gram (char_ngram.py) extends the text one
character at a time with a small beam over hiragana (and the long-vowel mark), and a
continuation counts only where it is likely to end: before a sentence end or a punctuation
mark. Its score is log P(continuation, then an end | left context + text), so a continuation is
offered only when the n-gram is that sure of the whole of it, end included.

Kana only, so that the continuation is its own reading: the completion's reading is the typed
reading followed by it, and committing it learns a true (reading, surface) pair.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from karukan_engine.lm.char_ngram import BOUNDARY, CharNgram

# Characters a continuation may hold: hiragana and ー (its reading is itself).
KANA = "".join(chr(c) for c in range(0x3041, 0x3097)) + "ー"
# What may follow a finished continuation: the end of the sentence or a punctuation mark.
ENDS = "。、！？!?…"
MAX_CHARS = 8
MIN_CHARS = 2
BEAM = 4


@dataclass(frozen=True)
class Continuation:
    text: str
    log_p: float      # log P(text, then an end | what came before), natural log

    @property
    def probability(self) -> float:
        return math.exp(self.log_p)


class Continuer:
    """Kana continuations from one n-gram; the symbol tables are built once."""

    def __init__(self, ngram: CharNgram) -> None:
        self.ngram = ngram
        kana_ids = ngram.ids_of(KANA)
        known = kana_ids > BOUNDARY          # characters the n-gram has never seen cannot come
        self.kana_ids = kana_ids[known]
        self.char_of = {int(i): c for i, c in zip(self.kana_ids, (c for c, k in zip(KANA, known) if k))}
        end_ids = ngram.ids_of(ENDS)
        self.end_ids = np.unique(np.r_[BOUNDARY, end_ids[end_ids > BOUNDARY]]).astype(np.int64)
        self.symbols = np.r_[self.kana_ids, self.end_ids]

    def continuations(self, text: str, context: str = "", max_chars: int = MAX_CHARS,
                      beam: int = BEAM, limit: int = 3) -> list[Continuation]:
        """Up to `limit` continuations of `text` of MIN_CHARS..max_chars kana, most likely
        first (log P includes the end that follows them). A beam search: the search stops once
        no open prefix beats the best finished one, so the first is the one to trust."""
        if not text:
            return []
        order = self.ngram.order
        start = self.ngram.history_ids(context + text).tolist()
        live: list[tuple[float, list[int]]] = [(0.0, [])]
        finished: dict[str, float] = {}
        for step in range(max_chars + 1):
            histories = [start + ids for _, ids in live]
            scores = self._next_scores(histories, self.symbols, order)   # (len(live), len(symbols))
            kana_scores = scores[:, :len(self.kana_ids)]
            end_scores = np.logaddexp.reduce(scores[:, len(self.kana_ids):], axis=1)
            for (log_p, ids), end in zip(live, end_scores):
                if len(ids) >= MIN_CHARS:
                    kana = "".join(self.char_of[i] for i in ids)
                    finished[kana] = max(finished.get(kana, -math.inf), log_p + float(end))
            if step == max_chars:
                break
            grown = [(log_p + float(kana_scores[row, col]), ids + [int(self.kana_ids[col])])
                     for row, (log_p, ids) in enumerate(live)
                     for col in np.argsort(-kana_scores[row])[:beam]]
            grown.sort(key=lambda item: -item[0])
            live = grown[:beam]
            if finished and live[0][0] < max(finished.values()):
                break   # every longer continuation is already less likely than the best found
        ranked = sorted(finished.items(), key=lambda item: -item[1])[:limit]
        return [Continuation(t, p) for t, p in ranked]

    def _next_scores(self, histories: list[list[int]], symbols: np.ndarray, order: int) -> np.ndarray:
        """log P(symbol | history) for every history (rows) and symbol (columns)."""
        rows = []
        lengths = []
        for history in histories:
            tail = history[-(order - 1):]
            window = np.full((len(symbols), order), -1, dtype=np.int64)
            if tail:
                window[:, order - 1 - len(tail):order - 1] = tail
            window[:, -1] = symbols
            rows.append(window)
            lengths.append(np.full(len(symbols), len(tail) + 1, dtype=np.int64))
        scores = self.ngram.window_scores(np.concatenate(rows), np.concatenate(lengths))
        return scores.reshape(len(histories), len(symbols))
