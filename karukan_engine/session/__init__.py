"""The input session: keymap, commands, state machine and the view model frontends render."""

from karukan_engine.session.commands import Command
from karukan_engine.session.keymap import Keymap, KeymapError
from karukan_engine.romaji.modes import InputMode
from karukan_engine.session.modes import State
from karukan_engine.session.session import Session
from karukan_engine.session.view import CandidateItem, CandidatePage, PreeditSpan, PreeditStyle, View

__all__ = [
    "CandidateItem",
    "CandidatePage",
    "Command",
    "InputMode",
    "Keymap",
    "KeymapError",
    "PreeditSpan",
    "PreeditStyle",
    "Session",
    "State",
    "View",
]
