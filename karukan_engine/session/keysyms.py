"""X keysyms and modifier masks: names ↔ codes, the character a key types, key-spec parsing.

Only what an input method needs: printable Latin-1 and Unicode keysyms, editing and function
keys, the keypad and the Japanese keyboard keys. Spec syntax (keymaps and `karukan keys`):
modifiers `C-` (Control), `S-` (Shift), `A-`/`M-` (Alt), `s-`/`Super-` then a keysym name or one
character, e.g. `C-u`, `S-Left`, `C-S-l`, `Zenkaku_Hankaku`, `あ`.
"""

from __future__ import annotations

from dataclasses import dataclass

# X11 modifier masks (a frontend folds its toolkit's own bits into these: ime_frontend.toolkit).
SHIFT_MASK = 1 << 0
LOCK_MASK = 1 << 1
CONTROL_MASK = 1 << 2
MOD1_MASK = 1 << 3        # Alt
MOD4_MASK = 1 << 6        # Super

# The modifiers that take part in key bindings (Lock, NumLock and AltGr do not).
BINDING_MASK = SHIFT_MASK | CONTROL_MASK | MOD1_MASK | MOD4_MASK

_NAMED = {
    "BackSpace": 0xFF08, "Tab": 0xFF09, "Linefeed": 0xFF0A, "Clear": 0xFF0B, "Return": 0xFF0D,
    "Pause": 0xFF13, "Scroll_Lock": 0xFF14, "Sys_Req": 0xFF15, "Escape": 0xFF1B, "Delete": 0xFFFF,
    "Kanji": 0xFF21, "Muhenkan": 0xFF22, "Henkan_Mode": 0xFF23, "Romaji": 0xFF24, "Hiragana": 0xFF25,
    "Katakana": 0xFF26, "Hiragana_Katakana": 0xFF27, "Zenkaku": 0xFF28, "Hankaku": 0xFF29,
    "Zenkaku_Hankaku": 0xFF2A, "Touroku": 0xFF2B, "Massyo": 0xFF2C, "Kana_Lock": 0xFF2D,
    "Kana_Shift": 0xFF2E, "Eisu_Shift": 0xFF2F, "Eisu_toggle": 0xFF30,
    "Home": 0xFF50, "Left": 0xFF51, "Up": 0xFF52, "Right": 0xFF53, "Down": 0xFF54, "Prior": 0xFF55,
    "Next": 0xFF56, "End": 0xFF57, "Begin": 0xFF58, "Select": 0xFF60, "Print": 0xFF61,
    "Execute": 0xFF62, "Insert": 0xFF63, "Undo": 0xFF65, "Redo": 0xFF66, "Menu": 0xFF67,
    "Find": 0xFF68, "Cancel": 0xFF69, "Help": 0xFF6A, "Break": 0xFF6B, "Mode_switch": 0xFF7E,
    "Num_Lock": 0xFF7F, "KP_Space": 0xFF80, "KP_Tab": 0xFF89, "KP_Enter": 0xFF8D, "KP_Home": 0xFF95,
    "KP_Left": 0xFF96, "KP_Up": 0xFF97, "KP_Right": 0xFF98, "KP_Down": 0xFF99, "KP_Prior": 0xFF9A,
    "KP_Next": 0xFF9B, "KP_End": 0xFF9C, "KP_Begin": 0xFF9D, "KP_Insert": 0xFF9E, "KP_Delete": 0xFF9F,
    "KP_Equal": 0xFFBD, "KP_Multiply": 0xFFAA, "KP_Add": 0xFFAB, "KP_Separator": 0xFFAC,
    "KP_Subtract": 0xFFAD, "KP_Decimal": 0xFFAE, "KP_Divide": 0xFFAF,
    "Shift_L": 0xFFE1, "Shift_R": 0xFFE2, "Control_L": 0xFFE3, "Control_R": 0xFFE4,
    "Caps_Lock": 0xFFE5, "Shift_Lock": 0xFFE6, "Meta_L": 0xFFE7, "Meta_R": 0xFFE8, "Alt_L": 0xFFE9,
    "Alt_R": 0xFFEA, "Super_L": 0xFFEB, "Super_R": 0xFFEC, "Hyper_L": 0xFFED, "Hyper_R": 0xFFEE,
    "ISO_Level3_Shift": 0xFE03, "ISO_Level5_Shift": 0xFE11, "ISO_Left_Tab": 0xFE20,
    "ISO_Next_Group": 0xFE08, "ISO_Prev_Group": 0xFE0A,
    "space": 0x20, "exclam": 0x21, "quotedbl": 0x22, "numbersign": 0x23, "dollar": 0x24,
    "percent": 0x25, "ampersand": 0x26, "apostrophe": 0x27, "parenleft": 0x28, "parenright": 0x29,
    "asterisk": 0x2A, "plus": 0x2B, "comma": 0x2C, "minus": 0x2D, "period": 0x2E, "slash": 0x2F,
    "colon": 0x3A, "semicolon": 0x3B, "less": 0x3C, "equal": 0x3D, "greater": 0x3E,
    "question": 0x3F, "at": 0x40, "bracketleft": 0x5B, "backslash": 0x5C, "bracketright": 0x5D,
    "asciicircum": 0x5E, "underscore": 0x5F, "grave": 0x60, "braceleft": 0x7B, "bar": 0x7C,
    "braceright": 0x7D, "asciitilde": 0x7E, "yen": 0xA5,
}
_NAMED.update({f"F{i}": 0xFFBE + i - 1 for i in range(1, 36)})
_NAMED.update({f"KP_{i}": 0xFFB0 + i for i in range(10)})
_NAMED.update({chr(c): c for c in range(0x30, 0x3A)})
_NAMED.update({chr(c): c for c in range(0x41, 0x5B)})
_NAMED.update({chr(c): c for c in range(0x61, 0x7B)})
_ALIASES = {"Henkan": "Henkan_Mode", "Page_Up": "Prior", "Page_Down": "Next", "Enter": "Return",
            "Esc": "Escape", "Space": "space", "KP_Page_Up": "KP_Prior", "KP_Page_Down": "KP_Next"}

