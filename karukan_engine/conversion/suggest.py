"""Suggestions while composing: learned completions, then dictionary predictive search.

Learned (reading, surface) pairs whose reading starts with what was typed come first, best
first. Then dictionary words whose reading extends the typed one, ranked by
cost + 500·ln(50·remaining characters) (after Karukan's predictive search): cheap words that
need few more characters first. Dictionary completions start from two typed characters.

Where a model is loaded, the best MODEL_POOL dictionary completions can be ranked again with
the model's view of each given the left context (`blended`): its NLL of the spelling, in nats
over the whole spelling, is added to the cost at Mozc's scale (about 500 cost units per nat).
Only completions within MODEL_MARGIN of the best one's cost are reordered so: the NLL of a whole
spelling favours short ones, and unbounded it lifted far-down entries (ありがとぅ, ありがとう的)
into the list. benchmarks/suggest_model_eval.py measured both (docs/benchmarks.md).
"""

from __future__ import annotations

import math
from typing import Iterator, Sequence

from karukan_engine.core.candidates import unique_surfaces
from karukan_engine.core.types import Candidate, Completion, Source

PREDICTIVE_MIN_CHARS = 2
PREDICTIVE_READINGS = 200
DICTIONARY_LIMIT = 3     # dictionary completions shown after the learned ones
MODEL_POOL = 8           # dictionary completions the model ranks again
NATS_AS_COST = 500       # Mozc's word costs are about -500·ln p
# The model reorders only completions whose predictive cost is at most this much above the best
# one's (benchmarks/suggest_model_eval.py --margins, docs/benchmarks.md).
MODEL_MARGIN = 1500.0


def predictive_cost(cost: int, remaining_chars: int) -> float:
    return cost + 500.0 * math.log(50.0 * max(1, remaining_chars))


def dictionary_completions(reading: str, dictionary) -> Iterator[tuple[float, Completion]]:
    """(predictive cost, completion) of the dictionary's words extending `reading`, best first
    (nothing under PREDICTIVE_MIN_CHARS). Surfaces are decoded only as far as it is read."""
    if dictionary is None or len(reading) < PREDICTIVE_MIN_CHARS:
        return
    # Rank the readings by cost first and decode surfaces only for the best: the search runs
    # for most keys, and building every entry of 200 readings was most of its time.
    ranked = []
    for full in dictionary.predictive(reading, PREDICTIVE_READINGS):
        cost = dictionary.cheapest_cost(full) if full != reading else None
        if cost is not None:
            ranked.append((predictive_cost(cost, len(full) - len(reading)), full))
    ranked.sort()
    for cost, full in ranked:
        yield cost, Completion(dictionary.lookup(full)[0].surface, source=Source.DICTIONARY, reading=full)


def learned_completions(reading: str, learning, limit: int) -> list[Candidate]:
    if learning is None or not reading or limit <= 0:
        return []
    return unique_surfaces(Completion(surface, source=Source.LEARNING, reading=full)
                           for full, surface in learning.prefix_lookup(reading, limit))


def suggestions(reading: str, learning=None, dictionary=None, limit: int = 6,
                dictionary_limit: int = DICTIONARY_LIMIT) -> list[Candidate]:
    """learning: a LearningStore (prefix_lookup); dictionary: a SystemDictionary or the converter's
    lexicon (predictive, cheapest_cost, lookup).
    Each one is a Completion carrying the whole reading it stands for."""
    if not reading or limit <= 0:
        return []
    found = learned_completions(reading, learning, limit)
    predicted = (completion for _cost, completion in dictionary_completions(reading, dictionary))
    found = unique_surfaces(found, predicted, limit=len(found) + dictionary_limit)
    return found[:limit]


def model_pool(reading: str, learned: Sequence[Candidate], dictionary,
               size: int = MODEL_POOL) -> list[tuple[float, Completion]]:
    """The best `size` dictionary completions the model ranks again: one per spelling, none
    that a learned completion already shows."""
    seen = {c.surface for c in learned}
    pool: list[tuple[float, Completion]] = []
    for cost, completion in dictionary_completions(reading, dictionary):
        if completion.surface and completion.surface not in seen:
            seen.add(completion.surface)
            pool.append((cost, completion))
            if len(pool) >= size:
                break
    return pool


def shown_order(learned: Sequence[Candidate], ranked: Sequence[Candidate], continued: Sequence[Candidate],
                limit: int) -> list[Candidate]:
    """What the list shows once the model has ranked the dictionary's completions (`ranked`):
    learned completions, the best ranked one, the n-gram's continuation (a guess about what
    follows the word, after the word itself), the other ranked ones; each spelling once, at most
    DICTIONARY_LIMIT ranked ones and `limit` in all."""
    ranked = list(ranked)[:DICTIONARY_LIMIT]   # a continuation that one of them spells takes no slot
    return unique_surfaces(learned, ranked[:1], continued, ranked[1:])[:max(0, limit)]


def blended(pool: Sequence[tuple[float, Completion]], nats: Sequence[float],
            margin: float = MODEL_MARGIN) -> list[Completion]:
    """The pool with the model's view (nats: its NLL of each spelling): the completions whose
    cost is within `margin` of the cheapest ordered by cost + NATS_AS_COST·nats, then the rest
    in the dictionary's order. Equal scores keep the pool's order."""
    if not pool:
        return []
    best = min(cost for cost, _completion in pool)
    near = [i for i, (cost, _completion) in enumerate(pool) if cost <= best + margin]
    far = [i for i, (cost, _completion) in enumerate(pool) if cost > best + margin]
    near.sort(key=lambda i: (pool[i][0] + NATS_AS_COST * nats[i], i))
    far.sort(key=lambda i: (pool[i][0], i))
    return [pool[i][1] for i in near + far]
