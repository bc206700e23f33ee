"""One score for every whole-reading candidate, whatever proposed it.

Each candidate carries the evidence gathered for it: the dictionary path cost of its surface
(constrained lattice; None when the dictionary cannot produce it), the model's NLL per surface
character (None without a model), the character n-gram's log P of the surface after the left
context (None without one), and the learning score. Lower scores rank first.
Transliteration variants ([全]カタカナ …) are not ranked: they stay at the end, in their order.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Sequence

from karukan_engine.conversion.settings import FusionWeights
from karukan_engine.core.candidates import unique_surfaces
from karukan_engine.core.types import Candidate, Source
from karukan_engine.kana import nfkc


@dataclass(frozen=True)
class Evidence:
    candidate: Candidate
    lattice_cost: float | None = None
    nll: float | None = None
    learning: float = 0.0
    lm: float | None = None


def fused_score(item: Evidence, reading_chars: int, weights: FusionWeights) -> float:
    score = 0.0
    if item.lattice_cost is None:
        score += weights.unaligned
    else:
        score += weights.lattice * item.lattice_cost / 1000.0 / max(1, reading_chars)
    if item.nll is not None:
        score += weights.nll * item.nll
        if weights.nll_total:
            # Evidence.nll is per NFKC surface character (karukan_engine.neural.nll).
            score += weights.nll_total * item.nll * max(1, len(nfkc(item.candidate.surface)))
    if item.lm is not None:
        score -= weights.ngram * item.lm
    return score - weights.learning * item.learning


def rank(items: Sequence[Evidence], reading_chars: int, weights: FusionWeights) -> list[Candidate]:
    """Candidates best first, without duplicate surfaces; variants last in their given order.

    With `weights.confident_nll` set, the model's terms may change which candidate comes first
    only when the model is confident of the one it puts there (its NLL per character at most
    that); otherwise the order without the model's terms stands: a small model overrules the
    dictionary where it knows the text, not where it is guessing. With `weights.margin`, the
    first of `items` (the dictionary's first: pools list it first) stays first unless another
    candidate scores lower by at least the margin. With `weights.keep_base_order`, the base's
    candidates (neither the model's nor learning's) keep the order `items` gives them.
    """
    ranked = [it for it in items if it.candidate.source != Source.VARIANT]
    variants = [it.candidate for it in items if it.candidate.source == Source.VARIANT]
    order = _order(ranked, reading_chars, weights)
    if order and weights.confident_nll is not None and weights.uses_model_score:
        top = ranked[order[0]]
        if top.nll is None or top.nll > weights.confident_nll:
            without_model = _order(ranked, reading_chars, replace(weights, nll=0.0, nll_total=0.0, ngram=0.0))
            if without_model[0] != order[0]:
                order = without_model
    if order and order[0] != 0 and weights.margin > 0:
        lead = fused_score(ranked[order[0]], reading_chars, weights)
        if fused_score(ranked[0], reading_chars, weights) - lead < weights.margin:
            order = [0, *(i for i in order if i != 0)]
    if weights.keep_base_order:
        order = _base_order_kept(ranked, order)
    return unique_surfaces([ranked[i].candidate for i in order], variants)


# Candidates the score places even when the base's order stands: what the base did not judge.
PLACED_BY_SCORE = frozenset({Source.MODEL, Source.LEARNING})


def _base_order_kept(ranked: Sequence[Evidence], order: list[int]) -> list[int]:
    """order with the slots of the base's candidates refilled in their given (pool) order: the
    model's and learning's candidates stay where the score put them."""
    base = iter(sorted(i for i in order if ranked[i].candidate.source not in PLACED_BY_SCORE))
    return [i if ranked[i].candidate.source in PLACED_BY_SCORE else next(base) for i in order]


def _order(ranked: Sequence[Evidence], reading_chars: int, weights: FusionWeights) -> list[int]:
    return sorted(range(len(ranked)), key=lambda i: (fused_score(ranked[i], reading_chars, weights), i))

