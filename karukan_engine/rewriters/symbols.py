"""Symbols by reading from Mozc's symbol table (やじるし → → ← ↑ ↓ ⇒, まる → ○ ● ◎, ほし → ☆ ★,
かっこ → 「」『』【】 …), annotated with the symbol's description (「[記号]矢印（右）」)."""

from __future__ import annotations

import unicodedata

from karukan_engine.core.types import Candidate, Source
from karukan_engine.rewriters.placement import Addition
from karukan_engine.rewriters.request import RewriteRequest

EARLY_COUNT = 5
EARLY_AT = 3


def annotation(description: str) -> str:
    return f"[記号]{description}" if description else "[記号]"


def is_mark(text: str) -> bool:
    """No letter in it (arrows, circles, brackets, stars): what a user types a symbol reading
    for. The table also files letters under readings (radicals 丿, hentaigana, Greek Χ for かい,
    々 for どう); those go to the end, behind the words."""
    return bool(text) and not any(unicodedata.category(ch).startswith("L") for ch in text)


def additions(request: RewriteRequest) -> list[Addition]:
    found = [Candidate(symbol, annotation(description), Source.VARIANT)
             for symbol, description in request.tables.symbols.get(request.reading, ())]
    marks = [c for c in found if is_mark(c.surface)]
    early = marks[:EARLY_COUNT]
    return [Addition(tuple(early), EARLY_AT), Addition(tuple(c for c in found if c not in early))]
