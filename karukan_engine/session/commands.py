"""The named commands a keymap binds keys to. The state machine gives each its meaning."""

from __future__ import annotations

import enum

from karukan_engine.romaji.modes import InputMode
from karukan_engine.transliteration import Form


class Command(enum.Enum):
    # editing
    INSERT_SPACE = "insert_space"                 # full- or half-width by input mode
    INSERT_HALF_SPACE = "insert_half_space"
    BACKSPACE = "backspace"
    DELETE = "delete"
    CURSOR_LEFT = "cursor_left"
    CURSOR_RIGHT = "cursor_right"
    CURSOR_HOME = "cursor_home"
    CURSOR_END = "cursor_end"
    COMMIT = "commit"
    CANCEL = "cancel"
    # conversion
    CONVERT = "convert"
    PREDICT = "predict"                           # into the suggestion list when one is shown, else convert
    NEXT_CANDIDATE = "next_candidate"
    PREV_CANDIDATE = "prev_candidate"
    NEXT_PAGE = "next_page"
    PREV_PAGE = "prev_page"
    SELECT_1 = "select_1"
    SELECT_2 = "select_2"
    SELECT_3 = "select_3"
    SELECT_4 = "select_4"
    SELECT_5 = "select_5"
    SELECT_6 = "select_6"
    SELECT_7 = "select_7"
    SELECT_8 = "select_8"
    SELECT_9 = "select_9"
    COMMIT_SEGMENT = "commit_segment"             # commit the first segment, keep converting the rest
    SEGMENT_FOCUS_LEFT = "segment_focus_left"
    SEGMENT_FOCUS_RIGHT = "segment_focus_right"
    SEGMENT_FOCUS_FIRST = "segment_focus_first"
    SEGMENT_FOCUS_LAST = "segment_focus_last"
    SEGMENT_SHRINK = "segment_shrink"
    SEGMENT_EXPAND = "segment_expand"
    # transliteration (F6–F10)
    TO_HIRAGANA = "to_hiragana"
    TO_KATAKANA = "to_katakana"
    TO_HALFWIDTH_KATAKANA = "to_halfwidth_katakana"
    TO_FULLWIDTH_ALPHANUMERIC = "to_fullwidth_alphanumeric"
    TO_HALFWIDTH_ALPHANUMERIC = "to_halfwidth_alphanumeric"
    # IME and modes
    TOGGLE_IME = "toggle_ime"
    IME_ON = "ime_on"
    IME_OFF = "ime_off"
    MODE_HIRAGANA = "mode_hiragana"
    MODE_KATAKANA = "mode_katakana"
    MODE_HALFWIDTH_KATAKANA = "mode_halfwidth_katakana"
    MODE_FULLWIDTH_ALPHANUMERIC = "mode_fullwidth_alphanumeric"
    MODE_HALFWIDTH_ALPHANUMERIC = "mode_alphanumeric"
    TOGGLE_LIVE_CONVERSION = "toggle_live_conversion"
    # the key is consumed and does nothing (e.g. to shield the application during composition)
    NOP = "nop"

    @property
    def select_index(self) -> int | None:
        """0-based candidate index on the page for SELECT_n, else None."""
        if self.value.startswith("select_"):
            return int(self.value.rsplit("_", 1)[1]) - 1
        return None


# The mode each mode command switches to.
MODE_COMMANDS = {
    Command.MODE_HIRAGANA: InputMode.HIRAGANA,
    Command.MODE_KATAKANA: InputMode.KATAKANA,
    Command.MODE_HALFWIDTH_KATAKANA: InputMode.HALFWIDTH_KATAKANA,
    Command.MODE_FULLWIDTH_ALPHANUMERIC: InputMode.FULLWIDTH_ALPHANUMERIC,
    Command.MODE_HALFWIDTH_ALPHANUMERIC: InputMode.HALFWIDTH_ALPHANUMERIC,
}

# F6–F10: the form each gives the focused segment.
TRANSLITERATIONS: dict[Command, Form] = {
    Command.TO_HIRAGANA: Form.HIRAGANA,
    Command.TO_KATAKANA: Form.KATAKANA,
    Command.TO_HALFWIDTH_KATAKANA: Form.HALFWIDTH_KATAKANA,
    Command.TO_FULLWIDTH_ALPHANUMERIC: Form.FULLWIDTH_ALPHANUMERIC,
    Command.TO_HALFWIDTH_ALPHANUMERIC: Form.HALFWIDTH_ALPHANUMERIC,
}
