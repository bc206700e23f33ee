"""Fitting the fusion weights the engine ships (conversion/settings.py), per model.

The model's evidence (candidate pool, path costs, NLLs, n-gram scores) is gathered once per fit row, as
FusedConverter.candidates gathers it, and a grid search over the weights (the confidence gate
`confident_nll` included) maximises pooled Acc@1 (NFKC), Recall@5 breaking ties, among the grid
points that break no more rows than they fix on any one dev set (a gain on chat must not be paid
for on another set). The model gets a say only if the best grid point fixes significantly more
fit rows than it breaks (one-sided sign test, p < 0.05); otherwise the fitted weights give it
none, so noise on the fit rows is not mistaken for a gain.

Run through benchmarks/fused_quality.py --fit, which samples the dev sets, fits on the even rows
and scores every system on the odd ones.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Sequence

from karukan_engine.conversion.fused import FusedConverter
from karukan_engine.conversion.model_slot import ModelSlot
from karukan_engine.conversion.ranking import Evidence, rank
from karukan_engine.conversion.settings import FusionWeights
from karukan_engine.core.types import ConversionRequest
from karukan_engine.evaluation.metrics import EvalItem, Scores
from karukan_engine.kana import nfkc

GRID = {
    "lattice": (0.5, 1.0, 2.0, 4.0),
    "nll": (0.0, 0.25),
    "nll_total": (0.0, 0.025, 0.05, 0.1),
    "ngram": (0.0, 0.05, 0.1, 0.15, 0.25, 0.4),
    "unaligned": (2.0, 8.0),
    "confident_nll": (None, 0.05),
    "margin": (0.0, 0.5, 1.0, 2.0),
}
# No say for the model: every candidate scores the same, so the pool keeps the dictionary's order.
NO_MODEL_SAY = FusionWeights(lattice=0.0, nll=0.0, learning=1.0, unaligned=0.0)
SIGNIFICANCE = 0.05
N_CANDIDATES = 5


# --- statistics -------------------------------------------------------------------------------

def sign_test(wins: int, losses: int, two_sided: bool = True) -> float:
    """p of at least this many wins among wins + losses discordant pairs if either side were as
    likely (ties carry no information); two-sided doubles the smaller tail."""
    n = wins + losses
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, k) for k in range(wins, n + 1)) / 2 ** n
    if not two_sided:
        return tail
    lower = sum(math.comb(n, k) for k in range(0, wins + 1)) / 2 ** n
    return min(1.0, 2 * min(tail, lower))


@dataclass(frozen=True)
class Paired:
    """Item-by-item comparison of a system's top candidate with the dictionary's (NFKC)."""
    wins: int
    losses: int

    @property
    def p(self) -> float:
        return sign_test(self.wins, self.losses)


def top_correct(item: EvalItem, candidates: Sequence[str]) -> bool:
    return bool(candidates) and nfkc(candidates[0]) in {nfkc(o) for o in item.outputs}


def paired(items: Sequence[EvalItem], system: Sequence[Sequence[str]], baseline: Sequence[Sequence[str]]) -> Paired:
    wins = losses = 0
    for item, ours, theirs in zip(items, system, baseline):
        a, b = top_correct(item, ours), top_correct(item, theirs)
        wins += a and not b
        losses += b and not a
    return Paired(wins, losses)


# --- fitting ----------------------------------------------------------------------------------

def ranked_surfaces(item: EvalItem, evidence: list[Evidence], weights: FusionWeights) -> list[str]:
    return [c.surface for c in rank(evidence, len(item.reading), weights)][:N_CANDIDATES]


def summary_of(items: Sequence[EvalItem], outputs: Sequence[Sequence[str]]) -> dict:
    scores = Scores()
    for item, candidates in zip(items, outputs):
        scores.add(item, list(candidates), 0.0)
    return scores.summary()


def grid_points(grid: dict[str, tuple] = GRID) -> list[FusionWeights]:
    points = []
    for lattice, nll, nll_total, ngram, unaligned, gate, margin in itertools.product(*(grid[k] for k in GRID)):
        if gate is not None and nll == nll_total == ngram == 0:
            continue   # the gate only gates the model's terms
        points.append(FusionWeights(lattice=lattice, nll=nll, learning=1.0, unaligned=unaligned,
                                    nll_total=nll_total, confident_nll=gate, ngram=ngram, margin=margin))
    return points


def never_worse(items: Sequence[EvalItem], outputs: Sequence[Sequence[str]],
                dictionary: Sequence[Sequence[str]], groups: Sequence[str]) -> bool:
    """No group (dev set) where these outputs break more rows than they fix."""
    net: dict[str, int] = {}
    for item, ours, theirs, group in zip(items, outputs, dictionary, groups):
        net[group] = net.get(group, 0) + top_correct(item, ours) - top_correct(item, theirs)
    return all(v >= 0 for v in net.values())


def fit(items: list[EvalItem], evidence: list[list[Evidence]], dictionary: list[list[str]],
        groups: Sequence[str] | None = None, extra: Sequence[FusionWeights] = (),
        grid: dict[str, tuple] = GRID) -> dict:
    """The best grid point on these rows (never worse than the dictionary on any group when one
    is), and whether it beats the dictionary significantly. groups: each row's dev set; extra:
    points tried besides the grid (e.g. the weights a rerank fine-tune learned); grid: GRID or
    a narrower one with the same keys (an ablation)."""
    groups = list(groups) if groups is not None else ["all"] * len(items)
    best, best_key = NO_MODEL_SAY, (False, -1.0, -1.0)
    for weights in [*grid_points(grid), *extra]:
        outputs = [ranked_surfaces(i, e, weights) for i, e in zip(items, evidence)]
        summary = summary_of(items, outputs)
        key = (never_worse(items, outputs, dictionary, groups), summary["acc1_nfkc"], summary["recall5"])
        if key > best_key:
            best, best_key = weights, key
    return choose_weights(items, evidence, dictionary, best)


def choose_weights(items: list[EvalItem], evidence: list[list[Evidence]], dictionary: list[list[str]],
                   best: FusionWeights) -> dict:
    """`best` only if it fixes significantly more rows than it breaks; else no model say."""
    outputs = [ranked_surfaces(i, e, best) for i, e in zip(items, evidence)]
    versus = paired(items, outputs, dictionary)
    p = sign_test(versus.wins, versus.losses, two_sided=False)
    significant = versus.wins > versus.losses and p < SIGNIFICANCE
    return {"weights": best if significant else NO_MODEL_SAY, "best_grid_point": best.__dict__,
            "fit_wins": versus.wins, "fit_losses": versus.losses, "fit_p_one_sided": p,
            "significant": significant, "fit_acc1_nfkc": summary_of(items, outputs)["acc1_nfkc"]}


def request_of(item: EvalItem) -> ConversionRequest:
    return ConversionRequest(item.reading, item.context)


def gather_evidence(fused: FusedConverter, slot: ModelSlot, items: Sequence[EvalItem]) -> list[list[Evidence]]:
    """What FusedConverter.candidates ranks, per item: the same base N-best, pool and evidence
    (tests/benchmarks/test_conversion_fused_quality.py checks that ranking it gives exactly its answer)."""
    evidence = []
    for item in items:
        request = request_of(item)
        base = fused.base.candidates(request, max(N_CANDIDATES, fused.settings.lattice_nbest))
        evidence.append(fused.evidence(slot, request, base))
    return evidence
