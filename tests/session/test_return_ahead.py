"""A view says what a plain Return would commit (View.on_return), so a frontend can commit it
with no round trip and have the session finish the Return afterwards (Session.return_committed).

The promise is exact: whenever on_return is not empty, Return commits that text, and a session
told that a frontend committed it ends where the Return would have left it, learning the same.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from karukan_engine.config import Config, SessionSettings
from karukan_engine.dictionary.system import DEFAULT_DIR, SystemDictionary
from karukan_engine.session import Session, State
from karukan_engine.session.keys_cli import parse_keys
from session_fakes import NO_REWRITERS, ScriptedConverter

needs_dictionary = pytest.mark.skipif(not (DEFAULT_DIR / "meta.json").is_file(),
                                      reason="compiled dictionary not built")

RETURN = next(iter(parse_keys("<Return>")))[1]
# Letters that make many readings (and pending consonants), and the keys that change state:
# Space converts, Tab enters suggestions, arrows move, F7 writes katakana, Escape goes back.
KEYS = [*"kaisyoutenmg", "<space>", "<Tab>", "<Down>", "<BackSpace>", "<Left>", "<Right>", "<F7>",
        "<Escape>", "<S-Left>", "<Return>"]


@pytest.fixture(scope="module")
def lattice():
    from karukan_engine.lattice.converter import LatticeConverter

    return LatticeConverter(SystemDictionary(), None, None)


def session_for(converter, live: bool = True) -> Session:
    return Session(converter, Config(session=SessionSettings(live_conversion=live), rewriters=NO_REWRITERS))


def type_keys(session: Session, keys: list[str]):
    view = session.view
    for _, keysym, mods in parse_keys("".join(keys)):
        view = session.process_key(keysym, mods)
    return view


@needs_dictionary
@settings(max_examples=60, deadline=None)
@given(keys=st.lists(st.sampled_from(KEYS), min_size=1, max_size=14), live=st.booleans())
def test_return_commits_exactly_what_the_view_said(lattice, keys, live):
    pressed, told = session_for(lattice, live), session_for(lattice, live)
    said = type_keys(pressed, keys).on_return
    type_keys(told, keys)
    after_return = pressed.process_key(RETURN)
    if said:
        assert after_return.commit == said and after_return.handled
        assert pressed.state is State.PRECOMPOSITION
        # The session told afterwards ends the same, without committing it again.
        assert told.return_committed(said) == replace(after_return, commit="")
    else:   # the frontend asks the session, as for any key
        told.process_key(RETURN)
    # Both go on alike (the live text and what is learned of the context depend on it).
    assert type_keys(pressed, ["k", "a", "i"]) == type_keys(told, ["k", "a", "i"])


@given(keys=st.lists(st.sampled_from(KEYS), min_size=1, max_size=12))
@settings(max_examples=60, deadline=None)
def test_the_session_told_learns_what_return_learns(keys):
    words = {"かい": ["会", "貝"], "しょう": ["章", "賞"], "てん": ["点", "店"], "かいしょう": ["解消"]}
    pressed_converter, told_converter = ScriptedConverter(words), ScriptedConverter(words)
    pressed, told = session_for(pressed_converter), session_for(told_converter)
    said = type_keys(pressed, keys).on_return
    type_keys(told, keys)
    if not said:
        return
    pressed.process_key(RETURN)
    told.return_committed(said)
    assert told_converter.recorded == pressed_converter.recorded


def test_no_text_is_promised_while_a_key_is_pending_or_nothing_is_composed():
    session = session_for(ScriptedConverter({"かん": ["漢"]}))
    assert session.view.on_return == ""
    assert type_keys(session, ["k"]).on_return == ""          # Return would settle ｋ first
    assert type_keys(session, ["a", "n"]).on_return == ""     # and n → ん
    assert type_keys(session, ["n"]).on_return == "漢"
    assert type_keys(session, ["<space>"]).on_return == "漢"   # converting: the segments
    assert type_keys(session, ["<Return>"]).on_return == ""


def test_return_rebound_in_the_keymap_promises_nothing(tmp_path):
    keymap = tmp_path / "keymap.toml"
    keymap.write_text('[composition]\n"Return" = "convert"\n', encoding="utf-8")
    config = Config(session=SessionSettings(live_conversion=False, keymap=str(keymap)), rewriters=NO_REWRITERS)
    session = Session(ScriptedConverter({"か": ["蚊"]}), config)
    assert not session.load_errors
    assert type_keys(session, ["k", "a"]).on_return == ""


def test_a_composition_changed_since_the_view_is_dropped_and_not_learned():
    converter = ScriptedConverter({"かい": ["会"]})
    session = session_for(converter)
    assert type_keys(session, ["k", "a", "i"]).on_return == "会"
    # The frontend committed an older view's text (a late view crossed the Return).
    view = session.return_committed("かい")
    assert view.commit == "" and view.preedit == () and session.state is State.PRECOMPOSITION
    assert converter.recorded == []
    assert session.left_context.endswith("かい")   # what the application now holds


def test_nothing_is_done_for_a_password_field_or_an_empty_text():
    from karukan_engine.session.field import FieldPrivacy

    converter = ScriptedConverter({"かい": ["会"]})
    session = session_for(converter)
    type_keys(session, ["k", "a", "i"])
    assert session.return_committed("").preedit_text == "会"
    session.set_field_privacy(FieldPrivacy(password=True))   # commits what was shown, unlearned
    assert session.return_committed("会").commit == ""
    assert converter.recorded == []


@needs_dictionary
def test_a_tail_shown_as_kana_is_promised_converted(lattice):
    from karukan_engine.core.types import ConversionRequest

    session = session_for(lattice)
    view = type_keys(session, list("hana"))
    assert view.preedit_text == "はな"   # the word may go on (はなし): kana while typing
    assert view.on_return == lattice.live(ConversionRequest("はな")) != "はな"
    assert session.process_key(RETURN).commit == view.on_return
