"""One input context: keys in, views out.

The keymap turns a key into a command for the current state; the state machine below runs it
against the romaji composer and the converter and returns the View a frontend renders. The
session calls only the Converter protocol, and never logs what the user types.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Callable

from karukan_engine.config import Config
from karukan_engine.conversion.live_service import ConversionUpdate, SuggestionUpdate, live_converter
from karukan_engine.conversion.plain import PlainConverter
from karukan_engine.conversion.stability import stabilizer_for
from karukan_engine.core.types import Candidate, Converter, ConversionRequest, Segment, Source, check_segments
from karukan_engine.kana import to_fullwidth_katakana, to_hiragana
from karukan_engine.romaji.composer import Composer, ComposerSettings, Script
from karukan_engine.romaji.modes import InputMode
from karukan_engine.romaji.table import RomajiTable, TableError
from karukan_engine.session.commands import Command
from karukan_engine.session.field import FieldPrivacy
from karukan_engine.session.keymap import Keymap, KeymapError
from karukan_engine.session.keysyms import (
    CONTROL_MASK,
    LOCK_MASK,
    MOD1_MASK,
    MOD4_MASK,
    MODIFIER_KEYSYMS,
    SHIFT_MASK,
    binding_modifiers,
    char_of,
)
from karukan_engine.session.modes import State
from karukan_engine.session.segments import Conversion
from karukan_engine.session.suggestions import SuggestionList
from karukan_engine.session.view import CandidateItem, CandidatePage, PreeditSpan, PreeditStyle, View
from karukan_engine.transliteration import Form

if TYPE_CHECKING:
    from karukan_engine.conversion.live_service import LiveLink, LiveUpdate

log = logging.getLogger(__name__)
_REPORTED: set[str] = set()   # keymap / romaji table problems already logged by this process

_SPACE = 0x20
# Longer compositions are refused key by key: no one types this much unconverted, and every
# key costs time proportional to the length (a stuck key must not freeze the desktop).
MAX_COMPOSITION_CHARS = 1000
_COMMAND_MODIFIERS = CONTROL_MASK | MOD1_MASK | MOD4_MASK

_MODE_COMMANDS = {
    Command.MODE_HIRAGANA: InputMode.HIRAGANA,
    Command.MODE_KATAKANA: InputMode.KATAKANA,
    Command.MODE_HALFWIDTH_KATAKANA: InputMode.HALFWIDTH_KATAKANA,
    Command.MODE_FULLWIDTH_ALPHANUMERIC: InputMode.FULLWIDTH_ALPHANUMERIC,
    Command.MODE_HALFWIDTH_ALPHANUMERIC: InputMode.HALFWIDTH_ALPHANUMERIC,
}


def _cases(text: str) -> list[str]:
    """F9/F10 cycle: as typed in lower case, upper case, capitalised (Mozc's order)."""
    out: list[str] = []
    for variant in (text.lower(), text.upper(), text[:1].upper() + text[1:].lower()):
        if variant not in out:
            out.append(variant)
    return out


# F6–F10: the form; the alphanumeric ones work on the typed keys and cycle through their cases.
_TRANSLITERATIONS: dict[Command, Form] = {
    Command.TO_HIRAGANA: Form.HIRAGANA,
    Command.TO_KATAKANA: Form.KATAKANA,
    Command.TO_HALFWIDTH_KATAKANA: Form.HALFWIDTH_KATAKANA,
    Command.TO_FULLWIDTH_ALPHANUMERIC: Form.FULLWIDTH_ALPHANUMERIC,
    Command.TO_HALFWIDTH_ALPHANUMERIC: Form.HALFWIDTH_ALPHANUMERIC,
}
_CYCLING_FORMS = (Form.FULLWIDTH_ALPHANUMERIC, Form.HALFWIDTH_ALPHANUMERIC)


def reading_of(text: str) -> str:
    """The hiragana reading of composed text (katakana and half-width kana folded back)."""
    return to_hiragana(to_fullwidth_katakana(text))


class Session:
    def __init__(self, converter: Converter, config: Config | None = None) -> None:
        self.converter = converter
        self.config = config or Config()
        # Problems with the user's keymap or romaji table: the session falls back to the
        # defaults and keeps the messages here (frontends may show them).
        self.load_errors: list[str] = []
        self._keymap = self._load_keymap()
        self._composer = Composer(
            table=self._load_table(),
            settings=ComposerSettings(
                punctuation=self.config.input.punctuation,
                symbol_width=self.config.input.symbol_width,
                digit_width=self.config.input.digit_width,
                letter_width=self.config.input.letter_width,
            ),
        )
        self._page_size = self.config.session.page_size
        self._context_chars = self.config.session.context_chars
        self._state = State.PRECOMPOSITION
        self._mode = InputMode.parse(self.config.input.mode)
        self._temporary_alphanumeric = False   # Shift+letter typed: Latin until the word ends
        self._conversion: Conversion | None = None
        self._live_enabled = self.config.session.live_conversion
        self._live_text: str | None = None
        self._live_hidden = False             # back to the reading: kana until the next edit
        self._stabilizer = stabilizer_for(self.converter)   # no flicker while typing
        # Asynchronous live conversion (attach_live): the model's text arrives later.
        self._live_link: LiveLink | None = None
        self._epoch = 0                  # the live epoch of the current event
        # Completions while composing ([suggest]); found off the key path with a live link.
        self._suggest = self.config.suggest
        self._suggestions: SuggestionList | None = None
        self._completer = live_converter(converter) if self._suggest.enabled else None
        self._left_context = ""
        self._right_context = ""
        self._password = False
        self._private = False
        self._aux = ""
        self._commit = ""                     # text committed by the current event
        self._composer.script = self._mode.script

    # ---------------------------------------------------------------- public API

    @property
    def state(self) -> State:
        return self._state

    @property
    def input_mode(self) -> InputMode:
        return self._mode

    @property
    def live_conversion(self) -> bool:
        return self._live_enabled

    @property
    def left_context(self) -> str:
        """Text left of the caret on the current line (bounded): the converter's context."""
        return self._left_context

    @property
    def right_context(self) -> str:
        """Text right of the caret on the current line (bounded), as the application reported it."""
        return self._right_context

    @property
    def view(self) -> View:
        return self._build_view(True, "")

    def process_key(self, keysym: int, modifiers: int = 0, release: bool = False) -> View:
        if release or keysym in MODIFIER_KEYSYMS or self._password:
            return self._build_view(False, "")   # nothing changes, not even the aux text
        self._begin_event()
        command = self._keymap.lookup(self._state, keysym, modifiers)
        if command is not None:
            return self._finish(self._run(command, keysym))
        if self._state is State.DIRECT:
            return self._finish(False)
        ch = char_of(keysym)
        mods = binding_modifiers(modifiers)
        if ch and not mods & _COMMAND_MODIFIERS:
            self._type(ch, modifiers)
            return self._finish(True)
        # Unbound keys: a composition shields itself from stray non-command keys (F1, Insert...),
        # shortcuts with Ctrl/Alt/Super go to the application.
        return self._finish(self._state is not State.PRECOMPOSITION and not mods & _COMMAND_MODIFIERS)

    def focus_in(self) -> View:
        self._begin_event()
        return self._finish(True)

    def focus_out(self) -> View:
        """Commit what is shown, like Mozc; the application's text is unknown after this."""
        self._begin_event()
        self._commit_shown()
        self._left_context = self._right_context = ""
        return self._finish(True)

    def reset(self) -> View:
        """Drop the composition without committing (the application moved the caret)."""
        self._begin_event()
        self._clear_composition()
        self._left_context = self._right_context = ""
        return self._finish(True)

    def set_surrounding_text(self, text: str, cursor: int, anchor: int | None = None) -> None:
        """Text around the caret in the application (characters); only the current line is kept."""
        cursor = max(0, min(len(text), cursor))
        anchor = cursor if anchor is None else max(0, min(len(text), anchor))
        start, end = min(cursor, anchor), max(cursor, anchor)
        left = text[:start].rsplit("\n", 1)[-1]
        right = text[end:].split("\n", 1)[0]
        n = self._context_chars
        self._left_context = left[-n:] if n else ""
        self._right_context = right[:n]

    def attach_live(self, link: LiveLink) -> None:
        """Refine live conversion off the key path (karukan_engine.conversion.live_service).

        Each event begins one live epoch through `link`, and a key is answered with the
        quick (dictionary) text. The model's text goes to the link's deliver callback (the
        context host), which passes it back in with `apply_live_update` on this session's thread.
        """
        self._live_link = link

    def apply_live_update(self, update: LiveUpdate | SuggestionUpdate | ConversionUpdate) -> View | None:
        """The View with the model's live text (or the event's suggestion list, or a quick
        Space's model conversion), or None when the update is stale: for another context, an
        older event, or a reading no longer composed or converted; or when it changes nothing
        shown. Not an event itself: it supersedes nothing."""
        if isinstance(update, SuggestionUpdate):
            return self._apply_suggestions(update)
        if isinstance(update, ConversionUpdate):
            return self._apply_conversion(update)
        link = self._live_link
        if link is None or update.context != link.context or update.epoch != self._epoch:
            return None
        settled = "".join(u.text for u in self._composer.units)
        if self._state is not State.COMPOSITION or reading_of(settled) != update.reading:
            return None
        self._clear_event_output()
        self._live_text = self._stabilizer.choose(update.reading, update.text, bool(self._composer.pending))
        return self._finish(True)

    def set_field_privacy(self, field: FieldPrivacy) -> View | None:
        """Password and PIN fields: keys pass through and nothing is learned.

        A field that turns into a password field while something is typed gets what is shown
        committed (never learned), as a focus change would: the text is not lost, and nothing
        stays hidden in the session to reappear later. The View carrying that commit is
        returned; None when nothing changed on screen.
        """
        password = field.password
        if (self._private or self._password) and not (field.private or password):
            # text typed while the field was private must not become a learned choice's context
            self._left_context = ""
        self._private = field.private
        if password and not self._password and self._state in (State.COMPOSITION, State.CONVERSION,
                                                                State.SUGGESTION):
            self._begin_event()
            self._password = True
            self._commit_shown()
            return self._finish(True)
        self._password = password
        if self._private and self._state is State.SUGGESTION:
            self._leave_suggestions()   # nothing suggested stays selected in a private field
        return None

    def select_candidate(self, index_on_page: int) -> View:
        """A click on the candidate window: select that candidate and commit."""
        self._begin_event()
        if self._state is State.CONVERSION:
            self._select(index_on_page)
        elif self._suggestions_shown() or self._state is State.SUGGESTION:
            self._commit_suggestion_at(index_on_page)
        return self._finish(True)

    def page_up(self) -> View:
        self._begin_event()
        if self._state is State.CONVERSION:
            self._conversion_state().move_page(-1)
        return self._finish(True)

    def page_down(self) -> View:
        self._begin_event()
        if self._state is State.CONVERSION:
            self._conversion_state().move_page(1)
        return self._finish(True)

    def set_input_mode(self, mode: InputMode | str) -> View:
        """Switch input mode (turning the IME on if it was off)."""
        new_mode = InputMode.parse(mode)
        self._begin_event()
        if self._state is State.DIRECT:
            self._state = State.PRECOMPOSITION
        self._switch_mode(new_mode)
        return self._finish(True)

    def set_enabled(self, on: bool) -> View:
        self._begin_event()
        if on:
            self._enable()
        else:
            self._disable()
        return self._finish(True)

    # ---------------------------------------------------------------- commands

    def _run(self, command: Command, keysym: int) -> bool:
        if command is Command.NOP:
            return self._state is not State.DIRECT
        if command is Command.TOGGLE_IME:
            if self._state is State.DIRECT:
                self._enable()
            else:
                self._disable()
            return True
        if command is Command.IME_ON:
            self._enable()
            return True
        if command is Command.IME_OFF:
            self._disable()
            return True
        if command in _MODE_COMMANDS:
            self._enable()
            self._switch_mode(_MODE_COMMANDS[command])
            return True
        if self._state is State.DIRECT:
            return False
        if command is Command.TOGGLE_LIVE_CONVERSION:
            self._live_enabled = not self._live_enabled
            self._aux = "ライブ変換: オン" if self._live_enabled else "ライブ変換: オフ"
            self._refresh_live()
            return True
        if self._state is State.PRECOMPOSITION:
            return self._run_precomposition(command)
        if self._state is State.COMPOSITION:
            return self._run_composition(command, keysym)
        if self._state is State.SUGGESTION:
            return self._run_suggestion(command, keysym)
        return self._run_conversion(command)

    def _run_precomposition(self, command: Command) -> bool:
        if command is Command.INSERT_SPACE:
            full = self._mode in (InputMode.HIRAGANA, InputMode.KATAKANA, InputMode.FULLWIDTH_ALPHANUMERIC)
            self._commit_text("\u3000" if full else " ", learn_pairs=())
            return True
        if command is Command.INSERT_HALF_SPACE:
            self._commit_text(" ", learn_pairs=())
            return True
        return False  # nothing to edit: Return, BackSpace, arrows... belong to the application

    def _run_composition(self, command: Command, keysym: int) -> bool:
        c = self._composer
        if command is Command.CONVERT and keysym == _SPACE and self._typing_latin():
            self._type(" ", 0)   # Latin words keep their spaces
        elif command is Command.PREDICT and self._suggestions_shown():
            self._enter_suggestions()
        elif command in (Command.CONVERT, Command.NEXT_CANDIDATE, Command.PREDICT):
            self._start_conversion()
        elif command is Command.PREV_CANDIDATE:
            if self._start_conversion():
                self._conversion_state().move_candidate(-1)
        elif command in (Command.INSERT_SPACE, Command.INSERT_HALF_SPACE):
            self._type(" ", 0)
        elif command is Command.COMMIT:
            self._commit_composition(learn=True)
        elif command is Command.CANCEL:
            self._clear_composition()   # as in Mozc: one key, live text or not
        elif command is Command.BACKSPACE:
            c.backspace()
            self._after_edit()
        elif command is Command.DELETE:
            c.delete()
            self._after_edit()
        elif command is Command.CURSOR_LEFT:
            c.move(-1)
        elif command is Command.CURSOR_RIGHT:
            c.move(1)
        elif command is Command.CURSOR_HOME:
            c.move_to(0)
        elif command is Command.CURSOR_END:
            c.move_to(len(c.units))
        elif command in _TRANSLITERATIONS:
            c.flush()
            if self._start_conversion(whole=True):
                self._transliterate(command)
        # Other conversion-only commands have nothing to act on yet; the key is still consumed.
        return True

    def _run_suggestion(self, command: Command, keysym: int) -> bool:
        index = command.select_index
        if index is not None:
            self._commit_suggestion_at(index)
        elif command is Command.COMMIT:
            self._commit_suggestion_at(self._suggestion_list().cursor or 0)
        elif command in (Command.NEXT_CANDIDATE, Command.CONVERT, Command.PREDICT, Command.INSERT_SPACE):
            self._suggestions = self._suggestion_list().moved(1)
        elif command is Command.PREV_CANDIDATE:
            self._suggestions = self._suggestion_list().moved(-1)
        elif command in (Command.CANCEL, Command.BACKSPACE):
            self._leave_suggestions()   # back to the reading as typed; the list closes
        elif command not in (Command.NEXT_PAGE, Command.PREV_PAGE, Command.NOP):
            # Editing, cursor and F6–F10 keys act on the reading again, as in composition.
            self._leave_suggestions()
            return self._run_composition(command, keysym)
        return True

    def _run_conversion(self, command: Command) -> bool:
        conv = self._conversion_state()
        index = command.select_index
        if index is not None:
            self._select(index)
        elif command is Command.COMMIT:
            self._commit_conversion()
        elif command in (Command.NEXT_CANDIDATE, Command.CONVERT, Command.INSERT_SPACE):
            conv.move_candidate(1)
        elif command is Command.PREV_CANDIDATE:
            conv.move_candidate(-1)
        elif command is Command.NEXT_PAGE:
            conv.move_page(1)
        elif command is Command.PREV_PAGE:
            conv.move_page(-1)
        elif command in (Command.CANCEL, Command.BACKSPACE):
            self._cancel_conversion()
        elif command in (Command.SEGMENT_FOCUS_LEFT, Command.CURSOR_LEFT):
            conv.move_focus(-1)
        elif command in (Command.SEGMENT_FOCUS_RIGHT, Command.CURSOR_RIGHT):
            conv.move_focus(1)
        elif command in (Command.SEGMENT_FOCUS_FIRST, Command.CURSOR_HOME):
            conv.move_focus(-len(conv.segments))
        elif command in (Command.SEGMENT_FOCUS_LAST, Command.CURSOR_END):
            conv.move_focus(len(conv.segments))
        elif command is Command.SEGMENT_SHRINK:
            self._resize(-1)
        elif command is Command.SEGMENT_EXPAND:
            self._resize(1)
        elif command is Command.COMMIT_SEGMENT:
            self._commit_first_segment()
        elif command in _TRANSLITERATIONS:
            self._transliterate(command)
        return True

    # ---------------------------------------------------------------- typing

    def _type(self, ch: str, modifiers: int) -> None:
        if self._state is State.CONVERSION:
            self._commit_conversion()
        elif self._state is State.SUGGESTION:
            self._commit_suggestion_at(self._suggestion_list().cursor or 0)   # as Mozc: commit, go on
        if len(self._composer.units) + len(self._composer.pending) >= MAX_COMPOSITION_CHARS:
            self._aux = "入力が長すぎます"
            return
        if ch.isascii() and ch.isalpha():
            if modifiers & LOCK_MASK and not modifiers & SHIFT_MASK:
                ch = ch.lower()   # Caps Lock alone does not mean "switch to Latin"
            elif ch.isupper() and not self._mode.is_alphanumeric and not self._temporary_alphanumeric:
                self._composer.flush()
                self._temporary_alphanumeric = True
                self._composer.script = Script.HALF_ASCII
        self._composer.insert(ch)
        self._state = State.COMPOSITION
        self._after_edit()

    def _typing_latin(self) -> bool:
        return self._temporary_alphanumeric or self._mode.is_alphanumeric

    def _after_edit(self) -> None:
        if self._composer.is_empty:
            self._clear_composition()
            return
        self._live_hidden = False
        self._refresh_live()
        self._refresh_suggestions()
        self._prepare_conversion()

    # ---------------------------------------------------------------- suggestions

    def _suggestion_reading(self) -> str | None:
        """The reading to complete, or None when no list may be shown: [suggest] off, a private
        or password field, not composing hiragana, nothing settled yet."""
        if (self._completer is None or self._private or self._password or self._state is not State.COMPOSITION
                or self._typing_latin() or self._mode is not InputMode.HIRAGANA):
            return None
        return reading_of("".join(u.text for u in self._composer.units)) or None

    def _refresh_suggestions(self) -> None:
        """After an edit: the list for the new reading (from the converter now, or off the key
        path through the live link; meanwhile the old items that still fit stay shown)."""
        reading = self._suggestion_reading()
        current = self._suggestions
        if reading is None:
            self._suggestions = None
            return
        if current is not None and current.reading == reading and current.complete:
            return   # a pending key changed nothing settled
        self._suggestions = current.narrowed(reading) if current is not None else None
        request = self._request(reading)
        count = self._suggest.count
        if self._live_link is not None:
            self._live_link.suggest(self._epoch, request, count)
            return
        assert self._completer is not None
        try:
            # No loop to deliver a second list (karukan keys): the model's ranking, if any, at once.
            found = self._completer.refined_suggestions(request, count) or self._completer.suggestions(request, count)
        except Exception as exc:  # a failing converter must not take the keyboard down
            log.warning("suggestions failed: %s", type(exc).__name__)
            found = []
        self._suggestions = SuggestionList.of(reading, found, count)

    def _apply_suggestions(self, update: SuggestionUpdate) -> View | None:
        link = self._live_link
        if link is None or update.context != link.context or update.epoch != self._epoch:
            return None
        if self._suggestion_reading() != update.reading:
            return None
        old = self._suggestions
        new = SuggestionList.of(update.reading, update.suggestions, self._suggest.count)
        self._suggestions = new
        if (old.items if old else ()) == (new.items if new else ()):
            return None   # nothing changes on screen
        self._clear_event_output()
        return self._finish(True)

    def _suggestions_shown(self) -> bool:
        return (self._suggestions is not None and self._state is State.COMPOSITION
                and self._suggestion_reading() is not None)

    def _suggestion_list(self) -> SuggestionList:
        assert self._suggestions is not None
        return self._suggestions

    def _enter_suggestions(self) -> None:
        # Pending keys stay pending: a commit drops them, Escape gives them back.
        self._suggestions = self._suggestion_list().entered()
        self._state = State.SUGGESTION

    def _leave_suggestions(self) -> None:
        self._suggestions = None
        if self._state is State.SUGGESTION:
            self._state = State.COMPOSITION

    def _commit_suggestion_at(self, index: int) -> None:
        """Commit the suggestion and learn its whole reading (never in a private field)."""
        items = self._suggestion_list().items if self._suggestions is not None else ()
        if not 0 <= index < len(items):
            return
        chosen: Candidate = items[index]
        self._commit_text(chosen.surface, (self._suggestion_list().learn_pair(chosen),))

    # ---------------------------------------------------------------- prepared Space

    def _prepare_conversion(self) -> None:
        """After an edit (with a live link): ask for the conversion Space would start now, to be
        computed off the key path if the user pauses. Not in password fields (nothing is
        converted there) nor while Space types a space (Latin words)."""
        link = self._live_link
        if (link is None or self._password or self._state is not State.COMPOSITION
                or self._typing_latin() or not link.can_prepare()):
            return
        reading = reading_of(self._composer.flushed_text())   # what Space converts (it flushes)
        if reading:
            link.prepare(self._epoch, self._request(reading))

    # ---------------------------------------------------------------- live conversion

    def _refresh_live(self, finished: bool = False) -> None:
        """Recompute the live conversion of the settled text (all live text goes through here).
        finished: the composition is being committed (its unfinished tail converts too)."""
        self._live_text = None
        # Hiragana typing only: in the katakana modes the preedit keeps the script the user chose.
        if (not self._live_enabled or self._state is not State.COMPOSITION or self._typing_latin()
                or self._mode is not InputMode.HIRAGANA):
            return
        settled = "".join(u.text for u in self._composer.units)
        if not settled:
            return
        request = self._request(reading_of(settled))
        try:
            if self._live_link is not None:
                text = self._live_link.key(self._epoch, request)
            else:
                text = self.converter.live(request)
            self._live_text = self._stabilizer.choose(request.reading, text or "",
                                                      bool(self._composer.pending), finished) or None
        except Exception as exc:  # a failing converter must not take the keyboard down
            log.warning("live conversion failed: %s", type(exc).__name__)

    def _live_shown(self) -> bool:
        c = self._composer
        return (self._live_text is not None and not self._live_hidden
                and c.cursor == len(c.units) and self._state is State.COMPOSITION)

    # ---------------------------------------------------------------- conversion

    def _request(self, reading: str, fixed_lengths: tuple[int, ...] = ()) -> ConversionRequest:
        return ConversionRequest(reading, self._left_context, fixed_lengths, learn=self._learning_allowed())

    def _learning_allowed(self) -> bool:
        return self.config.learning.enabled and not self._password and not self._private

    def _segments(self, request: ConversionRequest, whole: bool = False, quick: bool = False) -> list[Segment]:
        """The converter's segments, checked; plain kana segments if it fails or misbehaves.
        quick (Space, with a live link): segments at once, the model's following if they differ
        (quick Space, applied by _apply_conversion)."""
        if not whole:
            try:
                link = self._live_link
                final = True
                if quick and link is not None and not request.fixed_lengths:
                    segments, final = link.convert_quick(request)
                else:
                    segments = self.converter.convert(request)
                check_segments(request.reading, segments, request.fixed_lengths)
                if not final:
                    assert link is not None
                    link.refine_conversion(self._epoch, request)
                return segments
            except Exception as exc:
                log.warning("conversion failed: %s", type(exc).__name__)
        return PlainConverter().convert(ConversionRequest(
            request.reading, request.left_context, () if whole else request.fixed_lengths, request.learn))

    def _start_conversion(self, whole: bool = False) -> bool:
        """Enter conversion; whole=True makes one segment of the whole reading (F6–F10)."""
        self._composer.flush()
        reading = reading_of(self._composer.text())
        if not reading:
            self._after_edit()
            return False
        segments = self._segments(self._request(reading), whole, quick=True)
        self._conversion = Conversion.from_segments(reading, segments, self._page_size)
        self._state = State.CONVERSION
        self._suggestions = None
        return True

    def _apply_conversion(self, update: ConversionUpdate) -> View | None:
        """A quick Space's model conversion replaces the quick one if no event came since (the
        user has not moved, selected or typed: the epoch is the Space's) and it differs."""
        link = self._live_link
        conv = self._conversion
        if (link is None or update.context != link.context or update.epoch != self._epoch
                or self._state is not State.CONVERSION or conv is None or conv.reading != update.reading
                or conv.fixed_lengths):
            return None
        segments = list(update.segments)
        try:
            check_segments(update.reading, segments, ())
        except Exception as exc:  # a misbehaving converter: keep what is shown
            log.warning("conversion update refused: %s", type(exc).__name__)
            return None
        refined = Conversion.from_segments(update.reading, segments, self._page_size)
        if _shown(refined) == _shown(conv):
            return None   # nothing changes on screen
        self._conversion = refined
        self._clear_event_output()
        return self._finish(True)

    def _conversion_state(self) -> Conversion:
        assert self._conversion is not None
        return self._conversion

    def _cancel_conversion(self) -> None:
        """Back to the reading (Mozc's Escape/BackSpace in conversion): the kana as typed, even
        with live conversion on, until the next edit; the next Escape cancels."""
        self._conversion = None
        self._state = State.COMPOSITION
        if self._composer.is_empty:
            self._clear_composition()
            return
        self._live_text = None
        self._live_hidden = True

    def _resize(self, delta: int) -> None:
        conv = self._conversion_state()
        fixed = conv.resized_lengths(delta)
        if fixed is None:
            return
        segments = self._segments(self._request(conv.reading, fixed))
        conv.replace_segments(segments, fixed)

    def _select(self, index_on_page: int) -> None:
        if self._conversion_state().select_on_page(index_on_page):
            self._commit_conversion()

    def _transliterate(self, command: Command) -> None:
        conv = self._conversion_state()
        seg = conv.focused
        form = _TRANSLITERATIONS[command]
        if form in _CYCLING_FORMS:
            variants = _cases(form.of(self._keys_for_span(conv.segment_start(conv.focus), len(seg.reading))))
        else:
            variants = [form.of(seg.reading)]
        current = seg.chosen.surface
        # Pressing the same key again cycles (tokyo → TOKYO → Tokyo).
        surface = variants[(variants.index(current) + 1) % len(variants)] if current in variants else variants[0]
        seg.choose_surface(surface, form.label, Source.TRANSLITERATION)

    def _keys_for_span(self, start: int, length: int) -> str:
        """The keys typed for reading[start:start+length], or the reading when they cannot be told."""
        units = self._composer.units
        bounds: dict[int, int] = {}
        for k in range(len(units) + 1):
            bounds.setdefault(len(reading_of("".join(u.text for u in units[:k]))), k)
        if start in bounds and start + length in bounds:
            return "".join(u.keys for u in units[bounds[start] : bounds[start + length]])
        reading = self._conversion_state().reading[start : start + length]
        return self._composer.table.romaji_for(reading) or reading

    # ---------------------------------------------------------------- committing

    def _commit_composition(self, learn: bool) -> None:
        """Commit the composition as shown: the live text when it is showing, else the kana."""
        self._composer.flush()
        text = self._composer.text()
        pairs: tuple[tuple[str, str], ...] = ()
        if self._live_shown():
            self._refresh_live(finished=True)   # the pending keys just settled: convert the whole reading
            if self._live_text is not None:
                pairs = ((reading_of(text), self._live_text),) if learn else ()
                text = self._live_text
        self._commit_text(text, pairs)

    def _commit_conversion(self) -> None:
        conv = self._conversion_state()
        pairs = tuple((s.reading, s.chosen.surface) for s in conv.segments if s.chosen.source != Source.TRANSLITERATION)
        self._commit_text(conv.text(), pairs)

    def _commit_first_segment(self) -> None:
        conv = self._conversion_state()
        if len(conv.segments) == 1:
            self._commit_conversion()
            return
        first = conv.segments[0]
        pairs = () if first.chosen.source == Source.TRANSLITERATION else ((first.reading, first.chosen.surface),)
        self._emit_commit(first.chosen.surface, pairs)
        # Keep converting the rest: drop the committed reading from the composition.
        units = self._composer.units
        cut = next((k for k in range(len(units) + 1)
                    if len(reading_of("".join(u.text for u in units[:k]))) >= len(first.reading)), len(units))
        self._composer.remove_prefix(cut)
        conv.segments.pop(0)
        conv.reading = conv.reading[len(first.reading):]
        conv.fixed_lengths = conv.fixed_lengths[1:]
        conv.focus = 0

    def _commit_shown(self) -> None:
        """Commit whatever is in the preedit, without learning (focus out, IME off)."""
        if self._state is State.CONVERSION:
            self._commit_text(self._conversion_state().text(), learn_pairs=())
        elif self._state is State.SUGGESTION:
            chosen = self._suggestion_list().selected
            self._commit_text(chosen.surface if chosen else "", learn_pairs=())
        elif self._state is State.COMPOSITION:
            self._commit_composition(learn=False)

    def _commit_text(self, text: str, learn_pairs: tuple[tuple[str, str], ...]) -> None:
        self._emit_commit(text, learn_pairs)
        self._clear_composition()

    def _emit_commit(self, text: str, learn_pairs: tuple[tuple[str, str], ...]) -> None:
        if not text:
            return
        self._commit += text
        if learn_pairs and self._learning_allowed():
            try:
                self.converter.record(list(learn_pairs), self._left_context)
            except Exception as exc:
                log.warning("learning failed: %s", type(exc).__name__)
        if self._context_chars:
            # Apps without surrounding text still get what we committed as left context.
            self._left_context = (self._left_context + text)[-self._context_chars:]

    def _clear_composition(self) -> None:
        self._composer.clear()
        self._conversion = None
        self._suggestions = None
        self._live_text = None
        self._live_hidden = False
        self._stabilizer.reset()
        if self._state is not State.DIRECT:
            self._state = State.PRECOMPOSITION
        self._temporary_alphanumeric = False
        self._composer.script = self._mode.script

    # ---------------------------------------------------------------- IME on/off, modes

    def _enable(self) -> None:
        if self._state is State.DIRECT:
            self._state = State.PRECOMPOSITION

    def _disable(self) -> None:
        self._commit_shown()
        self._clear_composition()
        self._state = State.DIRECT

    def _switch_mode(self, mode: InputMode) -> None:
        self._leave_suggestions()
        self._composer.flush()
        self._mode = mode
        self._temporary_alphanumeric = False
        self._composer.script = mode.script
        if self._state is State.COMPOSITION:
            self._after_edit()

    # ---------------------------------------------------------------- view

    def _begin_event(self) -> None:
        self._clear_event_output()
        if self._live_link is not None:
            # The event's one supersession: a pending model result would now be stale.
            self._epoch = self._live_link.begin()

    def _clear_event_output(self) -> None:
        self._commit = ""
        self._aux = ""

    def _finish(self, handled: bool) -> View:
        return self._build_view(handled, self._commit)

    def _build_view(self, handled: bool, commit: str) -> View:
        preedit: tuple[PreeditSpan, ...] = ()
        caret = 0
        candidates = None
        suggestions = None
        if self._state is State.COMPOSITION:
            text, caret = self._composition_display()
            preedit = (PreeditSpan(text, PreeditStyle.UNDERLINE),) if text else ()
            if self._suggestions_shown():
                suggestions = self._suggestion_list().page()
        elif self._state is State.SUGGESTION:
            chosen = self._suggestion_list().selected
            preedit = (PreeditSpan(chosen.surface, PreeditStyle.HIGHLIGHT),) if chosen else ()
            suggestions = self._suggestion_list().page()
        elif self._state is State.CONVERSION:
            conv = self._conversion_state()
            preedit = tuple(
                PreeditSpan(s.chosen.surface, PreeditStyle.HIGHLIGHT if i == conv.focus else PreeditStyle.UNDERLINE)
                for i, s in enumerate(conv.segments)
            )
            caret = conv.preedit_start(conv.focus)
            candidates = self._candidate_page(conv)
        return View(
            handled=handled,
            preedit=preedit,
            caret=caret,
            candidates=candidates,
            aux=self._aux,
            commit=commit,
            mode=self._mode.value,
            enabled=self._state is not State.DIRECT,
            suggestions=suggestions,
        )

    def _composition_display(self) -> tuple[str, int]:
        c = self._composer
        if self._live_shown() and self._live_text is not None:
            text = self._live_text + c.text()[len(c.units):]   # live text, then pending keys
            return text, len(text)
        return c.text(), c.caret()

    def _candidate_page(self, conv: Conversion) -> CandidatePage:
        seg = conv.focused
        size = conv.page_size
        page = seg.index // size
        start = page * size
        items = tuple(
            CandidateItem(str(i + 1), cand.surface, cand.annotation)
            for i, cand in enumerate(seg.candidates[start : start + size])
        )
        return CandidatePage(items, seg.index - start, page, conv.pages(), len(seg.candidates))

    # ---------------------------------------------------------------- loading

    def _load_keymap(self) -> Keymap:
        path = self.config.session.keymap
        if path:
            try:
                return Keymap.load(path)
            except KeymapError as exc:
                self._load_error(str(exc))
        return Keymap.default()

    def _load_table(self) -> RomajiTable:
        path = self.config.input.romaji_table
        if path:
            try:
                return RomajiTable.load(path)
            except TableError as exc:
                self._load_error(str(exc))
        return RomajiTable.default()

    def _load_error(self, message: str) -> None:
        self.load_errors.append(message)
        if message not in _REPORTED:   # every context loads the same files: say it once
            _REPORTED.add(message)
            log.warning("%s; using the default", message)


def _shown(conv: Conversion) -> tuple:
    """What a conversion puts on screen right after Space: each segment's reading and first
    candidate, and the focused segment's candidate list."""
    return (tuple((c.reading, c.chosen.surface) for c in conv.segments),
            tuple(c.surface for c in conv.focused.candidates))
