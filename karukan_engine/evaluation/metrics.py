"""Conversion accuracy metrics over (reading, acceptable outputs[, left context]) items."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

from karukan_engine.kana import nfkc


@dataclass(frozen=True)
class EvalItem:
    reading: str
    outputs: tuple[str, ...]
    context: str = ""


def load_items(path: Path) -> list[EvalItem]:
    """TSV: reading<TAB>output[<TAB>output...] ('#' starts a comment line).
    JSONL: {"reading": str, "outputs": [str, ...] | "output": str, "context": str}."""
    items = []
    text = path.read_text(encoding="utf-8")
    jsonl = path.suffix in (".jsonl", ".json")
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip() or (not jsonl and line.startswith("#")):
            continue
        if jsonl:
            try:
                row = json.loads(line)
                outputs = row.get("outputs") or [row["output"]]
                items.append(EvalItem(row["reading"], tuple(outputs), row.get("context", "")))
            except (ValueError, KeyError, TypeError) as exc:
                raise ValueError(f"{path.name} line {number}: {exc}") from exc
        else:
            fields = line.split("\t")
            if len(fields) < 2 or not fields[0]:
                raise ValueError(f"{path.name} line {number}: expected reading<TAB>output")
            items.append(EvalItem(fields[0], tuple(f for f in fields[1:] if f)))
    return items


def edit_distance(a: str, b: str) -> int:
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i]
        for j, cb in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb)))
        previous = current
    return previous[-1]


def char_error_rate(hypothesis: str, reference: str) -> float:
    return edit_distance(hypothesis, reference) / max(1, len(reference))


@dataclass
class Scores:
    n: int = 0
    exact: int = 0
    exact_nfkc: int = 0
    recall5: int = 0
    cer_sum: float = 0.0
    seconds: float = 0.0
    misses: list[dict] = field(default_factory=list)

    def add(self, item: EvalItem, candidates: list[str], seconds: float) -> None:
        top = candidates[0] if candidates else ""
        gold = set(item.outputs)
        gold_nfkc = {nfkc(o) for o in item.outputs}
        self.n += 1
        self.exact += top in gold
        self.exact_nfkc += nfkc(top) in gold_nfkc
        self.recall5 += any(c in gold for c in candidates[:5])
        self.cer_sum += min(char_error_rate(top, o) for o in item.outputs)
        self.seconds += seconds
        if top not in gold:
            self.misses.append({"reading": item.reading, "expected": list(item.outputs), "got": top})

    def summary(self) -> dict[str, float]:
        n = max(1, self.n)
        return {
            "items": self.n,
            "acc1_exact": self.exact / n,
            "acc1_nfkc": self.exact_nfkc / n,
            "recall5": self.recall5 / n,
            "mean_min_cer": self.cer_sum / n,
            "ms_per_item": 1000 * self.seconds / n,
        }


def format_summary(name: str, summary: dict[str, float]) -> str:
    return (f"{name}: n={summary['items']}  Acc@1 {100 * summary['acc1_exact']:.1f}%  "
            f"Acc@1(NFKC) {100 * summary['acc1_nfkc']:.1f}%  Recall@5 {100 * summary['recall5']:.1f}%  "
            f"MinCER {summary['mean_min_cer']:.4f}  {summary['ms_per_item']:.2f} ms/item")


def evaluate(items: Iterable[EvalItem], convert, n: int = 5) -> Scores:
    """convert(item, n) -> candidate surfaces, best first."""
    import time

    scores = Scores()
    for item in items:
        started = time.perf_counter()
        candidates = convert(item, n)
        scores.add(item, candidates, time.perf_counter() - started)
    return scores
