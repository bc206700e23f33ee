"""The session's states, each carrying what exists only in it: a conversion only while
converting, a selected suggestion only while one is selected, the live text only while
composing. So no field is None where its state needs it, and no state can hold another's data."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Union

from karukan_engine.romaji.composer import Composer
from karukan_engine.session.modes import State
from karukan_engine.session.segments import Conversion
from karukan_engine.session.suggestions import SuggestionList


@dataclass(frozen=True)
class Direct:
    """The IME is off: every key goes to the application."""

    kind: ClassVar[State] = State.DIRECT


@dataclass(frozen=True)
class Idle:
    """The IME is on and nothing is typed."""

    kind: ClassVar[State] = State.PRECOMPOSITION


@dataclass
class Composing:
    """Kana being typed. live_text: the live conversion shown for the settled reading (None: the
    kana). as_typed: back from a conversion, the kana as typed until the next edit.
    suggestions: the completions of the reading (shown where the field allows them)."""

    kind: ClassVar[State] = State.COMPOSITION
    live_text: str | None = None
    as_typed: bool = False
    suggestions: SuggestionList | None = None

    def shows_live(self, composer: Composer) -> bool:
        """The live text replaces the kana: there is one, and the caret is at the end."""
        return self.live_text is not None and not self.as_typed and composer.cursor == len(composer.units)


@dataclass
class Converting:
    """Segments with candidates (Space)."""

    kind: ClassVar[State] = State.CONVERSION
    conversion: Conversion


@dataclass
class Suggesting:
    """A completion selected from the suggestion list; `back` is the composition to return to."""

    kind: ClassVar[State] = State.SUGGESTION
    suggestions: SuggestionList
    back: Composing


SessionState = Union[Direct, Idle, Composing, Converting, Suggesting]


def suggestion_choice(state: SessionState, index: int) -> tuple[str | None, tuple[tuple[str, str], ...]]:
    """(surface, what to learn: its whole reading) of the suggestion at `index` of the list the
    state holds (shown or selected); (None, ()) when there is none."""
    suggestions = state.suggestions if isinstance(state, (Composing, Suggesting)) else None
    return (suggestions.choice_at(index) if suggestions is not None else None) or (None, ())


def without_suggestions(state: SessionState) -> SessionState:
    """The state with its suggestion list closed: a selected suggestion goes back to composing."""
    if isinstance(state, Suggesting):
        state = state.back
    if isinstance(state, Composing):
        state.suggestions = None
    return state
