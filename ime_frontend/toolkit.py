"""Toolkit facts in session terms: the one place that knows IBus modifier bits and GTK input
purposes and hints.

Every frontend's key state and content type reach the engine service as IBus sends them (the
fcitx5 addon sends fcitx5's key states, whose high bits are the same); the context host
translates them here before the session sees them.
"""

from __future__ import annotations

from karukan_engine.session.field import FieldPrivacy
from karukan_engine.session.keysyms import MOD4_MASK

# IBus modifier bits above the X11 ones (IBusModifierType; fcitx5's KeyState agrees).
IBUS_SUPER_MASK = 1 << 26
IBUS_HYPER_MASK = 1 << 27
IBUS_META_MASK = 1 << 28
IBUS_RELEASE_MASK = 1 << 30
_X11_MASKS = (1 << 16) - 1

# GtkInputPurpose values and a GtkInputHints bit (IBus copies both).
PURPOSE_PASSWORD = 8
PURPOSE_PIN = 9
PASSWORD_PURPOSES = frozenset({PURPOSE_PASSWORD, PURPOSE_PIN})
HINT_PRIVATE = 1 << 11


def session_key_state(state: int, release: bool = False) -> tuple[int, bool]:
    """An IBus key state → (X11 modifier mask, release): IBus Super folds into Mod4, the
    release bit becomes the flag, and the other IBus-only bits are dropped."""
    modifiers = state & _X11_MASKS
    if state & IBUS_SUPER_MASK:
        modifiers |= MOD4_MASK
    return modifiers, release or bool(state & IBUS_RELEASE_MASK)


def field_privacy(purpose: int, hints: int) -> FieldPrivacy:
    """A GTK/IBus content type → what the session needs to know about the field."""
    return FieldPrivacy(password=purpose in PASSWORD_PURPOSES, private=bool(hints & HINT_PRIVATE))
