"""Rewriter test helpers: a fixed clock, a session over scripted words with the rewriters on
(the committed tables, a memory of choices that lives only in the test), and key driving."""

from __future__ import annotations

from datetime import datetime

from karukan_engine.config import Config, RewriterSettings, SessionSettings
from karukan_engine.rewriters import RewriterStage
from karukan_engine.rewriters.choice_memory import ChoiceMemory
from karukan_engine.session import Session, View
from karukan_engine.session.keys_cli import parse_keys
from session_fakes import ScriptedConverter

# Wednesday, 2 December 2026, 14:05.
NOON_AFTER = datetime(2026, 12, 2, 14, 5)

WORDS = {
    "ねこ": ["猫", "ネコ", "根子", "寝子"],
    "きょう": ["今日", "京", "強"],
    "きょうは": ["今日は"],
    "やじるし": ["矢印"],
    "かおもじ": ["顔文字"],
    "ひゃく": ["百"],
    "いま": ["今", "居間"],
    "は": ["は", "葉"],
}
SEGMENTS = {"きょうは": ["きょう", "は"]}


class Clock:
    """A clock the test moves: read when the conversion runs."""

    def __init__(self, now: datetime = NOON_AFTER) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


def make(settings: RewriterSettings = RewriterSettings(), clock: Clock | None = None,
         memory: ChoiceMemory | None = None, converter: ScriptedConverter | None = None):
    """(session, converter, stage): live conversion off, so Space shows the conversion."""
    stage = RewriterStage(settings, clock or Clock(), memory if memory is not None else ChoiceMemory())
    conv = converter or ScriptedConverter(WORDS, SEGMENTS)
    config = Config(session=SessionSettings(live_conversion=False), rewriters=settings)
    return Session(conv, config, stage), conv, stage


def press(session: Session, keys: str) -> list[View]:
    return [session.process_key(keysym, mods) for _, keysym, mods in parse_keys(keys)]


def listed(session: Session) -> list[str]:
    """Every candidate of the focused segment (all pages)."""
    return [c.surface for c in session._state.conversion.focused.candidates]


def annotations(session: Session) -> dict[str, str]:
    return {c.surface: c.annotation for c in session._state.conversion.focused.candidates}


def choose(session: Session, surface: str) -> list[View]:
    """Space until `surface` is selected, then Return."""
    views = []
    for _ in range(len(listed(session))):
        if session.view.preedit_text == surface:
            break
        views += press(session, " ")
    assert session.view.preedit_text == surface
    return views + press(session, "<Return>")
