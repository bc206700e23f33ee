"""The input-mode menu IBus panels show (RegisterProperties / UpdateProperty)."""

from __future__ import annotations

from ime_frontend.ibus.gvariant import Property, PropState, PropType
from karukan_engine.romaji.modes import InputMode
from karukan_engine.session.modes import State

MENU_KEY = "InputMode"
PROP_PREFIX = "InputMode."

# Label and one-glyph panel symbol per session mode name; unknown modes show their name.
MODE_LABELS: dict[str, tuple[str, str]] = {
    InputMode.HIRAGANA.value: ("Hiragana", "あ"),
    InputMode.KATAKANA.value: ("Katakana", "ア"),
    InputMode.HALFWIDTH_KATAKANA.value: ("Half-width Katakana", "ｱ"),
    InputMode.FULLWIDTH_ALPHANUMERIC.value: ("Full-width Alphanumeric", "Ａ"),
    InputMode.HALFWIDTH_ALPHANUMERIC.value: ("Alphanumeric", "A"),
    State.DIRECT.value: ("Direct input", "A"),
}


def session_modes() -> list[str]:
    """Mode names the session knows, in its order."""
    return [m.value for m in InputMode]


def _label(mode: str) -> tuple[str, str]:
    return MODE_LABELS.get(mode, (mode, mode[:1].upper()))


def mode_property(mode: str) -> Property:
    """The menu button itself, labelled with the current mode."""
    label, symbol = _label(mode)
    return Property(key=MENU_KEY, label=f"Input mode ({label})", prop_type=PropType.MENU,
                    tooltip="Switch input mode", symbol=symbol)


def mode_properties(current: str, modes: list[str] | None = None) -> list[Property]:
    """The menu with one radio item per mode, the current one checked."""
    items = tuple(
        Property(key=PROP_PREFIX + mode, label=_label(mode)[0], prop_type=PropType.RADIO,
                 state=PropState.CHECKED if mode == current else PropState.UNCHECKED)
        for mode in (modes if modes is not None else session_modes())
    )
    menu = mode_property(current)
    return [Property(key=menu.key, label=menu.label, prop_type=menu.prop_type, tooltip=menu.tooltip,
                     symbol=menu.symbol, sub_props=items)]
