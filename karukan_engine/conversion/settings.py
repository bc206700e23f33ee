"""Settings of the conversion pipeline: the `[conversion]` table of the config, with defaults.

The fusion weights are fitted per model on the dev sets by `benchmarks/fused_quality.py --fit`
(never on AJIMEE-Bench); FITTED_WEIGHTS holds the results, and the config's
`[conversion.weights]` table overrides them.
"""

from __future__ import annotations

import math

from dataclasses import dataclass, field, fields, replace
from typing import Any, Mapping

from karukan_engine.conversion.chunking import ChunkLimits

SCHEMES = ("rerank", "verify")


@dataclass(frozen=True)
class FusionWeights:
    """One score per whole-reading candidate; lower is better.

    score = lattice * (path cost / 1000 per reading char)
          + nll * (model NLL per surface char)
          + nll_total * (model NLL of the whole surface)
          - ngram * (character n-gram log P of the surface after the left context)
          - learning * (learning score)
          + unaligned  (when the dictionary cannot produce the surface at all)
    """

    lattice: float = 1.0
    nll: float = 0.5
    learning: float = 1.0
    unaligned: float = 8.0
    # The whole surface's NLL is log P(surface | reading, context): unlike the per-character
    # mean it does not favour longer spellings of the same reading (きょうは over 今日は).
    nll_total: float = 0.0
    # The model changes the first candidate only when its NLL per character of that candidate is
    # at most this (None: always); see karukan_engine.conversion.ranking.rank.
    confident_nll: float | None = None
    # The character n-gram's weight (karukan_engine/lm/char_ngram.py; loaded only when > 0).
    ngram: float = 0.0
    # Another candidate goes before the dictionary's first only when its score is lower by at
    # least this: a near tie is no reason to overrule the dictionary.
    margin: float = 0.0
    # The base converter's candidates keep its order among themselves; the score places only the
    # model's and learning's. For a base that judged its paths with language models (the
    # product's lattice) and a network whose NLL has no weight: reordering the base by its raw
    # path cost would undo that judgement (docs/benchmarks.md "The base's order stands").
    keep_base_order: bool = False

    def __post_init__(self) -> None:
        if not all(v >= 0 for v in (self.lattice, self.nll, self.learning, self.unaligned, self.nll_total,
                                    self.ngram, self.margin)):   # NaN fails too
            raise ValueError("fusion weights must be non-negative numbers")
        if self.confident_nll is not None and not self.confident_nll >= 0:
            raise ValueError("confident_nll must be a non-negative number")

    @property
    def uses_model_score(self) -> bool:
        return self.nll > 0 or self.nll_total > 0 or self.ngram > 0

    @property
    def uses_nll(self) -> bool:
        """The network's NLL counts (a weight, or the gate that reads it): without it the NLL
        pass would be work for nothing."""
        return self.nll > 0 or self.nll_total > 0 or (self.confident_nll is not None and self.uses_model_score)


# Weights fitted for a model by `benchmarks/fused_quality.py --fit` (even rows of the dev sets),
# used when the config sets no [conversion.weights]. Models not listed get FusionWeights().
# karukan-bundled (2.6 M, general-domain corpus, 195 minutes) with its Kneser-Ney character
# 5-gram: grid over lattice, NLL, whole-surface NLL, n-gram, unaligned, gate and margin, no dev
# set allowed to lose; on 2,340 fit rows of six dev sets the best point fixes 56 rows and breaks
# 22 (one-sided p < 0.001). It gives the network's NLL no weight: the model proposes candidates
# (greedy, beam), the n-grams and the lattice judge them. The held-out rows per set:
# docs/benchmarks.md "Quality". Since the lattice judges its paths with the word and character
# n-grams itself, its order stands (keep_base_order) and the network's text no longer comes
# first (an infinite margin): where it did, it was right on 3 of 30 rows, live text included
# (docs/benchmarks.md "The base's order stands"). It joins the candidate list.
FITTED_WEIGHTS: dict[str, FusionWeights] = {
    "karukan-bundled": FusionWeights(lattice=2.0, nll=0.0, learning=1.0, unaligned=8.0, nll_total=0.0,
                                     ngram=0.1, margin=math.inf, keep_base_order=True),
}

# Space budgets (ms) per model, used when the config sets no space_budget_ms: the bundled model
# must keep Space p95 within 150 ms on 2 cores (issue #12); a downloaded model's beam and NLL
# pass take 0.7-2 s there (README "Models") and are what its users downloaded it for.
SPACE_BUDGETS: dict[str, float] = {"karukan-bundled": 100.0}


