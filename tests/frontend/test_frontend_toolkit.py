"""Toolkit facts reach the session translated: IBus key state bits, GTK purposes and hints."""

from hypothesis import given, strategies as st

from ime_frontend.toolkit import (
    HINT_PRIVATE,
    IBUS_HYPER_MASK,
    IBUS_META_MASK,
    IBUS_RELEASE_MASK,
    IBUS_SUPER_MASK,
    PURPOSE_PASSWORD,
    PURPOSE_PIN,
    field_privacy,
    session_key_state,
)
from karukan_engine.session.field import FieldPrivacy
from karukan_engine.session.keysyms import CONTROL_MASK, LOCK_MASK, MOD4_MASK, SHIFT_MASK


def test_ibus_bits_become_session_terms():
    assert session_key_state(IBUS_RELEASE_MASK) == (0, True)
    assert session_key_state(IBUS_SUPER_MASK) == (MOD4_MASK, False)
    assert session_key_state(IBUS_HYPER_MASK | IBUS_META_MASK | SHIFT_MASK) == (SHIFT_MASK, False)
    assert session_key_state(CONTROL_MASK | LOCK_MASK, release=True) == (CONTROL_MASK | LOCK_MASK, True)


@given(st.integers(0, (1 << 32) - 1), st.booleans())
def test_the_session_never_sees_an_ibus_only_bit(state, release):
    modifiers, released = session_key_state(state, release)
    assert modifiers < 1 << 16
    assert released == (release or bool(state & IBUS_RELEASE_MASK))
    assert modifiers & ~MOD4_MASK == state & 0xFFFF & ~MOD4_MASK


def test_password_and_pin_purposes_and_the_private_hint():
    assert field_privacy(PURPOSE_PASSWORD, 0) == FieldPrivacy(password=True)
    assert field_privacy(PURPOSE_PIN, HINT_PRIVATE) == FieldPrivacy(password=True, private=True)
    assert field_privacy(0, HINT_PRIVATE) == FieldPrivacy(private=True)
    assert field_privacy(1, ~HINT_PRIVATE & 0xFFFF) == FieldPrivacy()
