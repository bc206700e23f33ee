"""Keymaps: per session state, key combination → command. Loaded from TOML.

The default (karukan_engine/data/keymap.toml) follows Mozc's MS-IME style. A user keymap is
merged over it state by state; an empty command name removes a default binding.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, Mapping

from karukan_engine.config import TomlError, parse_toml
from karukan_engine.core.user_files import MAX_SETTINGS_BYTES, read_user_text
from karukan_engine.session.commands import Command
from karukan_engine.session.keysyms import KeyCombo, KeySpecError, parse_key_spec
from karukan_engine.session.modes import State

DEFAULT_KEYMAP = "keymap.toml"


class KeymapError(ValueError):
    """A keymap that cannot be used; the message says where and why."""


@dataclass(frozen=True)
class Keymap:
    bindings: Mapping[State, Mapping[KeyCombo, Command]]

    def lookup(self, state: State, keysym: int, modifiers: int) -> Command | None:
        return self.bindings.get(state, {}).get(KeyCombo.of(keysym, modifiers))

    def keys_for(self, state: State, command: Command) -> list[str]:
        """Key specs bound to a command (for help texts)."""
        return sorted(combo.spec() for combo, cmd in self.bindings.get(state, {}).items() if cmd is command)

    @classmethod
    def default(cls) -> "Keymap":
        global _DEFAULT
        if _DEFAULT is None:
            text = resources.files("karukan_engine").joinpath("data", DEFAULT_KEYMAP).read_text(encoding="utf-8")
            _DEFAULT = cls.from_toml(text, DEFAULT_KEYMAP, base=None)
        return _DEFAULT

    @classmethod
    def from_toml(cls, text: str, source: str = "<keymap>", base: "Keymap | None" = None) -> "Keymap":
        try:
            data = parse_toml(text)
        except TomlError as exc:
            raise KeymapError(f"{source}: not valid TOML ({exc})") from exc
        return cls.from_mapping(data, source, base)

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any], source: str = "<keymap>", base: "Keymap | None" = None) -> "Keymap":
        bindings: dict[State, dict[KeyCombo, Command]] = {
            state: dict(base.bindings.get(state, {})) if base else {} for state in State
        }
        for section, table in data.items():
            try:
                state = State(section)
            except ValueError:
                raise KeymapError(
                    f"{source}: unknown section [{section}]; use {', '.join(s.value for s in State)}"
                ) from None
            if not isinstance(table, Mapping):
                raise KeymapError(f"{source}: [{section}] must be a table of key = \"command\"")
            for spec, name in table.items():
                combo = _combo(spec, source, section)
                if not isinstance(name, str):
                    raise KeymapError(f"{source}: [{section}] {spec!r}: command must be a string")
                if not name:
                    bindings[state].pop(combo, None)
                    continue
                try:
                    bindings[state][combo] = Command(name)
                except ValueError:
                    raise KeymapError(f"{source}: [{section}] {spec!r}: unknown command {name!r}") from None
        return cls(bindings)

    @classmethod
    def load(cls, path: str | Path, base: "Keymap | None" = None) -> "Keymap":
        """A user keymap file merged over `base` (the default keymap when None)."""
        path = Path(path)
        try:
            text = read_user_text(path, MAX_SETTINGS_BYTES)   # regular files only, never blocks
        except (OSError, UnicodeDecodeError) as exc:
            why = "not UTF-8" if isinstance(exc, UnicodeDecodeError) else (exc.strerror or type(exc).__name__)
            raise KeymapError(f"{path}: cannot read keymap ({why})") from None
        return cls.from_toml(text, str(path), base if base is not None else cls.default())


def _combo(spec: Any, source: str, section: str) -> KeyCombo:
    if not isinstance(spec, str):
        raise KeymapError(f"{source}: [{section}] key {spec!r} must be a string")
    try:
        keysym, mods = parse_key_spec(spec)
    except KeySpecError as exc:
        raise KeymapError(f"{source}: [{section}] {exc}") from None
    return KeyCombo.of(keysym, mods)


_DEFAULT: Keymap | None = None
