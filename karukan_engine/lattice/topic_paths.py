"""The judged paths' content words against the text around them (lm/topic_vectors.py).

The n-grams read a few words back; a homophone is often settled further away (船 ... こうかい:
航海, 江戸時代の ... しょうにん: 商人). Each judged path's content words are scored by their
association with the left context's content words and with the path's own other words, and the
path gains `weight` cost units per nat of it (lattice/word_lm.path_rescorer).

The left context is cut into words by the longest surface the word n-gram knows, right to left:
no analyser at run time, and a context word the vocabulary lacks is skipped, not guessed.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from karukan_engine.lm.topic_vectors import TopicVectors

CONTEXT_CHARS = 96      # how far back the left context is read
LONGEST_WORD = 8


class TopicContext:
    """The left context's content words as topic-vector rows, found once per context."""

    def __init__(self, vectors: TopicVectors, surface_id) -> None:
        self.vectors = vectors
        self.surface_id = surface_id
        self._cached_rows = lru_cache(maxsize=64)(self._rows)

    def rows(self, context: str) -> tuple[int, ...]:
        # the cache keeps only what is read: an application's surrounding text may be huge
        return self._cached_rows(context[-CONTEXT_CHARS:])

    def _rows(self, text: str) -> tuple[int, ...]:
        found: list[int] = []
        end = len(text)
        while end > 0:
            for length in range(min(LONGEST_WORD, end), 0, -1):
                word = self.surface_id(text[end - length:end])
                if word:
                    found.append(word)
                    end -= length
                    break
            else:
                end -= 1
        return tuple(self.vectors.rows_of(found[::-1]).tolist())


def topic_nats(vectors: TopicVectors, context_rows: tuple[int, ...], paths: list[list[int]]) -> list[float]:
    """Each path's (its words' ids) association with the context and itself, in nats."""
    return vectors.associations(paths, np.asarray(context_rows, dtype=np.int64)).tolist()