NAME_TO_KEYSYM = {**_NAMED, **{a: _NAMED[t] for a, t in _ALIASES.items()}}
KEYSYM_TO_NAME = {code: name for name, code in _NAMED.items()}

MODIFIER_KEYSYMS = frozenset(
    _NAMED[n] for n in ("Shift_L", "Shift_R", "Control_L", "Control_R", "Caps_Lock", "Shift_Lock",
                        "Meta_L", "Meta_R", "Alt_L", "Alt_R", "Super_L", "Super_R", "Hyper_L",
                        "Hyper_R", "ISO_Level3_Shift", "ISO_Level5_Shift", "Mode_switch", "Num_Lock",
                        "ISO_Next_Group", "ISO_Prev_Group")
)

# Keypad keys that type a character, and keypad navigation keys that act as the main ones.
_KEYPAD_CHARS = {**{0xFFB0 + i: str(i) for i in range(10)}, 0xFFAE: ".", 0xFFAB: "+", 0xFFAD: "-",
                 0xFFAA: "*", 0xFFAF: "/", 0xFFBD: "=", 0xFF80: " ", 0xFFAC: ","}
_KEYPAD_TO_MAIN = {0xFF8D: 0xFF0D, 0xFF89: 0xFF09, 0xFF95: 0xFF50, 0xFF96: 0xFF51, 0xFF97: 0xFF52,
                   0xFF98: 0xFF53, 0xFF99: 0xFF54, 0xFF9A: 0xFF55, 0xFF9B: 0xFF56, 0xFF9C: 0xFF57,
                   0xFF9F: 0xFFFF, 0xFF9E: 0xFF63}
_ISO_LEFT_TAB = 0xFE20
_TAB = 0xFF09
_UNICODE_BASE = 0x1000000


class KeySpecError(ValueError):
    """A key spec or keysym name that does not parse."""


