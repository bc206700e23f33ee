"""Symbols by reading from Mozc's symbol table (やじるし → → ← ↑ ↓ ⇒, まる → ○ ● ◎, ほし → ☆ ★,
かっこ → 「」『』【】 …), annotated with the symbol's description (「[記号]矢印（右）」)."""

from __future__ import annotations

from karukan_engine.core.types import Candidate, Source
from karukan_engine.rewriters.placement import Addition
from karukan_engine.rewriters.request import RewriteRequest

EARLY_COUNT = 5
EARLY_AT = 3


def annotation(description: str) -> str:
    return f"[記号]{description}" if description else "[記号]"


def additions(request: RewriteRequest) -> list[Addition]:
    found = [Candidate(symbol, annotation(description), Source.VARIANT)
             for symbol, description in request.tables.symbols.get(request.reading, ())]
    return [Addition(tuple(found[:EARLY_COUNT]), EARLY_AT), Addition(tuple(found[EARLY_COUNT:]))]
