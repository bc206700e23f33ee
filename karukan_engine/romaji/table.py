"""The romaji rule table: a trie over Mozc-compatible TSV rules (input, output, pending).

A rule fires when its input has been typed; its pending text (if any) is fed back as input,
which is how `kk` gives っ and keeps a `k` waiting for the next vowel.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from karukan_engine.core.user_files import MAX_SETTINGS_BYTES, has_control_chars, read_user_text

DEFAULT_TABLE = "romaji-hiragana.tsv"
MAX_RULE_INPUT = 16   # longer inputs are rejected: no real table needs them


class TableError(ValueError):
    """A romaji table file that cannot be used (the message names the line)."""


@dataclass(frozen=True)
class Rule:
    input: str
    output: str
    pending: str = ""


@dataclass
class _Node:
    children: dict[str, "_Node"] = field(default_factory=dict)
    rule: Rule | None = None


@dataclass(frozen=True)
class Match:
    rule: Rule | None        # the rule whose input is exactly the text looked up
    has_continuation: bool   # some longer rule starts with that text


class RomajiTable:
    def __init__(self, rules: list[Rule]) -> None:
        self._root = _Node()
        self.rules: dict[str, Rule] = {}
        for rule in rules:
            self._add(rule)
        self._reverse = self._build_reverse()

    def _add(self, rule: Rule) -> None:
        node = self._root
        for ch in rule.input:
            node = node.children.setdefault(ch, _Node())
        node.rule = rule
        self.rules[rule.input] = rule

    def lookup(self, text: str) -> Match:
        node = self._root
        for ch in text:
            child = node.children.get(ch)
            if child is None:
                return Match(None, False)
            node = child
        return Match(node.rule, bool(node.children))

    # -- reverse direction: kana → the keys that type it -------------------------------------

    def _build_reverse(self) -> dict[str, str]:
        """output → shortest input that fires at once (no continuation, no pending)."""
        reverse: dict[str, str] = {}
        for rule in self.rules.values():
            if rule.pending or not rule.output or self.lookup(rule.input).has_continuation:
                continue
            best = reverse.get(rule.output)
            if best is None or (len(rule.input), rule.input) < (len(best), best):
                reverse[rule.output] = rule.input
        return reverse

    def romaji_for(self, text: str) -> str | None:
        """Keys that type `text` with this table (greedy, longest output first), or None."""
        longest = max((len(o) for o in self._reverse), default=0)
        keys = []
        i = 0
        while i < len(text):
            for size in range(min(longest, len(text) - i), 0, -1):
                inp = self._reverse.get(text[i : i + size])
                if inp is not None:
                    keys.append(inp)
                    i += size
                    break
            else:
                return None
        return "".join(keys)

    # -- loading -------------------------------------------------------------------------------

    @classmethod
    def from_tsv(cls, text: str, source: str = "<table>") -> "RomajiTable":
        rules = []
        for number, line in enumerate(text.splitlines(), 1):
            if not line.strip() or line.startswith("#"):
                continue
            cols = line.split("\t")
            if len(cols) < 2 or len(cols) > 3 or not cols[0]:
                raise TableError(f"{source}:{number}: expected input<TAB>output[<TAB>pending]")
            if len(cols[0]) > MAX_RULE_INPUT:
                raise TableError(f"{source}:{number}: rule input longer than {MAX_RULE_INPUT} characters")
            if any(has_control_chars(col) for col in cols):
                raise TableError(f"{source}:{number}: control characters in a rule")
            pending = cols[2] if len(cols) == 3 else ""
            if pending and not cols[1] and pending == cols[0]:
                raise TableError(f"{source}:{number}: rule feeds its own input back forever")
            rules.append(Rule(cols[0], cols[1], pending))
        if not rules:
            raise TableError(f"{source}: no rules")
        return cls(rules)

    @classmethod
    def load(cls, path: str | Path) -> "RomajiTable":
        path = Path(path)
        try:
            text = read_user_text(path, MAX_SETTINGS_BYTES)   # regular files only, never blocks
        except (OSError, UnicodeDecodeError) as exc:
            why = "not UTF-8" if isinstance(exc, UnicodeDecodeError) else (exc.strerror or type(exc).__name__)
            raise TableError(f"{path}: cannot read romaji table ({why})") from None
        return cls.from_tsv(text, str(path))

    @classmethod
    def default(cls) -> "RomajiTable":
        global _DEFAULT
        if _DEFAULT is None:
            text = resources.files("karukan_engine").joinpath("data", DEFAULT_TABLE).read_text(encoding="utf-8")
            _DEFAULT = cls.from_tsv(text, DEFAULT_TABLE)
        return _DEFAULT


_DEFAULT: RomajiTable | None = None
