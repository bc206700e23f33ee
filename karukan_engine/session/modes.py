"""Session states (the input modes are karukan_engine.romaji.modes.InputMode)."""

from __future__ import annotations

import enum


class State(enum.Enum):
    DIRECT = "direct"                  # IME off: every key goes to the application
    PRECOMPOSITION = "precomposition"  # IME on, nothing typed
    COMPOSITION = "composition"        # kana being typed
    CONVERSION = "conversion"          # segments with candidates
    SUGGESTION = "suggestion"          # a completion of the reading selected from the suggestion list