def keysym_from_name(name: str) -> int:
    """X keysym name (or one character, or U+XXXX / UXXXX) → keysym."""
    if name in NAME_TO_KEYSYM:
        return NAME_TO_KEYSYM[name]
    if len(name) == 1:
        return keysym_for_char(name)
    upper = name.upper()
    for prefix in ("U+", "U"):
        if upper.startswith(prefix) and len(name) > len(prefix):
            try:
                code = int(name[len(prefix):], 16)
            except ValueError:
                break
            if 0 < code <= 0x10FFFF:
                return keysym_for_char(chr(code))
    raise KeySpecError(f"unknown key name {name!r}")


def keysym_for_char(ch: str) -> int:
    code = ord(ch)
    if 0x20 <= code <= 0x7E or 0xA0 <= code <= 0xFF:
        return code
    return _UNICODE_BASE + code


def keysym_name(keysym: int) -> str:
    if keysym in KEYSYM_TO_NAME:
        return KEYSYM_TO_NAME[keysym]
    ch = char_of(keysym)
    if ch:
        return ch
    return f"0x{keysym:x}"


def char_of(keysym: int) -> str:
    """The printable character a keysym types, or "" (control and function keys)."""
    if 0x20 <= keysym <= 0x7E or 0xA0 <= keysym <= 0xFF:
        return chr(keysym)
    if keysym in _KEYPAD_CHARS:
        return _KEYPAD_CHARS[keysym]
    if _UNICODE_BASE + 0xA0 <= keysym <= _UNICODE_BASE + 0x10FFFF:
        ch = chr(keysym - _UNICODE_BASE)
        if ch.isprintable() and not 0xD800 <= ord(ch) <= 0xDFFF:
            return ch
    return ""


def binding_modifiers(modifiers: int) -> int:
    """The modifier bits that take part in key bindings."""
    return modifiers & BINDING_MASK


@dataclass(frozen=True)
class KeyCombo:
    """A keysym with the binding modifiers, normalised so that equal keys compare equal."""

    keysym: int
    modifiers: int = 0

    @classmethod
    def of(cls, keysym: int, modifiers: int) -> "KeyCombo":
        mods = binding_modifiers(modifiers)
        if keysym == _ISO_LEFT_TAB:
            keysym, mods = _TAB, mods | SHIFT_MASK
        keysym = _KEYPAD_TO_MAIN.get(keysym, keysym)
        if 0x41 <= keysym <= 0x5A:              # uppercase letter: Shift+letter, unless Caps Lock
            keysym = keysym + 0x20
            if not modifiers & LOCK_MASK:
                mods |= SHIFT_MASK
        elif char_of(keysym) and keysym != 0x20 and not 0x61 <= keysym <= 0x7A:
            mods &= ~SHIFT_MASK                 # the layout's Shift is already in the symbol
        return cls(keysym, mods)

    def spec(self) -> str:
        prefix = "".join(p for bit, p in ((CONTROL_MASK, "C-"), (MOD1_MASK, "A-"), (MOD4_MASK, "s-"),
                                          (SHIFT_MASK, "S-")) if self.modifiers & bit)
        return prefix + keysym_name(self.keysym)


_PREFIXES = (("Super-", MOD4_MASK), ("C-", CONTROL_MASK), ("S-", SHIFT_MASK), ("A-", MOD1_MASK),
             ("M-", MOD1_MASK), ("s-", MOD4_MASK))


def parse_key_spec(spec: str) -> tuple[int, int]:
    """`C-S-Left` → (keysym, modifier mask). Uppercase letters carry Shift as on a keyboard."""
    rest = spec
    mods = 0
    while True:
        for prefix, bit in _PREFIXES:
            if rest.startswith(prefix) and len(rest) > len(prefix):
                mods |= bit
                rest = rest[len(prefix):]
                break
        else:
            break
    if not rest:
        raise KeySpecError(f"empty key spec {spec!r}")
    keysym = keysym_from_name(rest)
    if 0x41 <= keysym <= 0x5A:
        mods |= SHIFT_MASK
    return keysym, mods
