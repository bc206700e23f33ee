"""The text being typed and what is shown for it: the romaji composer, the input mode's script
(and the Latin word a Shift+letter or a leading `:` starts), the live conversion of the settled reading (through
the stabilizer), the suggestion list, and the request for Space's preparation. The session
decides when; this part knows how."""

from __future__ import annotations

import logging
from dataclasses import replace

from karukan_engine.config import SuggestSettings
from karukan_engine.conversion.stability import LiveStabilizer
from karukan_engine.core.types import ConversionRequest
from karukan_engine.romaji.composer import Composer, Script, reading_of
from karukan_engine.romaji.modes import InputMode
from karukan_engine.session.background import BackgroundWork
from karukan_engine.session.field_context import FieldContext
from karukan_engine.session.keysyms import LOCK_MASK, SHIFT_MASK
from karukan_engine.session.segments import LearnPairs
from karukan_engine.session.states import Composing, SessionState, Suggesting
from karukan_engine.session.suggestions import SuggestionList

log = logging.getLogger(__name__)

# The letters tried after each key, likeliest first (Japanese vowels by frequency: a, o, i, u, e).
NEXT_VOWELS = "aoiue"
# Longer compositions are not anticipated: each anticipated reading's analysis stays cached, and
# a converter that analyses the whole reading (no model) would keep several large ones.
ANTICIPATE_MAX_CHARS = 100

# Longer compositions are refused key by key: no one types this much unconverted, and every
# key costs time proportional to the length (a stuck key must not freeze the desktop).
MAX_COMPOSITION_CHARS = 1000


def next_readings(composer: Composer) -> list[str]:
    """The settled readings the next letter can make that differ from the one now (what a key
    would have to convert anew): each vowel, then a lone pending consonant typed again (kk → っ,
    nn → ん; a consonant after n settles the same ん)."""
    now = composer.settled_reading()
    letters = NEXT_VOWELS
    pending = composer.pending
    if len(pending) == 1 and pending.isascii() and pending.isalpha() and pending not in NEXT_VOWELS:
        letters += pending
    found: list[str] = []
    for letter in letters:
        reading = composer.settled_after(letter)
        if reading and reading != now and reading not in found:
            found.append(reading)
    return found


