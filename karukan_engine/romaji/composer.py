"""The incremental composer: keys → kana, one character per unit, each unit keeping its keys.

Like Mozc's composer it remembers which keys made which kana, so F9/F10 can give back exactly what
was typed and Backspace removes one kana (or one pending key). Text not yet matched by the table
(`k`, `ky`, a lone `n`) stays pending at the caret and is resolved by `flush()`.
"""

from __future__ import annotations

import enum
import itertools
from dataclasses import dataclass, field

from karukan_engine.kana import (
    to_fullwidth_ascii,
    to_fullwidth_katakana,
    to_halfwidth_ascii,
    to_halfwidth_katakana,
    to_hiragana,
    to_katakana,
)
from karukan_engine.romaji.table import RomajiTable, Rule

# Pending text fed back by rules can loop in a hostile user table; stop after this many firings.
_MAX_FIRINGS_PER_KEY = 64


def reading_of(text: str) -> str:
    """The hiragana reading of composed text (katakana and half-width kana folded back)."""
    return to_hiragana(to_fullwidth_katakana(text))


class Script(enum.Enum):
    """How newly typed text is written (the input mode as the composer sees it)."""

    HIRAGANA = "hiragana"
    KATAKANA = "katakana"
    HALF_KATAKANA = "half_katakana"
    FULL_ASCII = "full_ascii"
    HALF_ASCII = "half_ascii"


# What , and . type, and the two widths of symbols, digits and letters (the config offers these).
PUNCTUATION_STYLES = ("、。", "，．", "、．", "，。", ",.")
WIDTHS = ("full", "half")


@dataclass(frozen=True)
class ComposerSettings:
    punctuation: str = "、。"     # what , and . type: one of PUNCTUATION_STYLES
    symbol_width: str = "full"    # ASCII symbols in kana modes (! → ！ or !)
    digit_width: str = "half"     # digits in kana modes (1 or １)
    letter_width: str = "full"    # letters no rule matched (Mozc shows ｋ for a pending k)

    def __post_init__(self) -> None:
        if self.punctuation not in PUNCTUATION_STYLES:
            raise ValueError(f"punctuation must be one of {', '.join(PUNCTUATION_STYLES)}")
        for name in ("symbol_width", "digit_width", "letter_width"):
            if getattr(self, name) not in WIDTHS:
                raise ValueError(f"{name} must be 'full' or 'half'")


@dataclass
class Unit:
    """One character of the composition and the keys that typed it.

    A rule that outputs several characters (kya → きゃ) puts all its keys on the first unit and
    links the units by `group`, so a later edit inside the group can re-derive their keys.
    """

    text: str
    keys: str
    group: int


