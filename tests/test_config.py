import os
from pathlib import Path

import pytest
from hypothesis import given, strategies as st

from karukan_engine.config import Config, ConfigError, default_path


def test_defaults():
    c = Config()
    assert c.input.mode == "hiragana" and c.input.punctuation == "、。"
    assert c.session.page_size == 9 and c.session.live_conversion is True
    assert c.learning.enabled and dict(c.sections) == {}
    assert c.suggest.enabled and c.suggest.count == 6


def test_suggest_section():
    c = Config.from_toml("[suggest]\nenabled = false\ncount = 3\n", "config.toml")
    assert (c.suggest.enabled, c.suggest.count, c.problems) == (False, 3, ())
    assert "suggest" not in c.sections
    bad = Config.from_toml("[suggest]\ncount = 20\nenabled = 1\n", "config.toml")
    assert (bad.suggest.enabled, bad.suggest.count) == (True, 6)
    assert [p for p in bad.problems if "suggest.count" in p] and [p for p in bad.problems if "suggest.enabled" in p]


def test_ui_section():
    assert Config().ui.candidate_layout == "vertical"
    c = Config.from_toml('[ui]\ncandidate_layout = "horizontal"\n', "config.toml")
    assert (c.ui.candidate_layout, c.problems) == ("horizontal", ()) and "ui" not in c.sections
    bad = Config.from_toml('[ui]\ncandidate_layout = "diagonal"\n', "config.toml")
    assert bad.ui.candidate_layout == "vertical"
    assert bad.problems == ("config.toml: ui.candidate_layout must be one of 'vertical', 'horizontal', not "
                            "'diagonal'; using \"vertical\"",)


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


@pytest.mark.parametrize("text, message, key, fallback", [
    ('[input]\nmode = "klingon"\n', "input.mode", ("input", "mode"), "hiragana"),
    ('[input]\npunctuation = "!!"\n', "input.punctuation", ("input", "punctuation"), "、。"),
    ('[input]\ndigit_width = "wide"\n', "input.digit_width", ("input", "digit_width"), "half"),
    ('[input]\ncolour = "red"\n', "unknown key input.colour", ("input", "mode"), "hiragana"),
    ("[session]\npage_size = 0\n", "page_size", ("session", "page_size"), 9),
    ("[session]\npage_size = 10\n", "page_size", ("session", "page_size"), 9),
    ('[session]\npage_size = "9"\n', "must be a int", ("session", "page_size"), 9),
    ("[session]\nlive_conversion = 1\n", "must be a bool", ("session", "live_conversion"), True),
    ('[session]\nanticipate = "no"\n', "must be a bool", ("session", "anticipate"), True),
    ("[session]\ncontext_chars = -1\n", "context_chars", ("session", "context_chars"), 40),
    ("input = 3\n", "must be a table", ("input", "mode"), "hiragana"),
])
def test_a_bad_value_falls_back_on_its_own(text, message, key, fallback):
    config = Config.from_toml(text + "[conversion]\nbeam_width = 3\n", "config.toml")
    assert len(config.problems) == 1 and message in config.problems[0] and "config.toml" in config.problems[0]
    assert getattr(getattr(config, key[0]), key[1]) == fallback
    assert config.learning.enabled                       # nothing here touched learning
    assert config.sections["conversion"] == {"beam_width": 3}
    with pytest.raises(ConfigError, match=message):
        config.raise_for_problems()


def test_one_bad_value_never_turns_learning_back_on():
    # Issue 17 item 5: page_size = 10 used to void the whole file, [learning] enabled = false too.
    config = Config.from_toml("[session]\npage_size = 10\nlive_conversion = false\n"
                              "[learning]\nenabled = false\n", "config.toml")
    assert not config.learning.enabled
    assert config.session.page_size == 9 and config.session.live_conversion is False
    assert [p for p in config.problems if "page_size" in p]


@pytest.mark.parametrize("text", [
    '[learning]\nenabled = "no"\n',     # the wrong type: the private value, not the default
    "[learning]\nenabled = 0\n",
    "learning = false\n",               # not a table
    "[learning\nenabled = false\n",     # not TOML at all: it may have said false
    "[learning]\nenabled = false\nx = " + "[" * 50000 + "]" * 50000 + "\n",   # nesting too deep to parse
])
def test_privacy_never_weakens_on_error(text):
    config = Config.from_toml(text, "config.toml")
    assert not config.learning.enabled and config.problems


def test_a_file_that_cannot_be_used_keeps_typing_with_learning_off(tmp_path):
    for make in (lambda p: p.mkdir(), lambda p: os.mkfifo(p), lambda p: p.symlink_to("/dev/zero"),
                 lambda p: p.symlink_to(p), lambda p: p.write_bytes(b"\xff\xfe[session]")):
        path = tmp_path / "config.toml"
        make(path)
        config = Config.load(path)     # returns at once: a FIFO or a device is never read
        assert not config.learning.enabled and config.session.page_size == 9
        assert len(config.problems) == 1 and "cannot read config" in config.problems[0]
        if path.is_dir() and not path.is_symlink():
            path.rmdir()
        else:
            path.unlink()


def test_nested_and_huge_files(tmp_path):
    path = tmp_path / "config.toml"
    path.write_text("[session]\npage_size = 5\n" + "#" * (5 << 20), encoding="utf-8")
    config = Config.load(path)
    assert config.problems and "larger than" in config.problems[0] and not config.learning.enabled
    path.write_text("a = " + "[" * 50000 + "]" * 50000 + "\n", encoding="utf-8")
    config = Config.load(path)
    assert config.problems and not config.learning.enabled


_junk = st.one_of(st.integers(-20, 20), st.text(max_size=5), st.booleans(), st.none().map(lambda _: [1]),
                  st.floats(allow_nan=False, allow_infinity=False))


@given(st.dictionaries(st.sampled_from(["mode", "punctuation", "digit_width", "colour"]), _junk, max_size=4),
       st.dictionaries(st.sampled_from(["page_size", "live_conversion", "context_chars", "keymap", "x"]), _junk,
                       max_size=5),
       st.dictionaries(st.sampled_from(["colour", "extra"]), _junk, max_size=2))
def test_learning_off_stays_off_whatever_else_is_wrong(inp, session, learning):
    data = {"input": inp, "session": session, "learning": {**learning, "enabled": False}}
    config = Config.from_mapping(data, "config.toml")
    assert config.learning.enabled is False
    assert 1 <= config.session.page_size <= 9 and 0 <= config.session.context_chars <= 1000
    config.input.check()
    config.session.check()


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
    config = Config.load(bad)
    assert "cannot read" in config.problems[0] and "not UTF-8" in config.problems[0]


@given(st.text(max_size=80))
def test_arbitrary_text_never_crashes(text):
    config = Config.from_toml(text)
    config.input.check()
    config.session.check()
