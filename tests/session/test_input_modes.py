"""The input-mode names are defined once (romaji.modes.InputMode): the config, the session and
the IBus mode menu take them from there."""

import pytest

from ime_frontend.ibus.properties import MODE_LABELS, session_modes
from karukan_engine.config import Config
from karukan_engine.conversion.plain import PlainConverter
from karukan_engine.romaji.modes import InputMode
from karukan_engine.session import Session


@pytest.mark.parametrize("mode", list(InputMode))
def test_every_mode_is_a_config_value_a_session_mode_and_a_menu_item(mode):
    config = Config.from_toml(f'[input]\nmode = "{mode.value}"\n')
    assert not config.problems and config.input.mode == mode.value
    assert Session(PlainConverter(), config).input_mode is mode
    assert mode.value in MODE_LABELS and mode.value in session_modes()


def test_nothing_else_is_a_mode():
    assert session_modes() == [m.value for m in InputMode]
    assert Config.from_toml('[input]\nmode = "halfwidth_alphanumeric"\n').problems   # an alias, not a name
