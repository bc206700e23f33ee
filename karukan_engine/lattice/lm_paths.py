"""The lattice's whole-reading paths judged with a language model as well as the dictionary.

The dictionary's costs (Mozc's class bigram over POS ids plus word costs) know one segment of
left context and nothing of which spelling the text around it uses; the character n-gram,
counted over the whole corpus, knows both. A path's score is its dictionary cost plus
`weight` cost units per nat of the n-gram's -log P of its surface after the left context. The
search walks the dictionary's paths cheapest first (exact A*), up to `paths` distinct surfaces,
and the best score among them is the conversion: the path the session segments, the live text,
the first candidate. The dictionary's cost stays the backoff for what the n-gram cannot tell
(its unseen characters cost every spelling alike).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Protocol, Sequence

import numpy as np

from karukan_engine.lattice.lattice import Lattice
from karukan_engine.lattice.search import SearchSpace

# A* pops allowed over a whole reading's paths (the judged ones and the candidate list's).
MAX_EXPANSIONS = 20000


class TextScorer(Protocol):
    """log P of each (text, left context) pair, natural log (lm/char_ngram.CharNgram); with
    open_start, an empty context is unknown text rather than a sentence start."""

    def score_many(self, pairs: Sequence[tuple[str, str]], open_start: bool = False): ...


@dataclass(frozen=True)
class LmWeights:
    """How much the language model says: `weight` cost units per nat of -log P (0: nothing),
    over the first `paths` distinct surfaces, and how much left context it reads. The
    defaults are fitted by tools/lattice_lm_fit.py on the even rows of every dev set
    (docs/benchmarks.md "Language model in the lattice"); 16 paths keep a key's live
    conversion within its budget (24 and 40 gain a few rows more at 1.2x and 1.6x the time)."""

    weight: float = 650.0
    paths: int = 16
    context_chars: int = 8

    def __post_init__(self) -> None:
        if not self.weight >= 0 or self.paths < 1 or self.context_chars < 0:
            raise ValueError("language-model weights must be non-negative (paths at least 1)")


@dataclass(frozen=True)
class ScoredPath:
    score: float            # dictionary cost + weight * -log P
    cost: int               # the dictionary's path cost alone
    surface: str
    nodes: tuple[int, ...]


def distinct_paths(lattice: Lattice, space: SearchSpace, limit: int) -> list[tuple[int, str, list[int]]]:
    """The cheapest path of each of the first `limit` distinct surfaces, cheapest first."""
    found: list[tuple[int, str, list[int]]] = []
    seen: set[str] = set()
    for cost, nodes in space.paths(MAX_EXPANSIONS, distinct=True):
        surface = "".join(lattice.surface(node) for node in nodes)
        if surface not in seen:
            seen.add(surface)
            found.append((int(cost), surface, nodes))
            if len(found) >= limit:
                break
    return found


def ranked_paths(lattice: Lattice, space: SearchSpace, scorer: TextScorer | None, context: str,
                 weights: LmWeights, rescore: Callable[[list[list[int]]], list[float]] | None = None,
                 open_start: float = 0.0) -> list[ScoredPath]:
    """The distinct paths best first by the joint score (by cost alone without a scorer or
    weight); ties keep the dictionary's order. rescore: more cost units per path (the word
    trigram's correction of the bigram the search used, lattice/word_lm.py), all paths at once.
    open_start: where there is no left context, the chance that the reading does not start a
    sentence (the n-gram's P is then a mixture of both; word_lm.open_start says where)."""
    judged = scorer is not None and weights.weight > 0
    found = distinct_paths(lattice, space, weights.paths if judged or rescore is not None else 1)
    if not (judged or rescore is not None) or len(found) < 2:
        return [ScoredPath(float(cost), cost, surface, tuple(nodes)) for cost, surface, nodes in found]
    tail = context[-weights.context_chars:] if weights.context_chars else ""
    logs = _text_logs(scorer, [surface for _, surface, _ in found], tail, open_start) if judged else [0.0] * len(found)
    extra = rescore([nodes for _, _, nodes in found]) if rescore is not None else [0.0] * len(found)
    scored = [ScoredPath(cost - (weights.weight if judged else 0.0) * float(log) + more, cost, surface, tuple(nodes))
              for (cost, surface, nodes), log, more in zip(found, logs, extra)]
    order = sorted(range(len(scored)), key=lambda i: (scored[i].score, i))
    return [scored[i] for i in order]


def _text_logs(scorer: TextScorer, surfaces: list[str], tail: str, open_start: float):
    """log P of each surface after tail; with open_start > 0, of the mixture of the surface
    starting a sentence and not."""
    logs = scorer.score_many([(surface, tail) for surface in surfaces])
    if open_start <= 0:
        return logs
    unanchored = scorer.score_many([(surface, tail) for surface in surfaces], open_start=True)
    with np.errstate(divide="ignore"):
        return np.logaddexp(np.log1p(-open_start) + np.asarray(logs), np.log(open_start) + np.asarray(unanchored))


def keep_dictionary_choice(ranked: list[ScoredPath], dictionary_surface: str, margin: float) -> list[ScoredPath]:
    """ranked with the dictionary's own first choice (the path its costs alone prefer) moved to
    the front unless the best path's score beats it by `margin` or more: a language model
    overturns the dictionary only when sure (on the dev sets the close calls broke about as
    many conversions as they fixed). Unchanged when that surface is not among the paths."""
    if margin <= 0 or len(ranked) < 2 or ranked[0].surface == dictionary_surface:
        return ranked
    for i, path in enumerate(ranked):
        if path.surface == dictionary_surface:
            if path.score - ranked[0].score < margin:
                return [path, *ranked[:i], *ranked[i + 1:]]
            return ranked
    return ranked
