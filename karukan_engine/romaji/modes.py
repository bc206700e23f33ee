"""Input modes: how typed keys are written. The one list of their names (the config, the session
and the frontends' mode menus all take them from here)."""

from __future__ import annotations

import enum

from karukan_engine.romaji.composer import Script


class InputMode(enum.Enum):
    HIRAGANA = "hiragana"
    KATAKANA = "katakana"
    HALFWIDTH_KATAKANA = "halfwidth_katakana"
    FULLWIDTH_ALPHANUMERIC = "fullwidth_alphanumeric"
    HALFWIDTH_ALPHANUMERIC = "alphanumeric"

    @property
    def script(self) -> Script:
        return _SCRIPTS[self]

    @property
    def is_alphanumeric(self) -> bool:
        return self in (InputMode.FULLWIDTH_ALPHANUMERIC, InputMode.HALFWIDTH_ALPHANUMERIC)

    @classmethod
    def parse(cls, value: "InputMode | str") -> "InputMode":
        if isinstance(value, InputMode):
            return value
        key = str(value).strip().lower().replace("-", "_")
        if key in _ALIASES:
            return _ALIASES[key]
        raise ValueError(f"unknown input mode {value!r}; one of: {', '.join(m.value for m in cls)}")


_SCRIPTS = {
    InputMode.HIRAGANA: Script.HIRAGANA,
    InputMode.KATAKANA: Script.KATAKANA,
    InputMode.HALFWIDTH_KATAKANA: Script.HALF_KATAKANA,
    InputMode.FULLWIDTH_ALPHANUMERIC: Script.FULL_ASCII,
    InputMode.HALFWIDTH_ALPHANUMERIC: Script.HALF_ASCII,
}

_ALIASES = {m.value: m for m in InputMode}
_ALIASES.update({m.name.lower(): m for m in InputMode})
_ALIASES.update({
    "full_katakana": InputMode.KATAKANA, "half_katakana": InputMode.HALFWIDTH_KATAKANA,
    "full_alnum": InputMode.FULLWIDTH_ALPHANUMERIC, "full_ascii": InputMode.FULLWIDTH_ALPHANUMERIC,
    "half_alnum": InputMode.HALFWIDTH_ALPHANUMERIC, "half_ascii": InputMode.HALFWIDTH_ALPHANUMERIC,
    "halfwidth_alphanumeric": InputMode.HALFWIDTH_ALPHANUMERIC, "latin": InputMode.HALFWIDTH_ALPHANUMERIC,
    "ひらがな": InputMode.HIRAGANA, "カタカナ": InputMode.KATAKANA,
})
