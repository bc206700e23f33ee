import pytest
from hypothesis import given, strategies as st

from ime_frontend.toolkit import IBUS_SUPER_MASK, session_key_state
from karukan_engine.session import Command, Keymap, KeymapError, State
from karukan_engine.session.keysyms import (
    CONTROL_MASK,
    LOCK_MASK,
    MOD4_MASK,
    SHIFT_MASK,
    KeyCombo,
    KeySpecError,
    char_of,
    keysym_for_char,
    keysym_from_name,
    keysym_name,
    parse_key_spec,
)


def test_key_specs():
    assert parse_key_spec("C-u") == (ord("u"), CONTROL_MASK)
    assert parse_key_spec("S-Left") == (0xFF51, SHIFT_MASK)
    assert parse_key_spec("C-S-l") == (ord("l"), CONTROL_MASK | SHIFT_MASK)
    assert parse_key_spec("A") == (ord("A"), SHIFT_MASK)
    assert parse_key_spec("s-x") == (ord("x"), MOD4_MASK)
    assert parse_key_spec("Super-x") == (ord("x"), MOD4_MASK)
    assert parse_key_spec("s") == (ord("s"), 0)
    assert parse_key_spec("-") == (ord("-"), 0)
    assert parse_key_spec("Henkan") == parse_key_spec("Henkan_Mode")
    assert parse_key_spec("あ") == (0x1003042, 0)
    assert parse_key_spec("U+3042") == (0x1003042, 0)
    for bad in ("", "C-", "NoSuchKey", "C-NoSuchKey", "U+ZZZZ"):
        with pytest.raises(KeySpecError):
            parse_key_spec(bad)


def test_keysym_characters():
    assert char_of(ord("a")) == "a" and char_of(0xFFB5) == "5" and char_of(0xFFAE) == "."
    assert char_of(0x1003042) == "あ"
    assert char_of(0xFF0D) == "" and char_of(0x01) == "" and char_of(0x7F) == "" and char_of(0x100D800) == ""
    assert keysym_name(0xFF0D) == "Return" and keysym_name(0x1003042) == "あ" and keysym_name(0xABCDEF) == "0xabcdef"
    assert keysym_from_name("F7") == 0xFFC4


def test_combo_normalisation():
    # What X sends for Shift+A, Shift+Tab, keypad Enter and Shift+1 on a US layout.
    assert KeyCombo.of(ord("A"), SHIFT_MASK) == KeyCombo.of(ord("a"), SHIFT_MASK)
    assert KeyCombo.of(0xFE20, SHIFT_MASK) == KeyCombo.of(0xFF09, SHIFT_MASK)
    assert KeyCombo.of(0xFF8D, 0) == KeyCombo.of(0xFF0D, 0)
    assert KeyCombo.of(ord("!"), SHIFT_MASK) == KeyCombo.of(ord("!"), 0)
    assert KeyCombo.of(ord("a"), LOCK_MASK | 16) == KeyCombo.of(ord("a"), 0)
    # Caps Lock makes X send L for Ctrl+L: still Ctrl+L, not Ctrl+Shift+L.
    assert KeyCombo.of(ord("L"), CONTROL_MASK | LOCK_MASK) == KeyCombo.of(ord("l"), CONTROL_MASK)
    assert KeyCombo.of(ord("a"), session_key_state(IBUS_SUPER_MASK)[0]) == KeyCombo.of(ord("a"), MOD4_MASK)
    assert KeyCombo.of(0x20, SHIFT_MASK) != KeyCombo.of(0x20, 0)
    assert KeyCombo.of(ord("l"), CONTROL_MASK | SHIFT_MASK).spec() == "C-S-l"


@given(st.characters(min_codepoint=0x20, max_codepoint=0x2FFFF).filter(lambda c: c.isprintable()))
def test_character_keysyms_round_trip(ch):
    assert char_of(keysym_for_char(ch)) == ch
    assert keysym_from_name(ch) == keysym_for_char(ch)


def test_default_keymap_has_the_issue_bindings():
    km = Keymap.default()
    look = lambda state, spec: km.lookup(state, *parse_key_spec(spec))
    for spec, command in [("F6", Command.TO_HIRAGANA), ("F7", Command.TO_KATAKANA), ("F8", Command.TO_HALFWIDTH_KATAKANA),
                          ("F9", Command.TO_FULLWIDTH_ALPHANUMERIC), ("F10", Command.TO_HALFWIDTH_ALPHANUMERIC),
                          ("C-u", Command.TO_HIRAGANA), ("C-i", Command.TO_KATAKANA), ("C-o", Command.TO_HALFWIDTH_KATAKANA),
                          ("C-p", Command.TO_FULLWIDTH_ALPHANUMERIC), ("C-t", Command.TO_HALFWIDTH_ALPHANUMERIC)]:
        assert look(State.COMPOSITION, spec) is command
        assert look(State.CONVERSION, spec) is command
    assert look(State.CONVERSION, "S-Left") is Command.SEGMENT_SHRINK
    assert look(State.CONVERSION, "S-Right") is Command.SEGMENT_EXPAND
    assert look(State.CONVERSION, "7") is Command.SELECT_7 and Command.SELECT_7.select_index == 6
    for state in State:
        assert look(state, "Zenkaku_Hankaku") in (Command.TOGGLE_IME,)
    assert look(State.DIRECT, "a") is None
    assert "F7" in km.keys_for(State.COMPOSITION, Command.TO_KATAKANA)


def test_user_keymap_merges_and_unbinds():
    km = Keymap.from_toml('[composition]\n"C-j" = "commit"\n"F7" = ""\n', base=Keymap.default())
    assert km.lookup(State.COMPOSITION, *parse_key_spec("C-j")) is Command.COMMIT
    assert km.lookup(State.COMPOSITION, *parse_key_spec("F7")) is None
    assert km.lookup(State.CONVERSION, *parse_key_spec("F7")) is Command.TO_KATAKANA
    assert Keymap.default().lookup(State.COMPOSITION, *parse_key_spec("F7")) is Command.TO_KATAKANA


@pytest.mark.parametrize("text, message", [
    ("[composition\n", "not valid TOML"),
    ("[nowhere]\n", "unknown section"),
    ('[composition]\n"F7" = "explode"\n', "unknown command"),
    ('[composition]\n"NoKey" = "commit"\n', "unknown key name"),
    ('[composition]\n"F7" = 3\n', "must be a string"),
    ('composition = 3\n', "must be a table"),
    ('[composition]\n"C-" = "commit"\n', "key"),
    ("\x00", "not valid TOML"),
])
def test_malformed_keymaps_give_clear_errors(text, message):
    with pytest.raises(KeymapError, match=message):
        Keymap.from_toml(text, "user.toml")


def test_keymap_file_errors(tmp_path):
    with pytest.raises(KeymapError, match="cannot read"):
        Keymap.load(tmp_path / "missing.toml")
    binary = tmp_path / "bin.toml"
    binary.write_bytes(b"\xff\xfe\xfa")
    with pytest.raises(KeymapError):
        Keymap.load(binary)


@given(st.text(max_size=60))
def test_arbitrary_keymap_text_never_crashes(text):
    try:
        Keymap.from_toml(text)
    except KeymapError:
        pass
