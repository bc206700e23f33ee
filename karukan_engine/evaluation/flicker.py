"""Flicker of live conversion: how often the preedit shows text the user will not commit.

A replay types a sentence key by key and records, after every key, the live string shown (the
preedit without the romaji keys still pending) and the reading composed so far. Against the
text finally committed (Return at the end):

- A shown string splits into a converted head and a kana tail: the longest run of hiragana at
  its end that is also the end of the reading (text still shown as typed; when it turns into
  kanji later that is conversion, not flicker).
- A flicker is a shown string whose head is not a prefix of the final text: the user saw
  something (鏡, 強雨は, 今日は良い点) that went away again. `strict_flicker` drops the kana-tail
  allowance (every shown string must be a prefix of the final text).
- Rewritten characters: of the previous string's head, those the next string no longer starts
  with (settled text on the left of the caret changing under the user's eyes).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

from karukan_engine.kana import nfkc


def _is_hiragana(ch: str) -> bool:
    return "\u3041" <= ch <= "\u309f" or ch == "ー"


def kana_tail(shown: str, reading: str) -> int:
    """Length of the longest hiragana suffix of `shown` that is also a suffix of `reading`."""
    n = 0
    while (n < len(shown) and n < len(reading) and _is_hiragana(shown[-1 - n])
           and shown[-1 - n] == reading[-1 - n]):
        n += 1
    return n


def head(shown: str, reading: str) -> str:
    """The converted part of a shown string: all of it but its kana tail."""
    return shown[: len(shown) - kana_tail(shown, reading)]


def common_prefix(a: str, b: str) -> int:
    n = 0
    while n < len(a) and n < len(b) and a[n] == b[n]:
        n += 1
    return n


def is_flicker(shown: str, reading: str, final: str) -> bool:
    return not final.startswith(head(shown, reading))


def strict_flicker(shown: str, final: str) -> bool:
    return not final.startswith(shown)


def rewritten(previous: str, previous_reading: str, shown: str) -> int:
    """Characters of the previous string's head that `shown` rewrote (0 when it only grew)."""
    before = head(previous, previous_reading)
    return len(before) - common_prefix(before, shown)


@dataclass(frozen=True)
class Step:
    shown: str      # preedit without pending romaji
    reading: str    # settled reading at that moment


@dataclass
class SentenceFlicker:
    flickers: int = 0
    strict: int = 0
    rewritten_chars: int = 0
    steps: int = 0
    flicker_strings: list[str] = field(default_factory=list)


def measure(steps: Sequence[Step], final: str) -> SentenceFlicker:
    """The flicker counts of one typed sentence. Identical consecutive strings count once (a
    model refinement that changes nothing is not a new string to the user)."""
    result = SentenceFlicker()
    previous: Step | None = None
    for step in steps:
        if not step.shown or (previous is not None and step.shown == previous.shown):
            continue
        result.steps += 1
        if is_flicker(step.shown, step.reading, final):
            result.flickers += 1
            result.flicker_strings.append(step.shown)
        if strict_flicker(step.shown, final):
            result.strict += 1
        if previous is not None:
            result.rewritten_chars += rewritten(previous.shown, previous.reading, step.shown)
        previous = step
    return result


def accurate(final: str, outputs: Sequence[str]) -> tuple[bool, bool]:
    """(exact, NFKC) match of the final text against any gold surface."""
    return final in outputs, nfkc(final) in {nfkc(o) for o in outputs}