class Composition:
    def __init__(self, composer: Composer, mode: InputMode, live_enabled: bool, stabilizer: LiveStabilizer,
                 work: BackgroundWork, field: FieldContext, suggest: SuggestSettings,
                 emoji_queries: bool = False, anticipate: bool = False) -> None:
        self.composer = composer
        self.mode = mode
        self.temporary_alphanumeric = False   # Shift+letter typed: Latin until the word ends
        # `:` typed first in a kana mode: a Latin emoji query (`:smile`) that Space converts
        # as one segment (emoji_queries: the emoji rewriter is on).
        self.emoji_queries = emoji_queries
        self.emoji_query = False
        self.live_enabled = live_enabled
        self.anticipate = anticipate          # convert what the next letter makes, between keys
        self.stabilizer = stabilizer          # no flicker while typing
        self.work = work
        self.field = field
        self.suggest = suggest
        composer.script = mode.script

    def typing_latin(self) -> bool:
        return self.temporary_alphanumeric or self.mode.is_alphanumeric

    def space_is_text(self) -> bool:
        """Space types a space (a Latin word) rather than converting (an emoji query converts)."""
        return self.typing_latin() and not self.emoji_query

    def insert(self, ch: str, modifiers: int) -> bool:
        """Type one character; False when the composition is too long to take it."""
        composer = self.composer
        if len(composer.units) + len(composer.pending) >= MAX_COMPOSITION_CHARS:
            return False
        if ch == ":" and self.emoji_queries and composer.is_empty and not self.typing_latin():
            self.emoji_query = self.temporary_alphanumeric = True
            composer.script = Script.HALF_ASCII
        elif ch.isascii() and ch.isalpha():
            if modifiers & LOCK_MASK and not modifiers & SHIFT_MASK:
                ch = ch.lower()   # Caps Lock alone does not mean "switch to Latin"
            elif ch.isupper() and not self.mode.is_alphanumeric and not self.temporary_alphanumeric:
                composer.flush()
                self.temporary_alphanumeric = True
                composer.script = Script.HALF_ASCII
        composer.insert(ch)
        self.field.typed()
        return True

    def switch_mode(self, mode: InputMode) -> None:
        self.composer.flush()
        self.mode = mode
        self.temporary_alphanumeric = self.emoji_query = False
        self.composer.script = mode.script

    def clear(self) -> None:
        self.composer.clear()
        self.stabilizer.reset()
        self.temporary_alphanumeric = self.emoji_query = False
        self.composer.script = self.mode.script

    def edited(self, state: Composing) -> None:
        """The composition changed: refresh what is shown for it and what is asked for it."""
        state.as_typed = False
        self.refresh_live(state)
        if (self.anticipate and self.work.can_anticipate() and self._converts_live(state)
                and len(self.composer.units) < ANTICIPATE_MAX_CHARS):
            self._anticipate_next_letter()
        # Completions of the settled reading: from the converter now, or off the key path
        # through the live link (meanwhile the old items that still fit stay shown).
        reading = self.suggestion_reading(state)
        current = state.suggestions
        if reading is None:
            state.suggestions = None
        elif current is None or current.reading != reading or not current.complete:
            state.suggestions = current.narrowed(reading) if current is not None else None
            found = self.work.suggestions(self.field.request(reading), self.suggest.count)
            if found is not None:
                state.suggestions = SuggestionList.of(reading, found, self.suggest.count)
        # Ask for the conversion Space would start now, computed off the key path if the user
        # pauses: not in password fields (nothing is converted there) nor while Space types a
        # space (Latin words). Its dictionary part comes right after the key where the live
        # text has just analysed that same reading (nothing pending: the lattice is cached).
        if self.field.password or self.typing_latin():
            return
        warm = self._converts_live(state) and not self.composer.pending
        prepare = self.work.can_prepare()
        flushed = reading_of(self.composer.flushed_text()) if warm or prepare else ""   # Space flushes
        if not flushed:
            return
        request = self.field.request(flushed)
        if warm:
            self.work.warm_space(request)
        if prepare:
            self.work.prepare(request)

    def refresh_live(self, state: SessionState, finished: bool = False) -> None:
        """Recompute the live conversion of the settled text (all live text goes through here).
        finished: the composition is being committed (its unfinished tail converts too)."""
        composing = state.back if isinstance(state, Suggesting) else state
        if not isinstance(composing, Composing):
            return
        composing.live_text = None
        if not self._converts_live(state):
            return
        reading = self.composer.settled_reading()
        if not reading:
            return
        try:
            text = self.work.live_text(self.field.request(reading))
            composing.live_text = self.stabilizer.choose(reading, text or "", bool(self.composer.pending),
                                                         finished) or None
        except Exception as exc:  # a failing converter must not take the keyboard down
            log.warning("live conversion failed: %s", type(exc).__name__)

    def _converts_live(self, state: SessionState) -> bool:
        # Hiragana typing only: in the katakana modes the preedit keeps the script the user chose.
        return (self.live_enabled and isinstance(state, Composing) and not self.typing_latin()
                and self.mode is InputMode.HIRAGANA)

    def _anticipate_next_letter(self) -> None:
        """Have the live text of what the next letter can settle worked out while the user is
        between keys: most letters that settle a kana are a vowel after a consonant, or a vowel
        alone, or the pending consonant again (っ, ん). The readings are found off the key path,
        on a copy of the composer."""
        scratch = self.composer.copy()
        now = self.field.request("")   # the field as it is now (the work runs on another thread)

        def requests() -> list[ConversionRequest]:
            return [replace(now, reading=reading) for reading in next_readings(scratch)]

        self.work.anticipate(requests)

    def apply_live(self, state: SessionState, reading: str, text: str) -> bool:
        """The model's live text for `reading`, if that reading is still the one composed."""
        if not isinstance(state, Composing) or self.composer.settled_reading() != reading:
            return False
        state.live_text = self.stabilizer.choose(reading, text, bool(self.composer.pending))
        return True

    def apply_suggestions(self, state: SessionState, reading: str, found) -> bool:
        """The completions of `reading`, if it is still the one to complete; True when the
        list shown changes."""
        if not isinstance(state, Composing) or self.suggestion_reading(state) != reading:
            return False
        old = state.suggestions
        state.suggestions = SuggestionList.of(reading, found, self.suggest.count)
        return (old.items if old else ()) != (state.suggestions.items if state.suggestions else ())

    def suggestion_reading(self, state: SessionState) -> str | None:
        """The reading to complete, or None when no list may be shown: [suggest] off, a private
        or password field, not composing hiragana, nothing settled yet."""
        if (self.work.completer is None or self.field.private or self.field.password
                or not isinstance(state, Composing) or self.typing_latin() or self.mode is not InputMode.HIRAGANA):
            return None
        return self.composer.settled_reading() or None

    def shown_suggestions(self, state: SessionState) -> SuggestionList | None:
        if isinstance(state, Composing) and state.suggestions is not None and self.suggestion_reading(state):
            return state.suggestions
        return None

    def to_commit(self, state: SessionState, learn: bool) -> tuple[str, LearnPairs]:
        """The composition as shown, to commit: the live text when it is showing, else the kana."""
        ready = self.commit_preview(state)
        if ready is not None:
            text, pairs = ready
            return text, pairs if learn else ()
        self.composer.flush()
        text = self.composer.text()
        if isinstance(state, Composing) and state.shows_live(self.composer):
            self.refresh_live(state, finished=True)   # the pending keys just settled: convert the whole reading
            if state.live_text is not None:
                return state.live_text, ((reading_of(text), state.live_text),) if learn else ()
        return text, ()

    def commit_preview(self, state: SessionState) -> tuple[str, LearnPairs] | None:
        """What to_commit will give, leaving everything as it is; None when that needs work (keys
        still pending, or a live text whose whole conversion was not worked out for this reading).
        The live text's conversion is the one it was shown from: the stabilizer keeps it, and a
        finished composition shows it whole (its unfinished tail converts too)."""
        composer = self.composer
        if not isinstance(state, Composing) or composer.pending:
            return None
        text = composer.text()
        if not state.shows_live(composer):
            return text, ()
        shown = self.stabilizer.shown
        reading = composer.settled_reading()
        if not self._converts_live(state) or shown is None or shown.reading != reading or not shown.text:
            return None
        return shown.text, ((reading_of(text), shown.text),)

    def typed_keys(self, start: int, reading: str) -> str:
        """The keys typed for `reading` at `start` of the composition, or its romaji (else the
        reading) when they cannot be told."""
        keys = self.composer.keys_for_reading(start, len(reading))
        if keys is not None:
            return keys
        return self.composer.table.romaji_for(reading) or reading
