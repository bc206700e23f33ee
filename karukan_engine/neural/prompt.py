"""The jinen / zenz-v3 prompt: U+EE02 + left context + U+EE00 + reading (katakana) + U+EE01."""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass

CONTEXT_MARK = "\uee02"
INPUT_MARK = "\uee00"
OUTPUT_MARK = "\uee01"
MARKS = (CONTEXT_MARK, INPUT_MARK, OUTPUT_MARK)

# The private-use block the model family reserves for control marks; a generated one ends output.
CONTROL_RANGE = range(0xEE00, 0xEE10)

DEFAULT_MAX_CONTEXT_CHARS = 20

_HIRAGANA_TO_KATAKANA = {c: c + 0x60 for c in range(0x3041, 0x3097)}
# User text must never smuggle a control mark into the prompt.
_STRIP_CONTROL = {c: None for c in CONTROL_RANGE}


def to_katakana(text: str) -> str:
    """Hiragana (U+3041..U+3096) to katakana; everything else unchanged."""
    return text.translate(_HIRAGANA_TO_KATAKANA)


def is_control_char(ch: str) -> bool:
    return ord(ch) in CONTROL_RANGE


def clean_text(text: str) -> str:
    """NFKC (the models were trained on NFKC text) without any control marks."""
    return unicodedata.normalize("NFKC", text).translate(_STRIP_CONTROL)


@dataclass(frozen=True)
class Prompt:
    """The two free-text parts of a prompt; the marks around them are fixed."""

    context: str
    reading: str

    @property
    def text(self) -> str:
        return CONTEXT_MARK + self.context + INPUT_MARK + self.reading + OUTPUT_MARK


def build_prompt(reading: str, context: str = "", max_context_chars: int = DEFAULT_MAX_CONTEXT_CHARS) -> Prompt:
    """Normalise the parts of a prompt: reading to katakana, both NFKC, context cut to its tail."""
    reading_part = clean_text(to_katakana(reading))
    context_part = clean_text(context)
    keep = max(0, max_context_chars)
    context_part = context_part[len(context_part) - keep :] if keep else ""
    return Prompt(context=context_part, reading=reading_part)


def clean_output(text: str) -> str:
    """Model output up to the first control mark or newline, trimmed."""
    for i, ch in enumerate(text):
        if is_control_char(ch) or ch == "\n":
            text = text[:i]
            break
    return text.strip()
