"""Suggestions while composing: learned completions, then dictionary predictive search.

Learned (reading, surface) pairs whose reading starts with what was typed come first, best
first. Then dictionary words whose reading extends the typed one, ranked by
cost + 500·ln(50·remaining characters) (after Karukan's predictive search): cheap words that
need few more characters first. Dictionary completions start from two typed characters.
"""

from __future__ import annotations

import math

from karukan_engine.core.candidates import unique_surfaces
from karukan_engine.core.types import Candidate, Completion, Source

PREDICTIVE_MIN_CHARS = 2
PREDICTIVE_READINGS = 200


def predictive_cost(cost: int, remaining_chars: int) -> float:
    return cost + 500.0 * math.log(50.0 * max(1, remaining_chars))


def suggestions(reading: str, learning=None, dictionary=None, limit: int = 6,
                dictionary_limit: int = 3) -> list[Candidate]:
    """learning: a LearningStore (prefix_lookup); dictionary: a SystemDictionary (predictive, lookup).
    Each one is a Completion carrying the whole reading it stands for."""
    if not reading or limit <= 0:
        return []
    found: list[Candidate] = []
    if learning is not None:
        found = unique_surfaces(Completion(surface, source=Source.LEARNING, reading=full)
                                for full, surface in learning.prefix_lookup(reading, limit))
    if dictionary is not None and len(reading) >= PREDICTIVE_MIN_CHARS:
        # Rank the readings by cost first and decode surfaces only for the best: the search runs
        # for most keys, and building every entry of 200 readings was most of its time.
        ranked = []
        for full in dictionary.predictive(reading, PREDICTIVE_READINGS):
            cost = dictionary.cheapest_cost(full) if full != reading else None
            if cost is not None:
                ranked.append((predictive_cost(cost, len(full) - len(reading)), full))
        ranked.sort()
        predicted = (Completion(dictionary.lookup(full)[0].surface, source=Source.DICTIONARY, reading=full)
                     for _cost, full in ranked)
        found = unique_surfaces(found, predicted, limit=len(found) + dictionary_limit)
    return found[:limit]
