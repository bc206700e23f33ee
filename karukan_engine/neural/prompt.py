"""The jinen / zenz-v3 prompt, and each family's text policy.

Both families write context + U+EE00 + reading (katakana) + U+EE01 and then the surface; they
differ in what the model saw in training, and the policy says it once for each:

- jinen (upstream Karukan): U+EE02 always, even before an empty context; the whole prompt NFKC
  (the models were trained on NFKC text); the last 10 context characters.
- zenz-v3 (azooKey's Zenzai): U+EE02 + context only when there is a context, so the model never
  saw U+EE02 right before U+EE00; no NFKC (the vocabulary has the full-width forms NFKC would
  rewrite); spaces written as U+3000 and newlines removed; the last 40 context characters.

Both: at most 50 output tokens, and no control mark from the user's text.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass, replace

CONTEXT_MARK = "\uee02"
INPUT_MARK = "\uee00"
OUTPUT_MARK = "\uee01"
MARKS = (CONTEXT_MARK, INPUT_MARK, OUTPUT_MARK)

# The private-use block the model family reserves for control marks; a generated one ends output.
CONTROL_RANGE = range(0xEE00, 0xEE10)

IDEOGRAPHIC_SPACE = "\u3000"
UPSTREAM_MAX_NEW_TOKENS = 50

_HIRAGANA_TO_KATAKANA = {c: c + 0x60 for c in range(0x3041, 0x3097)}
# User text must never smuggle a control mark into the prompt.
_STRIP_CONTROL = {c: None for c in CONTROL_RANGE}
# zenz: what Zenzai does to its input text instead of NFKC.
_ZENZ_TEXT = {**_STRIP_CONTROL, ord(" "): IDEOGRAPHIC_SPACE, ord("\n"): None, ord("\r"): None}


def to_katakana(text: str) -> str:
    """Hiragana (U+3041..U+3096) to katakana; everything else unchanged."""
    return text.translate(_HIRAGANA_TO_KATAKANA)


def is_control_char(ch: str) -> bool:
    return ord(ch) in CONTROL_RANGE


def clean_text(text: str) -> str:
    """NFKC (the jinen models were trained on NFKC text) without any control marks."""
    return unicodedata.normalize("NFKC", text).translate(_STRIP_CONTROL)


@dataclass(frozen=True)
class PromptFamily:
    """How one model family was trained to read its input (see the module docstring)."""

    name: str
    context_chars: int            # left context characters kept (the tail)
    context_mark_always: bool     # U+EE02 even before an empty context
    nfkc: bool                    # NFKC the text; else the zenz rules (U+3000, no newlines)
    max_new_tokens: int = UPSTREAM_MAX_NEW_TOKENS

    def clean(self, text: str) -> str:
        """User text (context, reading or a surface to score) as the family's training text."""
        return clean_text(text) if self.nfkc else text.translate(_ZENZ_TEXT)

    def with_context_chars(self, context_chars: int | None) -> "PromptFamily":
        """This family with another context length (None: its own)."""
        return self if context_chars is None else replace(self, context_chars=max(0, context_chars))

    def build(self, reading: str, context: str = "") -> "Prompt":
        """Reading to katakana, both parts cleaned, context cut to its last context_chars."""
        reading_part = self.clean(to_katakana(reading))
        # the session's line-start mark (a leading newline): upstream reads the current line only
        context_part = self.clean(context.lstrip("\n"))
        keep = self.context_chars
        context_part = context_part[-keep:] if keep > 0 else ""
        return Prompt(context=context_part, reading=reading_part, context_mark_always=self.context_mark_always)


JINEN = PromptFamily("jinen", context_chars=10, context_mark_always=True, nfkc=True)
ZENZ_V3 = PromptFamily("zenz-v3", context_chars=40, context_mark_always=False, nfkc=False)
FAMILIES = {family.name: family for family in (JINEN, ZENZ_V3)}


def family_named(name: str) -> PromptFamily:
    try:
        return FAMILIES[name]
    except KeyError:
        raise ValueError(f"unknown prompt format {name!r} (one of {', '.join(FAMILIES)})") from None


@dataclass(frozen=True)
class Prompt:
    """The two free-text parts of a prompt (already cleaned) and whether an empty context still
    gets its mark; the marks around them are fixed."""

    context: str
    reading: str
    context_mark_always: bool = True

    @property
    def has_context_mark(self) -> bool:
        return bool(self.context) or self.context_mark_always

    def segments(self) -> tuple[tuple[bool, str], ...]:
        """(is_mark, text) in order; empty texts left out."""
        parts = [(True, CONTEXT_MARK), (False, self.context)] if self.has_context_mark else []
        parts += [(True, INPUT_MARK), (False, self.reading), (True, OUTPUT_MARK)]
        return tuple((mark, text) for mark, text in parts if text)

    @property
    def text(self) -> str:
        return "".join(text for _mark, text in self.segments())

    def with_context(self, context: str) -> "Prompt":
        return replace(self, context=context)


def build_prompt(reading: str, context: str = "", max_context_chars: int | None = None,
                 family: PromptFamily = JINEN) -> Prompt:
    """The family's prompt (jinen by default), its context cut to max_context_chars when given."""
    return family.with_context_chars(max_context_chars).build(reading, context)


def clean_output(text: str) -> str:
    """Model output up to the first control mark or newline, trimmed."""
    for i, ch in enumerate(text):
        if is_control_char(ch) or ch == "\n":
            text = text[:i]
            break
    return text.strip()
