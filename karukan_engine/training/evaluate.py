"""Stage 6: evaluate the exported model alone (llama.cpp, as the runtime runs it).

Acc@1 exact / NFKC from greedy and from beam 5, Recall@5 from beam 5, mean MinCER of the greedy
output; perplexity per predicted token (surface + EOS) of the PyTorch weights on the held-out
pairs. Writes JSON to <work>/eval/report.json (figures only; misses are kept out of the repo).
"""

from __future__ import annotations

import json
import math
import random
import time
from dataclasses import replace
from pathlib import Path

from karukan_engine.evaluation.metrics import EvalItem, Scores, load_items
from karukan_engine.training.pairs import Pair, read_pairs
from karukan_engine.training.paths import REPO_ROOT, stage_dir


def items_of_pairs(pairs: list[Pair]) -> list[EvalItem]:
    return [EvalItem(p.reading, (p.surface,), p.context) for p in pairs]


def score_model(model, items: list[EvalItem], beam: int = 5) -> dict[str, dict[str, float]]:
    """Greedy and beam figures for a karukan_engine.neural NeuralModel."""
    greedy, beamed = Scores(), Scores()
    for item in items:
        started = time.perf_counter()
        top = model.greedy(item.reading, item.context).text
        greedy.add(item, [top], time.perf_counter() - started)
        started = time.perf_counter()
        candidates = [g.text for g in model.beam(item.reading, item.context, beam=beam)]
        beamed.add(item, candidates, time.perf_counter() - started)
    greedy_summary = greedy.summary()
    greedy_summary.pop("recall5")  # greedy has a single candidate
    return {"greedy": greedy_summary, f"beam{beam}": beamed.summary()}


def perplexity(weights: Path, pairs: list[Pair]) -> float:
    """exp(mean NLL per surface token + EOS) of the PyTorch weights, given prompt and context."""
    import torch

    from karukan_engine.training.data import encode_pair
    from karukan_engine.training.model import CharGPT, ModelConfig
    from karukan_engine.training.train import mean_loss
    from karukan_engine.training.vocab import CharTokenizer

    payload = torch.load(weights, weights_only=False, map_location="cpu")
    model = CharGPT(ModelConfig(**payload["config"]))
    model.load_state_dict(payload["model"])
    tokenizer = CharTokenizer(payload["tokens"])
    examples = [e for e in (encode_pair(tokenizer, p, model.config.n_ctx) for p in pairs) if e]
    return math.exp(mean_loss(model, examples, 4096, "cpu"))


def dev_sets() -> dict[str, list[EvalItem]]:
    """The dictionary issue's dev sets, when present in the package data."""
    directory = REPO_ROOT / "karukan_engine" / "data" / "eval"
    return {path.name: load_items(path) for path in sorted(directory.glob("*.tsv"))}


def evaluate(model_dir: Path, weights: Path | None, limit: int = 1000, seed: int = 0,
             out: Path | None = None, threads: int = 2) -> dict:
    from karukan_engine.neural.model import ModelOptions, load_model

    test_pairs = read_pairs(stage_dir("pairs") / "test.jsonl")[:limit]
    sets = {"heldout (gimp-help-ja + gnome-user-docs-ja)": items_of_pairs(test_pairs)}
    heldout_pairs: list[Pair] = []
    for path in sorted((stage_dir("pairs") / "heldout").glob("*.jsonl")):
        pairs = read_pairs(path)[:limit]
        heldout_pairs += pairs
        sets[f"heldout {path.stem}"] = items_of_pairs(pairs)
        sets[f"heldout {path.stem} (no context)"] = items_of_pairs([replace(p, context="") for p in pairs])
    rng = random.Random(seed)
    for name, items in dev_sets().items():
        sets[name] = rng.sample(items, min(limit, len(items)))
    report: dict = {"model_dir": model_dir.name, "sets": {}}
    with load_model(model_dir, ModelOptions(n_threads=threads)) as model:
        for name, items in sets.items():
            report["sets"][name] = score_model(model, items)
    if weights is not None:
        report["heldout_perplexity"] = perplexity(weights, test_pairs)
        if heldout_pairs:
            report["general_heldout_perplexity"] = perplexity(weights, heldout_pairs)
    out = out or stage_dir("eval") / "report.json"
    out.write_text(json.dumps(report, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    return report