@dataclass(frozen=True)
class ConversionSettings:
    live_budget_ms: float = 50.0      # per live update, key to refined preedit
    # Explicit conversion (Space): the model's greedy text, beam and NLL pass run only while the
    # stage-timing predictor says they fit (docs/conversion.md "Space budget"). math.inf (the
    # default): always, unless SPACE_BUDGETS has a budget for the model.
    space_budget_ms: float = math.inf
    # Compute Space's conversion while the user pauses, so that Space finds it ready
    # (docs/conversion.md "Space prepared while the user pauses").
    prepare_space: bool = True
    # With a live service (the desktop) and a Space budget, Space shows the lattice and n-gram's
    # conversion at once when its preparation is not ready, and the model's conversion replaces
    # it when it comes, unless a key came first (docs/conversion.md "Quick Space"). False: Space
    # waits for the model's work that fits its budget.
    quick_space: bool = True
    chunk_chars: int = 30
    chunk_symbols: int = 1
    chunk_digits: int = 0
    context_chars: int = 40           # left context offered to the model; it keeps its family's share (10 / 40)
    cache_capacity: int = 1024
    num_candidates: int = 9
    beam_width: int = 5
    lattice_nbest: int = 10
    max_new_tokens: int = 50          # upstream's output budget
    scheme: str = "rerank"            # "rerank" (score every candidate) or "verify" (Zenzai-style)
    verify_rounds: int = 3
    workers: int = 2                  # scheduler worker threads (sharing one batched decoder per model)
    light_model: str = ""             # a models.toml id or GGUF path used when the main one is late
    weights: FusionWeights = field(default_factory=FusionWeights)

    def __post_init__(self) -> None:
        if self.scheme not in SCHEMES:
            raise ValueError(f"conversion.scheme must be one of {', '.join(SCHEMES)}")
        if (self.live_budget_ms <= 0 or not self.space_budget_ms > 0 or self.num_candidates < 1
                or self.beam_width < 1):
            raise ValueError("conversion settings must be positive")
        if self.workers < 1 or self.cache_capacity < 1 or self.verify_rounds < 0:
            raise ValueError("conversion settings must be positive")
        ChunkLimits(self.chunk_chars, self.chunk_symbols, self.chunk_digits)  # validates

    def for_model(self, model_id: str | None) -> "ConversionSettings":
        """These settings with the weights fitted for `model_id` when none were configured, and
        its Space budget when none was."""
        settings = self
        if self.weights == FusionWeights() and model_id in FITTED_WEIGHTS:
            settings = replace(settings, weights=FITTED_WEIGHTS[model_id])
        if math.isinf(self.space_budget_ms) and model_id in SPACE_BUDGETS:
            settings = replace(settings, space_budget_ms=SPACE_BUDGETS[model_id])
        return settings

    @property
    def chunk_limits(self) -> ChunkLimits:
        return ChunkLimits(self.chunk_chars, self.chunk_symbols, self.chunk_digits)

    @classmethod
    def from_mapping(cls, table: Mapping[str, Any]) -> "ConversionSettings":
        """Build from a parsed `[conversion]` TOML table; unknown keys are an error."""
        known = {f.name for f in fields(cls)}
        unknown = set(table) - known
        if unknown:
            raise ValueError(f"unknown conversion settings: {', '.join(sorted(unknown))}")
        values = dict(table)
        for flag in ("prepare_space", "quick_space"):
            if flag in values and not isinstance(values[flag], bool):
                raise ValueError(f"conversion.{flag} must be true or false")
        if "weights" in values:
            weights = values["weights"]
            wknown = {f.name for f in fields(FusionWeights)}
            if not isinstance(weights, Mapping) or set(weights) - wknown:
                raise ValueError("conversion.weights takes: " + ", ".join(sorted(wknown)))
            if not isinstance(weights.get("keep_base_order", False), bool):
                raise ValueError("conversion.weights.keep_base_order must be true or false")
            values["weights"] = replace(FusionWeights(), **{k: v if k == "keep_base_order" else float(v)
                                                            for k, v in weights.items()})
        return replace(cls(), **values)

    @classmethod
    def from_config(cls, path=None) -> "ConversionSettings":
        """The `[conversion]` table of the user's config (karukan_engine.config), with defaults.

        A bad value falls back to its default on its own, with a warning naming the key: a
        damaged config never stops the engine (ConfigError only for an explicit path that does
        not exist)."""
        import logging

        from karukan_engine.config import Config

        config = Config.load(path)
        where = config.path or "config"
        table = config.sections.get("conversion", {})
        if not isinstance(table, Mapping):
            logging.getLogger(__name__).warning("%s: [conversion] must be a table; using its defaults", where)
            return cls()
        accepted: dict[str, Any] = {}
        for key, value in table.items():
            try:
                cls.from_mapping({**accepted, key: value})
            except (ValueError, TypeError, OverflowError, RecursionError) as exc:
                logging.getLogger(__name__).warning("%s: [conversion] %s: %s; using its default", where, key, exc)
                continue
            accepted[key] = value
        return cls.from_mapping(accepted)
