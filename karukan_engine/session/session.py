"""One input context: keys in, views out.

The keymap turns a key into a command for the current state (states.py); the state machine below
runs it and asks its parts: composition.py (typing, live text, suggestions), segments.py (the
conversion, which edits its own segments; rewriters add to its lists), background.py (quick and late
answers), field_context.py, output.py (the View). It calls only the Converter protocol, logs no text."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from karukan_engine.config import Config
from karukan_engine.conversion.stability import stabilizer_for
from karukan_engine.core.types import Converter, check_segments
from karukan_engine.live.live_service import UpdateKind, live_converter
from karukan_engine.rewriters import RewriterStage
from karukan_engine.romaji.composer import Composer, ComposerSettings, reading_of
from karukan_engine.romaji.modes import InputMode
from karukan_engine.session.background import BackgroundWork
from karukan_engine.session.commands import MODE_COMMANDS, TRANSLITERATIONS, Command
from karukan_engine.session.composition import MAX_COMPOSITION_CHARS, Composition
from karukan_engine.session.field import FieldPrivacy
from karukan_engine.session.field_context import FieldContext
from karukan_engine.session.keysyms import (CONTROL_MASK, MOD1_MASK, MOD4_MASK, MODIFIER_KEYSYMS, NAME_TO_KEYSYM,
                                            binding_modifiers, char_of)
from karukan_engine.session.modes import State
from karukan_engine.session.output import build_view
from karukan_engine.session.segments import Conversion, LearnPairs, refined
from karukan_engine.session.states import (Composing, Converting, Direct, Idle, SessionState, Suggesting,
                                           suggestion_choice, without_suggestions)
from karukan_engine.session.user_setup import load_keymap, load_romaji_table
from karukan_engine.session.view import View

if TYPE_CHECKING:
    from karukan_engine.live.live_service import LateUpdate, LiveLink

__all__ = ["MAX_COMPOSITION_CHARS", "Session", "reading_of"]

log = logging.getLogger(__name__)

_SPACE = 0x20
RETURN_KEYSYM = NAME_TO_KEYSYM["Return"]
_COMMAND_MODIFIERS = CONTROL_MASK | MOD1_MASK | MOD4_MASK


class Session:
    def __init__(self, converter: Converter, config: Config | None = None, rewriters: RewriterStage | None = None) -> None:
        self.converter = converter
        self.config = config or Config()
        # Problems with the user's keymap or romaji table: the session falls back to the
        # defaults and keeps the messages here (frontends may show them).
        self.load_errors: list[str] = []
        self._keymap = load_keymap(self.config.session.keymap, self.load_errors)
        inputs = self.config.input
        self._composer = Composer(
            table=load_romaji_table(inputs.romaji_table, self.load_errors),
            settings=ComposerSettings(punctuation=inputs.punctuation, symbol_width=inputs.symbol_width,
                                      digit_width=inputs.digit_width, letter_width=inputs.letter_width),
        )
        self._page_size = self.config.session.page_size
        self._rewriters = rewriters or RewriterStage(self.config.rewriters)   # emoji, dates … on Space
        self._state: SessionState = Idle()
        # Completions while composing ([suggest]); found off the key path with a live link.
        suggest = self.config.suggest
        self._work = BackgroundWork(converter, live_converter(converter) if suggest.enabled else None)
        self._field = FieldContext(self.config.session.context_chars, self.config.learning.enabled)
        self._typing = Composition(self._composer, InputMode.parse(inputs.mode), self.config.session.live_conversion,
                                   stabilizer_for(converter), self._work, self._field, suggest, self.config.rewriters.emoji,
                                   anticipate=self.config.session.anticipate)
        self._aux = self._commit = ""         # _commit: text committed by the current event
        # Choices committed with a live link, learned once the reply is out (learn_pending):
        # (pairs, the text left of them then).
        self._unlearned: list[tuple[list[tuple[str, str]], str]] = []

    # ---------------------------------------------------------------- public API

    @property
    def state(self) -> State:
        return self._state.kind

    @property
    def input_mode(self) -> InputMode:
        return self._typing.mode

    @property
    def live_conversion(self) -> bool:
        return self._typing.live_enabled

    @property
    def left_context(self) -> str:
        """Text left of the caret on the current line (bounded): the converter's context; a
        newline where the application says the caret starts its line (field_context.LINE_START),
        empty where nothing is known."""
        return self._field.left

    @property
    def right_context(self) -> str:
        """Text right of the caret on the current line (bounded), as the application reported it."""
        return self._field.right

    @property
    def view(self) -> View:
        return self._view(True, commit="")

    def process_key(self, keysym: int, modifiers: int = 0, release: bool = False) -> View:
        if release or keysym in MODIFIER_KEYSYMS or self._field.password:
            return self._view(False, commit="")   # nothing changes, not even the aux text
        self._begin_event()
        command = self._keymap.lookup(self.state, keysym, modifiers)
        if command is not None:
            return self._view(self._run(command, keysym))
        if isinstance(self._state, Direct):
            return self._view(False)
        ch = char_of(keysym)
        mods = binding_modifiers(modifiers)
        if ch and not mods & _COMMAND_MODIFIERS:
            self._type(ch, modifiers)
            return self._view(True)
        # Unbound keys: a composition shields itself from stray non-command keys (F1, Insert...),
        # shortcuts with Ctrl/Alt/Super go to the application.
        return self._view(not isinstance(self._state, Idle) and not mods & _COMMAND_MODIFIERS)

    def return_committed(self, text: str) -> View:
        """A frontend committed `text` for a plain Return itself, from the last view's on_return
        (no round trip before the application sees it). The session does what that Return does,
        learning included, without committing again. Where the composition has changed since
        that view (a late view crossed the key), what the user committed is not learned and the
        composition, committed already, is dropped."""
        if not text or self._field.password:
            return self._view(True, commit="")
        self._begin_event()
        if text == self._return_text():
            self._run(Command.COMMIT, RETURN_KEYSYM)
        else:
            self._field.committed(text)
            self._clear_composition()
        return self._view(True, commit="")

    def focus_in(self) -> View:
        self._begin_event()
        return self._view(True)

    def focus_out(self) -> View:
        """Commit what is shown, like Mozc; the application's text is unknown after this."""
        self._begin_event()
        self._commit_shown()
        self._field.forget()
        return self._view(True)

    def reset(self) -> View:
        """Drop the composition without committing (the application moved the caret)."""
        self._begin_event()
        self._clear_composition()
        self._field.forget()
        return self._view(True)

    @property
    def learning_pending(self) -> bool:
        """Choices were committed that learn_pending has not learned yet."""
        return bool(self._unlearned)

    def learn_pending(self) -> None:
        """Learn the choices committed since the last event. With a live link a commit's reply
        goes out first (the host calls this right after it); every event also does it first,
        so no conversion runs without them."""
        pending, self._unlearned = self._unlearned, []
        for pairs, left in pending:
            try:
                self._rewriters.record(self.converter, pairs, left)
            except Exception as exc:
                log.warning("learning failed: %s", type(exc).__name__)

    def set_surrounding_text(self, text: str, cursor: int, anchor: int | None = None) -> None:
        """Text around the caret in the application (characters); only the current line is kept."""
        self._field.surround(text, cursor, anchor)

    def attach_live(self, link: LiveLink) -> None:
        """Refine live conversion off the key path (karukan_engine.live.live_service).

        Each event begins one live epoch through `link`, and a key is answered with the
        quick (dictionary) text. The model's text goes to the link's deliver callback (the
        context host), which passes it back in with `apply_live_update` on this session's thread.
        """
        self._work.link = link

    def apply_live_update(self, update: LateUpdate) -> View | None:
        """The View with a late answer applied (the model's live text, the event's suggestion
        list, or a quick Space's model conversion), or None when the update is stale: for another
        context, an older event, or a reading no longer composed or converted; or when it
        changes nothing shown. Not an event itself: it supersedes nothing."""
        if not self._work.current(update):
            return None
        state = self._state
        if update.kind is UpdateKind.LIVE:
            applied = self._typing.apply_live(state, update.reading, update.text)
        elif update.kind is UpdateKind.SUGGESTIONS:
            applied = self._typing.apply_suggestions(state, update.reading, update.suggestions)
        else:
            better = None
            if isinstance(state, Converting):
                try:
                    check_segments(update.reading, list(update.segments), ())
                    better = refined(state.conversion, update.reading, list(update.segments))
                except Exception as exc:  # a misbehaving converter: keep what is shown
                    log.warning("conversion update refused: %s", type(exc).__name__)
            applied = better is not None
            if better is not None:
                self._state = Converting(better)
        if not applied:
            return None
        self._commit = self._aux = ""
        return self._view(True)

    def set_field_privacy(self, field: FieldPrivacy) -> View | None:
        """Password and PIN fields: keys pass through and nothing is learned; private fields:
        nothing typed there is learned, even after the field turns normal.

        A field that turns into a password field while something is typed gets what is shown
        committed (never learned), as a focus change would: the text is not lost, and nothing
        stays hidden in the session to reappear later. The View carrying that commit is
        returned; None when nothing changed on screen.
        """
        was_password = self._field.password
        composing = isinstance(self._state, (Composing, Converting, Suggesting))
        self._field.set_privacy(field, composing)
        if field.password and not was_password and composing:
            self._begin_event()
            self._commit_shown()
            return self._view(True)
        if field.private and isinstance(self._state, Suggesting):
            self._state = without_suggestions(self._state)   # nothing suggested stays selected in a private field
        return None

    def select_candidate(self, index_on_page: int) -> View:
        """A click on the candidate window: select that candidate and commit."""
        self._begin_event()
        state = self._state
        if isinstance(state, Converting):
            if state.conversion.select_on_page(index_on_page):
                self._commit_text(state.conversion.text(), state.conversion.learn_pairs())
        elif self._typing.shown_suggestions(state) is not None or isinstance(state, Suggesting):
            self._commit_text(*suggestion_choice(self._state, index_on_page))
        return self._view(True)

    def page_up(self) -> View:
        self._begin_event()
        if isinstance(self._state, Converting):
            self._state.conversion.move_page(-1)
        return self._view(True)

    def page_down(self) -> View:
        self._begin_event()
        if isinstance(self._state, Converting):
            self._state.conversion.move_page(1)
        return self._view(True)

    def set_input_mode(self, mode: InputMode | str) -> View:
        """Switch input mode (turning the IME on if it was off)."""
        new_mode = InputMode.parse(mode)
        self._begin_event()
        self._set_enabled(True)
        self._switch_mode(new_mode)
        return self._view(True)

    def set_enabled(self, on: bool) -> View:
        self._begin_event()
        self._set_enabled(on)
        return self._view(True)

    # ---------------------------------------------------------------- commands

    def _run(self, command: Command, keysym: int) -> bool:
        state = self._state
        if command is Command.NOP:
            return not isinstance(state, Direct)
        if command in (Command.TOGGLE_IME, Command.IME_ON, Command.IME_OFF):
            self._set_enabled(command is Command.IME_ON or (command is Command.TOGGLE_IME and isinstance(state, Direct)))
            return True
        if command in MODE_COMMANDS:
            self._set_enabled(True)
            self._switch_mode(MODE_COMMANDS[command])
            return True
        if isinstance(state, Direct):
            return False
        if command is Command.TOGGLE_LIVE_CONVERSION:
            typing = self._typing
            typing.live_enabled = not typing.live_enabled
            self._aux = "ライブ変換: オン" if typing.live_enabled else "ライブ変換: オフ"
            typing.refresh_live(state)
            return True
        if isinstance(state, Composing):
            return self._run_composition(command, keysym, state)
        if isinstance(state, Suggesting):
            return self._run_suggestion(command, keysym, state)
        if isinstance(state, Converting):
            return self._run_conversion(command, state.conversion)
        # Idle: only spaces; Return, BackSpace, arrows... belong to the application.
        if command in (Command.INSERT_SPACE, Command.INSERT_HALF_SPACE):
            full = command is Command.INSERT_SPACE and self._typing.mode in (
                InputMode.HIRAGANA, InputMode.KATAKANA, InputMode.FULLWIDTH_ALPHANUMERIC)
            self._commit_text("\u3000" if full else " ", learn_pairs=())
            return True
        return False

    def _run_composition(self, command: Command, keysym: int, state: Composing) -> bool:
        c = self._composer
        shown = self._typing.shown_suggestions(state)
        if command is Command.CONVERT and keysym == _SPACE and self._typing.space_is_text():
            self._type(" ", 0)   # Latin words keep their spaces
        elif command is Command.PREDICT and shown is not None:
            # Pending keys stay pending: a commit drops them, Escape gives them back.
            self._state = Suggesting(shown.entered(), state)
        elif command in (Command.CONVERT, Command.NEXT_CANDIDATE, Command.PREDICT):
            self._start_conversion(whole=self._typing.emoji_query)   # `:smile` stays one segment
        elif command is Command.PREV_CANDIDATE:
            conversion = self._start_conversion()
            if conversion is not None:
                conversion.move_candidate(-1)
        elif command in (Command.INSERT_SPACE, Command.INSERT_HALF_SPACE):
            self._type(" ", 0)
        elif command is Command.COMMIT:
            self._commit_text(*self._typing.to_commit(state, learn=True))
        elif command is Command.CANCEL:
            self._clear_composition()   # as in Mozc: one key, live text or not
        elif command in (Command.BACKSPACE, Command.DELETE):
            (c.backspace if command is Command.BACKSPACE else c.delete)()
            self._after_edit()
        elif command in (Command.CURSOR_LEFT, Command.CURSOR_RIGHT):
            c.move(-1 if command is Command.CURSOR_LEFT else 1)
        elif command in (Command.CURSOR_HOME, Command.CURSOR_END):
            c.move_to(0 if command is Command.CURSOR_HOME else len(c.units))
        elif command in TRANSLITERATIONS:
            c.flush()
            conversion = self._start_conversion(whole=True)
            if conversion is not None:
                conversion.transliterate(TRANSLITERATIONS[command], self._typing.typed_keys)
        # Other conversion-only commands have nothing to act on yet; the key is still consumed.
        return True

    def _run_suggestion(self, command: Command, keysym: int, state: Suggesting) -> bool:
        index = command.select_index
        if index is not None or command is Command.COMMIT:
            self._commit_text(*suggestion_choice(self._state, state.suggestions.cursor or 0 if index is None else index))
        elif command in (Command.NEXT_CANDIDATE, Command.CONVERT, Command.PREDICT, Command.INSERT_SPACE):
            state.suggestions = state.suggestions.moved(1)
        elif command is Command.PREV_CANDIDATE:
            state.suggestions = state.suggestions.moved(-1)
        elif command in (Command.CANCEL, Command.BACKSPACE):
            self._state = without_suggestions(state)   # back to the reading as typed; the list closes
        elif command not in (Command.NEXT_PAGE, Command.PREV_PAGE, Command.NOP):
            # Editing, cursor and F6–F10 keys act on the reading again, as in composition.
            self._state = without_suggestions(state)
            return self._run(command, keysym)
        return True

    def _run_conversion(self, command: Command, conv: Conversion) -> bool:
        index = command.select_index
        if index is not None or command is Command.COMMIT:
            if index is None or conv.select_on_page(index):
                self._commit_text(conv.text(), conv.learn_pairs())
        elif command in (Command.NEXT_CANDIDATE, Command.CONVERT, Command.INSERT_SPACE, Command.PREV_CANDIDATE):
            conv.move_candidate(-1 if command is Command.PREV_CANDIDATE else 1)
        elif command in (Command.NEXT_PAGE, Command.PREV_PAGE):
            conv.move_page(1 if command is Command.NEXT_PAGE else -1)
        elif command in (Command.CANCEL, Command.BACKSPACE):
            # Back to the reading (Mozc's Escape/BackSpace in conversion): the kana as typed,
            # even with live conversion on, until the next edit; the next Escape cancels.
            if self._composer.is_empty:
                self._clear_composition()
            else:
                self._state = Composing(as_typed=True)
        elif command in (Command.SEGMENT_FOCUS_LEFT, Command.CURSOR_LEFT, Command.SEGMENT_FOCUS_RIGHT,
                         Command.CURSOR_RIGHT):
            conv.move_focus(-1 if command in (Command.SEGMENT_FOCUS_LEFT, Command.CURSOR_LEFT) else 1)
        elif command in (Command.SEGMENT_FOCUS_FIRST, Command.CURSOR_HOME):
            conv.move_focus(-len(conv.segments))
        elif command in (Command.SEGMENT_FOCUS_LAST, Command.CURSOR_END):
            conv.move_focus(len(conv.segments))
        elif command in (Command.SEGMENT_SHRINK, Command.SEGMENT_EXPAND):
            conv.resize(-1 if command is Command.SEGMENT_SHRINK else 1,
                        lambda fixed: self._work.segments(self._field.request(conv.reading, fixed)))
        elif command is Command.COMMIT_SEGMENT and len(conv.segments) > 1:
            first = conv.segments[0]
            self._commit_text(first.chosen.surface, first.learn_pairs(), clear=False)
            # Keep converting the rest: drop the committed reading from the composition.
            self._composer.remove_prefix(self._composer.units_for_reading(conv.commit_first_segment()))
        elif command is Command.COMMIT_SEGMENT:
            self._commit_text(conv.text(), conv.learn_pairs())
        elif command in TRANSLITERATIONS:
            conv.transliterate(TRANSLITERATIONS[command], self._typing.typed_keys)
        return True

    # ---------------------------------------------------------------- typing

    def _type(self, ch: str, modifiers: int) -> None:
        state = self._state
        if isinstance(state, Converting):
            self._commit_text(state.conversion.text(), state.conversion.learn_pairs())
        elif isinstance(state, Suggesting):
            self._commit_text(*suggestion_choice(self._state, state.suggestions.cursor or 0))   # as Mozc: commit, go on
        if not self._typing.insert(ch, modifiers):
            self._aux = "入力が長すぎます"
            return
        if not isinstance(self._state, Composing):
            self._state = Composing()
        self._after_edit()

    def _after_edit(self) -> None:
        state = self._state
        if self._composer.is_empty or not isinstance(state, Composing):
            self._clear_composition()
        else:
            self._typing.edited(state)

    # ---------------------------------------------------------------- conversion

    def _start_conversion(self, whole: bool = False) -> Conversion | None:
        """Enter conversion; whole=True makes one segment of the whole reading (F6–F10)."""
        self._composer.flush()
        reading = reading_of(self._composer.text())
        if not reading:
            self._after_edit()
            return None
        segments = self._work.segments(self._field.request(reading), whole, quick=True)
        conversion = Conversion.from_segments(reading, segments, self._page_size, self._rewriters)
        self._state = Converting(conversion)
        return conversion

    # ---------------------------------------------------------------- committing

    def _commit_shown(self) -> None:
        """Commit whatever is in the preedit, without learning (focus out, IME off)."""
        state = self._state
        if isinstance(state, Converting):
            self._commit_text(state.conversion.text(), learn_pairs=())
        elif isinstance(state, Suggesting):
            chosen = state.suggestions.selected
            self._commit_text(chosen.surface if chosen else "", learn_pairs=())
        elif isinstance(state, Composing):
            self._commit_text(*self._typing.to_commit(state, learn=False))

    def _commit_text(self, text: str | None, learn_pairs: LearnPairs, clear: bool = True) -> None:
        """Send `text` to the application and learn the pairs where learning is allowed;
        clear: the composition is done (else the rest stays converting). None: nothing to
        commit, the composition stays."""
        if text is None:
            return
        if text:
            self._commit += text
            if learn_pairs and self._field.learning_allowed():
                self._unlearned.append((list(learn_pairs), self._field.left))
                if self._work.link is None:   # no host to learn after the reply: now
                    self.learn_pending()
            self._field.committed(text)
        if clear:
            self._clear_composition()

    def _clear_composition(self) -> None:
        self._typing.clear()
        if not isinstance(self._state, Direct):
            self._state = Idle()
        self._field.composition_done()

    # ---------------------------------------------------------------- IME on/off, modes, events

    def _set_enabled(self, on: bool) -> None:
        if on and isinstance(self._state, Direct):
            self._state = Idle()
        elif not on:
            self._commit_shown()
            self._clear_composition()
            self._state = Direct()

    def _switch_mode(self, mode: InputMode) -> None:
        self._state = without_suggestions(self._state)
        self._typing.switch_mode(mode)
        if isinstance(self._state, Composing):
            self._after_edit()

    def _begin_event(self) -> None:
        self.learn_pending()
        self._commit = self._aux = ""
        self._work.begin()

    def _view(self, handled: bool, commit: str | None = None) -> View:
        """The View now; commit: what to report as committed (None: what this event committed)."""
        return build_view(self._state, self._composer, self._typing.mode, handled=handled,
                          commit=self._commit if commit is None else commit, aux=self._aux,
                          suggestions=self._typing.shown_suggestions(self._state), on_return=self._return_text())

    def _return_text(self) -> str:
        """What a plain Return would commit now (View.on_return); "" when it would do anything
        else, or when knowing would take work (keys pending, a live text not worked out whole)."""
        if self._field.password or self._keymap.lookup(self.state, RETURN_KEYSYM, 0) is not Command.COMMIT:
            return ""
        state = self._state
        if isinstance(state, Converting):
            return state.conversion.text()
        if isinstance(state, Suggesting):
            return suggestion_choice(state, state.suggestions.cursor or 0)[0] or ""
        if isinstance(state, Composing):
            ready = self._typing.commit_preview(state)
            return ready[0] if ready is not None else ""
        return ""
