"""Which compositions of a segment's N-best spellings the word n-gram lets into its list.

A segment's spellings that glue two or more content words together (回技の, 過意義の for
かいぎの; candidate_filter.Shape.COMPOSED) already come after its real words and its kana, but
when a reading has only a few real words they filled the rest of the first page. The word
n-gram (lm/word_ngram.py, counted over the whole corpus) tells a compound written as two words
(a pair it kept as a bigram: the words were seen side by side often enough) from two words that
never meet. A composition with a pair of adjacent words the model does not keep, or with a word
it does not know, is not listed; the rest keep the dictionary's order. The segment's first
candidate, the user's own spellings (never COMPOSED) and the script forms are never touched.
Without the word n-gram (none, or still loading) the list is as before. Measured against Mozc's
pages in docs/benchmarks.md ("Candidate pages"): on the recorded readings no gold spelling left
a list.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from karukan_engine.core.types import Candidate
from karukan_engine.lm.word_ngram import UNK

Words = Sequence[tuple[str, str]]   # a spelling's words: (surface, hiragana reading) each


def seen_together(model, words: Words) -> bool:
    """Whether the model knows every word and keeps every adjacent pair as a bigram."""
    ids = [model.word_id(surface, reading) for surface, reading in words]
    if UNK in ids:
        return False
    if len(ids) < 2:
        return True
    hit, _ = model.bigram_hits(np.array(ids[:-1]), np.array(ids[1:]))
    return bool(hit.all())


def split_compositions(composed: Sequence[Candidate], words: Sequence[Words],
                       model) -> tuple[list[Candidate], list[Candidate]]:
    """(compositions to list, those left out), each in the given order; `words` are each
    composition's words, `model` the word n-gram or None (then (composed, []))."""
    if model is None:
        return list(composed), []
    verdicts = [seen_together(model, w) for w in words]
    return ([c for c, ok in zip(composed, verdicts) if ok], [c for c, ok in zip(composed, verdicts) if not ok])
