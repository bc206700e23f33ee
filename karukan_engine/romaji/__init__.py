"""Romaji → kana: a Mozc-compatible rule table and the incremental composer over it."""

from karukan_engine.romaji.composer import (
    PUNCTUATION_STYLES,
    Composer,
    ComposerSettings,
    Script,
    Unit,
)
from karukan_engine.romaji.table import Match, RomajiTable, Rule, TableError

__all__ = [
    "PUNCTUATION_STYLES",
    "Composer",
    "ComposerSettings",
    "Match",
    "RomajiTable",
    "Rule",
    "Script",
    "TableError",
    "Unit",
]
