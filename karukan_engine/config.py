"""The user's configuration: one TOML file with defaults and validation.

Location: $KARUKAN_CONFIG, else $XDG_CONFIG_HOME/karukan/config.toml (~/.config/...).
This module validates the tables the session owns — [input], [session], [learning] — and keeps
every other table (e.g. [conversion], [models]) as parsed TOML in `Config.sections` for the layer
that owns it to validate.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any, Mapping

if sys.version_info >= (3, 11):
    import tomllib as _toml
else:  # pragma: no cover - Python 3.10 only
    import tomli as _toml

TomlError = _toml.TOMLDecodeError

INPUT_MODES = ("hiragana", "katakana", "halfwidth_katakana", "fullwidth_alphanumeric", "alphanumeric")
PUNCTUATION_STYLES = ("、。", "，．", "、．", "，。", ",.")
WIDTHS = ("full", "half")


class ConfigError(ValueError):
    """A config file that cannot be used; the message names the file and the key."""


def parse_toml(text: str) -> dict[str, Any]:
    return _toml.loads(text)


@dataclass(frozen=True)
class InputSettings:
    mode: str = "hiragana"          # input mode when a session starts
    romaji_table: str = ""          # a Mozc-style TSV (input, output, pending); "" = the bundled one
    punctuation: str = "、。"       # what , and . type
    symbol_width: str = "full"      # ASCII symbols in kana modes
    digit_width: str = "half"       # digits in kana modes
    letter_width: str = "full"      # letters that no romaji rule matched

    def check(self) -> None:
        _one_of("input.mode", self.mode, INPUT_MODES)
        _one_of("input.punctuation", self.punctuation, PUNCTUATION_STYLES)
        for name in ("symbol_width", "digit_width", "letter_width"):
            _one_of(f"input.{name}", getattr(self, name), WIDTHS)


@dataclass(frozen=True)
class SessionSettings:
    page_size: int = 9              # candidates per page (labels 1..page_size)
    live_conversion: bool = True    # show the converter's best guess while typing
    context_chars: int = 20         # left context (surrounding text) kept for the converter
    keymap: str = ""                # a TOML keymap merged over the default; "" = default only

    def check(self) -> None:
        if not 1 <= self.page_size <= 9:
            raise ConfigError("session.page_size must be between 1 and 9")
        if not 0 <= self.context_chars <= 1000:
            raise ConfigError("session.context_chars must be between 0 and 1000")


@dataclass(frozen=True)
class LearningSettings:
    enabled: bool = True            # let the converter learn from commits

    def check(self) -> None:
        return None


@dataclass(frozen=True)
class Config:
    input: InputSettings = field(default_factory=InputSettings)
    session: SessionSettings = field(default_factory=SessionSettings)
    learning: LearningSettings = field(default_factory=LearningSettings)
    # Tables owned by other layers, as parsed; each layer validates its own.
    sections: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    path: Path | None = None        # where it was loaded from, if anywhere

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any], source: str = "<config>", base_dir: Path | None = None) -> "Config":
        try:
            input_settings = _section(InputSettings, data.get("input", {}), "input")
            session_settings = _section(SessionSettings, data.get("session", {}), "session")
            learning = _section(LearningSettings, data.get("learning", {}), "learning")
        except ConfigError as exc:
            raise ConfigError(f"{source}: {exc}") from None
        if base_dir is not None:
            # Relative paths in a config file are relative to that file.
            input_settings = replace(input_settings, romaji_table=_resolve(input_settings.romaji_table, base_dir))
            session_settings = replace(session_settings, keymap=_resolve(session_settings.keymap, base_dir))
        others = {k: v for k, v in data.items() if k not in ("input", "session", "learning")}
        return cls(input_settings, session_settings, learning, MappingProxyType(others))

    @classmethod
    def from_toml(cls, text: str, source: str = "<config>", base_dir: Path | None = None) -> "Config":
        try:
            data = parse_toml(text)
        except TomlError as exc:
            raise ConfigError(f"{source}: not valid TOML ({exc})") from None
        return cls.from_mapping(data, source, base_dir)

    @classmethod
    def load(cls, path: str | Path | None = None) -> "Config":
        """The config at `path`, else at default_path(); defaults when that file does not exist."""
        explicit = path is not None
        target = Path(path) if explicit else default_path()
        try:
            text = target.read_text(encoding="utf-8")
        except FileNotFoundError:
            if explicit:
                raise ConfigError(f"{target}: no such config file") from None
            return cls()
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"{target}: cannot read config ({exc})") from None
        config = cls.from_toml(text, str(target), target.parent)
        return replace(config, path=target)


def default_path() -> Path:
    explicit = os.environ.get("KARUKAN_CONFIG")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "karukan" / "config.toml"


def _section(cls: type, table: Any, name: str):
    if not isinstance(table, Mapping):
        raise ConfigError(f"[{name}] must be a table")
    known = {f.name: f for f in fields(cls)}
    unknown = sorted(set(table) - set(known))
    if unknown:
        raise ConfigError(f"unknown key {name}.{unknown[0]}; known: {', '.join(known)}")
    values = {}
    for key, value in table.items():
        default = known[key].default
        if type(value) is not type(default):
            raise ConfigError(f"{name}.{key} must be a {type(default).__name__}, not {type(value).__name__}")
        values[key] = value
    settings = cls(**values)
    settings.check()
    return settings


def _one_of(key: str, value: str, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise ConfigError(f"{key} must be one of {', '.join(repr(a) for a in allowed)}, not {value!r}")


def _resolve(value: str, base_dir: Path) -> str:
    if not value:
        return value
    path = Path(value).expanduser()
    return str(path if path.is_absolute() else base_dir / path)
