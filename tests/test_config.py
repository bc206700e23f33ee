from pathlib import Path

import pytest
from hypothesis import given, strategies as st

from karukan_engine.config import Config, ConfigError, default_path


def test_defaults():
    c = Config()
    assert c.input.mode == "hiragana" and c.input.punctuation == "、。"
    assert c.session.page_size == 9 and c.session.live_conversion is True
    assert c.learning.enabled and dict(c.sections) == {}


def test_full_file_and_other_sections(tmp_path):
    path = tmp_path / "config.toml"
    path.write_text(
        '[input]\nmode = "katakana"\npunctuation = "，．"\nromaji_table = "my.tsv"\n'
        '[session]\npage_size = 5\nlive_conversion = false\nkeymap = "/abs/keys.toml"\n'
        '[learning]\nenabled = false\n[conversion]\nbeam_width = 3\n', encoding="utf-8")
    c = Config.load(path)
    assert c.path == path
    assert (c.input.mode, c.input.punctuation, c.session.page_size) == ("katakana", "，．", 5)
    assert not c.session.live_conversion and not c.learning.enabled   # the default is on
    assert Path(c.input.romaji_table) == tmp_path / "my.tsv"      # relative to the config file
    assert c.session.keymap == "/abs/keys.toml"
    assert c.sections["conversion"] == {"beam_width": 3}


@pytest.mark.parametrize("text, message", [
    ("[input\n", "not valid TOML"),
    ('[input]\nmode = "klingon"\n', "input.mode"),
    ('[input]\npunctuation = "!!"\n', "input.punctuation"),
    ('[input]\ndigit_width = "wide"\n', "input.digit_width"),
    ('[input]\ncolour = "red"\n', "unknown key input.colour"),
    ("[session]\npage_size = 0\n", "page_size"),
    ("[session]\npage_size = 10\n", "page_size"),
    ('[session]\npage_size = "9"\n', "must be a int"),
    ("[session]\nlive_conversion = 1\n", "must be a bool"),
    ("[session]\ncontext_chars = -1\n", "context_chars"),
    ("input = 3\n", "must be a table"),
])
def test_invalid_configs(text, message):
    with pytest.raises(ConfigError, match=message):
        Config.from_toml(text, "config.toml")


def test_missing_files(tmp_path, monkeypatch):
    monkeypatch.setenv("KARUKAN_CONFIG", str(tmp_path / "none.toml"))
    assert default_path() == tmp_path / "none.toml"
    assert Config.load() == Config()                  # no user config: defaults
    with pytest.raises(ConfigError, match="no such config"):
        Config.load(tmp_path / "none.toml")           # an explicit path must exist
    monkeypatch.delenv("KARUKAN_CONFIG")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    assert default_path() == tmp_path / "karukan" / "config.toml"
    bad = tmp_path / "bad.toml"
    bad.write_bytes(b"\xff\xfe")
    with pytest.raises(ConfigError, match="cannot read"):
        Config.load(bad)


@given(st.text(max_size=80))
def test_arbitrary_text_never_crashes(text):
    try:
        Config.from_toml(text)
    except ConfigError:
        pass
