"""Steady live conversion: the unfinished tail of the preedit stays kana until it is a word.

The converter's best path for a reading that stops in the middle of a word ends in whatever
short word the first kana of it spell: typing はなしています shows 花 before 話し, and
きょうはいいてんき shows 今日は良い点ｋ while the k of き is pending. Each such guess is a
flicker: text the user sees and will not commit (benchmarks/flicker_replay.py counts them). Two
rules keep the tail as typed, for every live text (the dictionary's quick answer and the
model's refinement alike):

1. Pending keys. While romaji keys of the next kana are typed but not resolved (or the reading
   ends in っ, which always goes on), the word is still being typed: the text shown for the
   last finished reading stays, and the kana added since follow as typed (今日はいいて + ん + ｋ).
2. Short tail. A last word of at most two reading characters written in kanji or katakana (花,
   見, 際, チェ) is most often the start of a longer word: it is shown as its reading until the
   reading goes on past it, unless the user chose that spelling for the end of this reading
   before (learning): then it is a word they use.

Return finishes typing (`finished`): the tail is a word then, and it converts, so the committed
text is the converter's own and accuracy does not change.

Measured and left out: holding settled text on the left against a cheaper respelling
(hysteresis) cost accuracy on the dev sets and removed no flicker, because the converter
rewrites the left when the new reading gives it the context to do so (機能か → 昨日買って).
See docs/benchmarks.md, "Live-conversion flicker".
"""

from __future__ import annotations

import sys
import threading
import weakref
from dataclasses import dataclass
from typing import Callable, Protocol, Sequence

from karukan_engine.conversion.align import Aligner, Alignment
from karukan_engine.conversion.contracts import DictionaryConverter
from karukan_engine.kana import has_kanji_or_katakana

# A last word this short (reading characters) is not a word yet.
SHORT_TAIL = 2
# Readings ending in these kana always go on.
CONTINUING_KANA = ("っ",)


class WordAligner(Protocol):
    """What the stabilizer needs from the dictionary (align.Aligner)."""

    def align(self, reading: str, surface: str) -> Alignment | None: ...


Words = list[tuple[str, str]]   # (reading, surface) of each dictionary word, in order


@dataclass(frozen=True)
class Shown:
    reading: str
    text: str        # what the converter chose for `reading`
    displayed: str   # what the preedit showed (its tail may be kana)
    words: tuple[tuple[str, str], ...] = ()   # `text` as words, when it aligned


def tail_unfinished(word: tuple[str, str]) -> bool:
    reading, surface = word
    return len(reading) <= SHORT_TAIL and has_kanji_or_katakana(surface)   # written, not kana as typed


def kana_tail(words: Sequence[tuple[str, str]]) -> str:
    """The text of `words` (reading, surface) with the last word written as its reading."""
    if not words:
        return ""
    return "".join(surface for _, surface in words[:-1]) + words[-1][0]


def tail_is_open(reading: str, pending: bool) -> bool:
    return pending or reading.endswith(CONTINUING_KANA)


# reading -> surfaces the user chose for exactly that reading, last choice first
Learned = Callable[[str], Sequence[str]]


def chosen_before(reading: str, text: str, tail_reading: str, learned: Learned | None) -> bool:
    """True when a reading ending in the whole tail was learned as spelled at the end of `text`."""
    if learned is None:
        return False
    for start in range(len(reading) - len(tail_reading) + 1):
        surfaces = learned(reading[start:])
        if surfaces and text.endswith(surfaces[0]):
            return True
    return False


class LiveStabilizer:
    """Chooses what the preedit shows while typing; one per session, reset per composition."""

    def __init__(self, aligner: WordAligner | None, learned: Learned | None = None) -> None:
        self.aligner = aligner
        self.learned = learned
        self.enabled = aligner is not None
        self.shown: Shown | None = None

    def reset(self) -> None:
        self.shown = None

    def choose(self, reading: str, proposal: str, pending: bool = False, finished: bool = False) -> str:
        """The live text to show for `reading`, given the converter's `proposal`.

        pending: romaji keys of the next kana are typed but not resolved yet.
        finished: typing is over (Return commits): the tail converts too.
        """
        if not self.enabled or not reading or not proposal or finished:
            self.shown = Shown(reading, proposal, proposal) if proposal else None
            return proposal
        shown = self.shown
        if tail_is_open(reading, pending):
            if shown is not None and reading.startswith(shown.reading):
                # The kana typed since stay kana until the word they start is complete.
                return shown.displayed + reading[len(shown.reading):]
            words = self._words(reading, proposal)
            return kana_tail(words) if words else proposal
        displayed = proposal
        words = self._words(reading, proposal)
        if words and tail_unfinished(words[-1]) and not chosen_before(reading, proposal, words[-1][0],
                                                                         self.learned):
            displayed = kana_tail(words)
        self.shown = Shown(reading, proposal, displayed, tuple(words or ()))
        return displayed

    def _words(self, reading: str, text: str) -> Words | None:
        """`text` as dictionary words of `reading`. When it keeps the words shown before but the
        last, only the rest is aligned (a key then costs a short alignment, not a whole one)."""
        shown = self.shown
        if shown is not None and len(shown.words) > 1:
            settled_reading = "".join(r for r, _ in shown.words[:-1])
            settled = "".join(w for _, w in shown.words[:-1])
            if (len(reading) > len(settled_reading) and reading.startswith(settled_reading)
                    and len(text) > len(settled) and text.startswith(settled)):
                rest = self._align(reading[len(settled_reading):], text[len(settled):])
                if rest is not None:
                    return list(shown.words[:-1]) + rest
        return self._align(reading, text)

    def _align(self, reading: str, text: str) -> Words | None:
        alignment = self.aligner.align(reading, text)
        return None if alignment is None else [(w.reading, w.surface) for w in alignment.words]


def stabilizer_for(converter: object) -> LiveStabilizer:
    """A stabilizer that finds words with the converter's system dictionary (none: it passes
    the converter's text on unchanged)."""
    # Only an imported module can have made a FusedConverter: importing it here would load
    # llama.cpp (~0.3 s) inside the first context's creation, past the IBus engine's call timeout.
    fused = sys.modules.get("karukan_engine.conversion.fused.converter")
    if fused is not None and isinstance(converter, fused.FusedConverter) and converter.aligner is not None:
        return LiveStabilizer(converter.aligner, _lookup(converter.base.learning))
    if isinstance(converter, DictionaryConverter) and converter.lexicon is not None:
        return LiveStabilizer(_shared_aligner(converter.lexicon), _lookup(converter.learning))
    return LiveStabilizer(None)


def _lookup(learning) -> Learned | None:
    return learning.lookup if learning is not None else None


# One aligner (and its word caches) per dictionary, shared by every session using it.
_ALIGNERS: "weakref.WeakKeyDictionary[object, Aligner]" = weakref.WeakKeyDictionary()
_ALIGNERS_LOCK = threading.Lock()


def _shared_aligner(dictionary) -> Aligner:
    with _ALIGNERS_LOCK:
        aligner = _ALIGNERS.get(dictionary)
        if aligner is None:
            aligner = _ALIGNERS[dictionary] = Aligner(dictionary)
        return aligner