@dataclass
class Composer:
    table: RomajiTable = field(default_factory=RomajiTable.default)
    settings: ComposerSettings = field(default_factory=ComposerSettings)
    script: Script = Script.HIRAGANA   # how new text is written; the session sets it per mode
    units: list[Unit] = field(default_factory=list)
    cursor: int = 0             # in units (= characters of settled text)
    pending: str = ""           # table input typed at the cursor, not yet matched
    pending_keys: str = ""      # the typed keys behind `pending`
    _groups: itertools.count = field(default_factory=itertools.count, repr=False)

    # -- queries -------------------------------------------------------------------------------

    @property
    def is_empty(self) -> bool:
        return not self.units and not self.pending

    def text(self) -> str:
        """Settled text with the pending keys shown at the cursor."""
        settled = "".join(u.text for u in self.units)
        return settled[: self.cursor] + self._pending_display() + settled[self.cursor :]

    def flushed_text(self) -> str:
        """What text() will be after flush(), leaving this composer as it is."""
        scratch = self.copy()
        scratch.flush()
        return scratch.text()

    def settled_after(self, key: str) -> str:
        """What settled_reading() will be once `key` is typed, leaving this composer as it is."""
        scratch = self.copy()
        scratch.insert(key)
        return scratch.settled_reading()

    def copy(self) -> "Composer":
        """A copy to try keys on (its new groups are numbered past this one's)."""
        units = [Unit(u.text, u.keys, u.group) for u in self.units]
        return Composer(self.table, self.settings, self.script, units, self.cursor, self.pending,
                        self.pending_keys, itertools.count(max((u.group for u in units), default=-1) + 1))

    def caret(self) -> int:
        return self.cursor + len(self._pending_display())

    def settled_reading(self) -> str:
        """The reading of the settled text (pending keys left out): what is converted live."""
        return reading_of("".join(u.text for u in self.units))

    def units_for_reading(self, length: int) -> int:
        """How many units make up the first `length` characters of the settled reading."""
        text = ""
        for count, unit in enumerate(self.units):
            if len(reading_of(text)) >= length:
                return count
            text += unit.text
        return len(self.units)

    def keys_for_reading(self, start: int, length: int) -> str | None:
        """The keys typed for settled_reading()[start:start+length], or None when the span does
        not start and end on unit boundaries."""
        bounds: dict[int, int] = {}
        text = ""
        for k in range(len(self.units) + 1):
            bounds.setdefault(len(reading_of(text)), k)
            if k < len(self.units):
                text += self.units[k].text
        if start in bounds and start + length in bounds:
            return "".join(u.keys for u in self.units[bounds[start] : bounds[start + length]])
        return None

    def keys(self) -> str:
        """The keys that typed the composition, in text order (F9/F10 use these)."""
        before = "".join(u.keys for u in self.units[: self.cursor])
        after = "".join(u.keys for u in self.units[self.cursor :])
        return before + self.pending_keys + after

    # -- editing -------------------------------------------------------------------------------

    def insert(self, key: str) -> None:
        """Type one character. ASCII letters go through the table in kana scripts."""
        if len(key) != 1:
            raise ValueError("insert takes one character")
        if self.script in (Script.FULL_ASCII, Script.HALF_ASCII):
            self.flush()
            self._break_group_at_cursor()
            self._emit(key, key, literal=True)
            return
        self._break_group_at_cursor()
        self._feed(key.lower() if key.isascii() else key, key)

    def flush(self) -> None:
        """Resolve pending keys: a complete rule fires (n → ん), anything else stays as letters."""
        firings = 0
        while self.pending:
            match = self.table.lookup(self.pending)
            if match.rule is not None and firings < _MAX_FIRINGS_PER_KEY:
                firings += 1
                self._fire(match.rule, self.pending_keys)
            else:
                self._emit_literal_head()

    def backspace(self) -> bool:
        """Remove the last pending key, else the character before the cursor. False if nothing."""
        if self.pending:
            self.pending = self.pending[:-1]
            self.pending_keys = self.pending_keys[:-1] if self.pending_keys else ""
            if not self.pending:
                self.pending_keys = ""
            return True
        if self.cursor == 0:
            return False
        self._remove(self.cursor - 1)
        self.cursor -= 1
        return True

    def delete(self) -> bool:
        """Remove the character after the cursor. False if nothing."""
        self.flush()
        if self.cursor >= len(self.units):
            return False
        self._remove(self.cursor)
        return True

    def move(self, delta: int) -> None:
        self.flush()
        self.cursor = max(0, min(len(self.units), self.cursor + delta))

    def move_to(self, position: int) -> None:
        self.flush()
        self.cursor = max(0, min(len(self.units), position))

    def remove_prefix(self, count: int) -> None:
        """Drop the first `count` characters (they were committed); the cursor goes to the end."""
        self.flush()
        del self.units[:count]
        self.cursor = len(self.units)

    def clear(self) -> None:
        self.units.clear()
        self.cursor = 0
        self.pending = ""
        self.pending_keys = ""

    # -- internals -----------------------------------------------------------------------------

    def _feed(self, ch: str, key: str) -> None:
        self.pending += ch
        self.pending_keys += key
        firings = 0
        while self.pending:
            match = self.table.lookup(self.pending)
            if firings >= _MAX_FIRINGS_PER_KEY:
                self._emit_literal_head()  # a looping table: stop firing, keep the letters
            elif match.has_continuation:
                return  # wait: a longer rule may still match
            elif match.rule is not None:
                firings += 1
                self._fire(match.rule, self.pending_keys)
            else:
                # Dead end: settle the longest rule at the start of the pending text (or one
                # letter), then retry the rest; this is how `n` before a consonant becomes ん.
                firings += self._settle_head()

    def _settle_head(self) -> int:
        """Fire the longest rule that starts the pending text (1), or emit one letter (0)."""
        for size in range(len(self.pending) - 1, 0, -1):
            rule = self.table.lookup(self.pending[:size]).rule
            if rule is not None:
                rest, rest_keys = self.pending[size:], self._split_keys(size)
                self.pending = self.pending[:size]
                self.pending_keys = self.pending_keys[: len(self.pending_keys) - len(rest_keys)]
                self._fire(rule, self.pending_keys)
                self.pending += rest
                self.pending_keys += rest_keys
                return 1
        self._emit_literal_head()
        return 0

    def _split_keys(self, size: int) -> str:
        """Keys behind pending[size:] when keys and pending are aligned, else none of them."""
        if self.pending_keys.lower() == self.pending.lower():
            return self.pending_keys[size:]
        return ""

    def _fire(self, rule: Rule, keys: str) -> None:
        pending = rule.pending
        if pending and keys.lower().endswith(pending.lower()) and len(pending) < len(keys):
            used, left = keys[: len(keys) - len(pending)], keys[len(keys) - len(pending) :]
        else:
            used, left = keys, ""
        self.pending, self.pending_keys = pending, left
        self._emit(rule.output, used, literal=False)

    def _emit_literal_head(self) -> None:
        head = self.pending[0]
        keys = self.pending_keys
        if keys[:1].lower() == head and len(keys) == len(self.pending):
            head_keys, rest_keys = keys[:1], keys[1:]
        else:
            head_keys, rest_keys = keys, ""
        self.pending, self.pending_keys = self.pending[1:], rest_keys
        self._emit(head_keys if head_keys.lower() == head else head, head_keys, literal=True)

    def _emit(self, text: str, keys: str, literal: bool) -> None:
        shaped = self._shape(text, literal)
        if not shaped:
            # An empty output (a rule that only feeds pending) still owns its keys.
            if keys and self.cursor > 0:
                self.units[self.cursor - 1].keys += keys
            elif keys:
                self.pending_keys = keys + self.pending_keys
            return
        group = next(self._groups)
        new = [Unit(ch, keys if i == 0 else "", group) for i, ch in enumerate(shaped)]
        self.units[self.cursor : self.cursor] = new
        self.cursor += len(new)

    def _shape(self, text: str, literal: bool) -> str:
        script = self.script
        if script is Script.HALF_ASCII:
            return to_halfwidth_ascii(text)
        if script is Script.FULL_ASCII:
            return to_fullwidth_ascii(text)
        if not literal:
            text = text.translate(self._punctuation_map())
            if self.settings.symbol_width == "half":
                text = to_halfwidth_ascii(text)
        else:
            text = "".join(self._literal_width(ch) for ch in text)
        if script is Script.KATAKANA:
            return to_katakana(text)
        if script is Script.HALF_KATAKANA:
            return to_halfwidth_ascii(to_halfwidth_katakana(text))
        return text

    def _literal_width(self, ch: str) -> str:
        if not ch.isascii() or not ch.isprintable() or self.script is Script.HALF_KATAKANA:
            return ch
        if ch.isdigit():
            width = self.settings.digit_width
        elif ch.isalpha():
            width = self.settings.letter_width
        else:
            width = self.settings.symbol_width
        return to_fullwidth_ascii(ch) if width == "full" else ch

    def _punctuation_map(self) -> dict[int, str]:
        comma, period = self.settings.punctuation
        return {ord("、"): comma, ord("。"): period}

    def _pending_display(self) -> str:
        return "".join(self._literal_width(ch) for ch in self.pending_keys or self.pending)

    def _remove(self, index: int) -> None:
        removed = self.units.pop(index)
        siblings = [u for u in self.units if u.group == removed.group]
        if siblings:
            self._rederive_keys(siblings)

    def _break_group_at_cursor(self) -> None:
        if 0 < self.cursor < len(self.units) and self.units[self.cursor - 1].group == self.units[self.cursor].group:
            group = self.units[self.cursor].group
            self._rederive_keys([u for u in self.units if u.group == group])

    def _rederive_keys(self, members: list[Unit]) -> None:
        """A multi-character unit was split: give each remaining character its own keys."""
        for unit in members:
            unit.group = next(self._groups)
            reading = to_hiragana(to_fullwidth_katakana(unit.text))
            unit.keys = self.table.romaji_for(reading) or to_halfwidth_ascii(unit.text)
