"""The user's configuration: one TOML file with defaults and validation.

Location: $KARUKAN_CONFIG, else $XDG_CONFIG_HOME/karukan/config.toml (~/.config/...).
This module validates the tables the session and the frontends own — [input], [session], [learning],
[suggest], [rewriters], [ui] — and keeps
every other table (e.g. [conversion], [models]) as parsed TOML in `Config.sections` for the layer
that owns it to validate.

A damaged file never stops the engine: each bad value falls back to its default on its own (as
fcitx5 does), with one message per problem in `Config.problems`. Privacy never weakens on error:
an invalid `[learning] enabled`, or a file that cannot be read or parsed at all (it may have said
`enabled = false`), leaves learning off until the file is fixed.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any, Callable, Mapping

from karukan_engine.core.user_files import MAX_SETTINGS_BYTES, read_user_text
from karukan_engine.romaji.composer import PUNCTUATION_STYLES, WIDTHS
from karukan_engine.romaji.modes import InputMode

if sys.version_info >= (3, 11):
    import tomllib as _toml
else:  # pragma: no cover - Python 3.10 only
    import tomli as _toml

TomlError = _toml.TOMLDecodeError



class ConfigError(ValueError):
    """A config file that cannot be used; the message names the file and the key."""


def parse_toml(text: str) -> dict[str, Any]:
    """Parse TOML; TomlError for anything that is not usable TOML, including nesting too deep
    for the parser (a 50,000-deep array) and values it cannot hold."""
    try:
        return _toml.loads(text)
    except TomlError:
        raise
    except (RecursionError, MemoryError, ValueError, OverflowError) as exc:
        raise TomlError(f"cannot be parsed ({type(exc).__name__})") from None


@dataclass(frozen=True)
class InputSettings:
    mode: str = "hiragana"          # input mode when a session starts
    romaji_table: str = ""          # a Mozc-style TSV (input, output, pending); "" = the bundled one
    punctuation: str = "、。"       # what , and . type
    symbol_width: str = "full"      # ASCII symbols in kana modes
    digit_width: str = "half"       # digits in kana modes
    letter_width: str = "full"      # letters that no romaji rule matched

    def check(self) -> None:
        _check_all(self, "input")


@dataclass(frozen=True)
class SessionSettings:
    page_size: int = 9              # candidates per page (labels 1..page_size)
    live_conversion: bool = True    # show the converter's best guess while typing
    # between keys, convert the readings the next letter can make (its key then finds them)
    anticipate: bool = True
    context_chars: int = 40         # left context kept for the converter (zenz reads 40; each model cuts its own)
    keymap: str = ""                # a TOML keymap merged over the default; "" = default only

    def check(self) -> None:
        _check_all(self, "session")


@dataclass(frozen=True)
class LearningSettings:
    enabled: bool = True            # let the converter learn from commits

    def check(self) -> None:
        _check_all(self, "learning")


@dataclass(frozen=True)
class SuggestSettings:
    enabled: bool = True            # completions while typing (learned, then dictionary); off: none computed
    count: int = 6                  # at most this many in the list (one page)

    def check(self) -> None:
        _check_all(self, "suggest")


@dataclass(frozen=True)
class RewriterSettings:
    """Candidates added after ranking (karukan_engine.rewriters); each can be turned off."""

    emoji: bool = True              # 絵文字 by reading (ねこ → 🐱) and `:name` queries typed in Latin
    symbols: bool = True            # やじるし → → ← ↑ ↓ ⇒, まる → ○ ● ◎ …
    emoticons: bool = True          # 顔文字 (かおもじ, にこにこ …)
    dates: bool = True              # きょう → 2026/12/02 …, いま → 14:05 …
    numbers: bool = True            # 100 → 百 壱百 Ⅽ 0x64 …, ひゃく → 100
    single_kanji: bool = True       # every kanji of the reading, at the end of the list

    def check(self) -> None:
        _check_all(self, "rewriters")


CANDIDATE_LAYOUTS = ("vertical", "horizontal")


@dataclass(frozen=True)
class UISettings:
    candidate_layout: str = "vertical"   # the candidate window: one candidate a line (Mozc's), or a strip

    def check(self) -> None:
        _check_all(self, "ui")


# Privacy settings: the value used when the file's value cannot be used (never the weaker one).
PRIVATE_FALLBACK: dict[tuple[str, str], Any] = {("learning", "enabled"): False}


def _between(low: int, high: int) -> Callable[[Any], str | None]:
    return lambda v: None if low <= v <= high else f"must be between {low} and {high}"


def _among(allowed: tuple[str, ...]) -> Callable[[Any], str | None]:
    return lambda v: None if v in allowed else f"must be one of {', '.join(repr(a) for a in allowed)}, not {v!r}"


def _path_like(value: str) -> str | None:
    return "must not contain NUL" if "\0" in value else None


# Value checks per key (the type is checked against the default's type first).
_CHECKS: dict[str, dict[str, Callable[[Any], str | None]]] = {
    "input": {"mode": _among(tuple(mode.value for mode in InputMode)), "punctuation": _among(PUNCTUATION_STYLES),
              "symbol_width": _among(WIDTHS), "digit_width": _among(WIDTHS), "letter_width": _among(WIDTHS),
              "romaji_table": _path_like},
    "session": {"page_size": _between(1, 9), "context_chars": _between(0, 1000), "keymap": _path_like},
    "learning": {},
    "suggest": {"count": _between(1, 9)},
    "rewriters": {},
    "ui": {"candidate_layout": _among(CANDIDATE_LAYOUTS)},
}


def _check_all(settings: Any, name: str) -> None:
    for key, check in _CHECKS[name].items():
        problem = check(getattr(settings, key))
        if problem:
            raise ConfigError(f"{name}.{key} {problem}")


@dataclass(frozen=True)
class Config:
    input: InputSettings = field(default_factory=InputSettings)
    session: SessionSettings = field(default_factory=SessionSettings)
    learning: LearningSettings = field(default_factory=LearningSettings)
    suggest: SuggestSettings = field(default_factory=SuggestSettings)
    rewriters: RewriterSettings = field(default_factory=RewriterSettings)
    ui: UISettings = field(default_factory=UISettings)
    # Tables owned by other layers, as parsed; each layer validates its own.
    sections: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    path: Path | None = None        # where it was loaded from, if anywhere
    # What was wrong with the file, one message each ("<file>: <key> ...; using ..."); the
    # defaults (or, for privacy settings, the private value) are used there. Empty: all good.
    problems: tuple[str, ...] = ()

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any], source: str = "<config>", base_dir: Path | None = None) -> "Config":
        problems: list[str] = []
        input_settings = _section(InputSettings, data.get("input", {}), "input", source, problems)
        session_settings = _section(SessionSettings, data.get("session", {}), "session", source, problems)
        learning = _section(LearningSettings, data.get("learning", {}), "learning", source, problems)
        suggest = _section(SuggestSettings, data.get("suggest", {}), "suggest", source, problems)
        rewriters = _section(RewriterSettings, data.get("rewriters", {}), "rewriters", source, problems)
        ui = _section(UISettings, data.get("ui", {}), "ui", source, problems)
        if base_dir is not None:
            # Relative paths in a config file are relative to that file.
            input_settings = replace(input_settings, romaji_table=_resolve(input_settings.romaji_table, base_dir))
            session_settings = replace(session_settings, keymap=_resolve(session_settings.keymap, base_dir))
        others = {k: v for k, v in data.items() if k not in _CHECKS}
        return cls(input_settings, session_settings, learning, suggest, rewriters, ui, MappingProxyType(others),
                   problems=tuple(problems))

    @classmethod
    def from_toml(cls, text: str, source: str = "<config>", base_dir: Path | None = None) -> "Config":
        try:
            data = parse_toml(text)
        except TomlError as exc:
            return cls.unusable(f"{source}: not valid TOML ({exc})")
        return cls.from_mapping(data, source, base_dir)

    @classmethod
    def unusable(cls, problem: str) -> "Config":
        """The config for a file that could not be read or parsed: defaults, learning off (the
        file may have turned it off; privacy never weakens on error)."""
        return cls(learning=LearningSettings(enabled=False),
                   problems=(f"{problem}; using the defaults with learning off until it is fixed",))

    def raise_for_problems(self) -> None:
        """ConfigError with the first problem, if any (for callers that want strictness)."""
        if self.problems:
            raise ConfigError(self.problems[0])

    @classmethod
    def load(cls, path: str | Path | None = None) -> "Config":
        """The config at `path`, else at default_path(); defaults when that file does not exist."""
        explicit = path is not None
        target = Path(path) if explicit else default_path()
        try:
            text = read_user_text(target, MAX_SETTINGS_BYTES)
        except FileNotFoundError:
            if explicit:
                raise ConfigError(f"{target}: no such config file") from None
            return cls()
        except (OSError, UnicodeDecodeError) as exc:
            why = "not UTF-8" if isinstance(exc, UnicodeDecodeError) else (exc.strerror or type(exc).__name__)
            return replace(cls.unusable(f"{target}: cannot read config ({why})"), path=target)
        config = cls.from_toml(text, str(target), target.parent)
        return replace(config, path=target)


def default_path() -> Path:
    explicit = os.environ.get("KARUKAN_CONFIG")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "karukan" / "config.toml"


def _section(cls: type, table: Any, name: str, source: str, problems: list[str]):
    """The settings of one table, each bad value replaced by its fallback with a problem noted."""
    known = {f.name: f for f in fields(cls)}
    if not isinstance(table, Mapping):
        problems.append(f"{source}: [{name}] must be a table; using its defaults")
        private = {k: v for (section, k), v in PRIVATE_FALLBACK.items() if section == name}
        return cls(**private)
    for key in sorted(set(table) - set(known)):
        problems.append(f"{source}: unknown key {name}.{key} ignored; known: {', '.join(known)}")
    values = {}
    for key, value in table.items():
        if key not in known:
            continue
        default = known[key].default
        if type(value) is not type(default):
            problem = f"must be a {type(default).__name__}, not {type(value).__name__}"
        else:
            problem = _CHECKS[name].get(key, lambda v: None)(value)
        if problem is None:
            values[key] = value
            continue
        fallback = PRIVATE_FALLBACK.get((name, key), default)
        values[key] = fallback
        problems.append(f"{source}: {name}.{key} {problem}; using {_toml_repr(fallback)}")
    return cls(**values)


def _toml_repr(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f'"{value}"'
    return str(value)


def _resolve(value: str, base_dir: Path) -> str:
    if not value:
        return value
    path = Path(value).expanduser()
    return str(path if path.is_absolute() else base_dir / path)
