import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from karukan_engine.config import Config, InputSettings, LearningSettings, SessionSettings
from karukan_engine.conversion.plain import PlainConverter
from karukan_engine.core.types import Candidate, Segment
from karukan_engine.session import InputMode, PreeditStyle, Session, State, View
from karukan_engine.session.keysyms import (
    CONTROL_MASK,
    LOCK_MASK,
    MOD4_MASK,
    keysym_for_char,
    parse_key_spec,
)
from karukan_engine.session.field_context import LINE_START
from karukan_engine.session.session import MAX_COMPOSITION_CHARS
from ime_frontend.toolkit import HINT_PRIVATE, IBUS_RELEASE_MASK, IBUS_SUPER_MASK, PURPOSE_PASSWORD, PURPOSE_PIN, field_privacy, session_key_state
from karukan_testing.inspect import typing_latin_until_word_ends
from session_fakes import NO_REWRITERS, ScriptedConverter

WORDS = {
    "きょう": ["今日", "京", "強"],
    "は": ["は", "葉"],
    "いい": ["良い", "いい"],
    "てんき": ["天気", "転機"],
    "きょうは": ["今日は"],
    "かん": [f"漢{i}" for i in range(20)],
}
SEGMENTS = {"きょうはいいてんき": ["きょうは", "いい", "てんき"]}


def make(converter=None, **session) -> Session:
    """A session with live conversion off unless asked: most tests here are about the plain
    (non-live) state machine."""
    session.setdefault("live_conversion", False)
    config = Config(session=SessionSettings(**session), rewriters=NO_REWRITERS)
    return Session(converter if converter is not None else ScriptedConverter(WORDS, SEGMENTS), config)


def press(s: Session, keys: str) -> list[View]:
    """Type a `karukan keys`-style string; returns every view."""
    from karukan_engine.session.keys_cli import parse_keys

    return [s.process_key(keysym, mods) for _, keysym, mods in parse_keys(keys)]


def commits(views: list[View]) -> str:
    return "".join(v.commit for v in views)


# -- the done-when checks ---------------------------------------------------------------

def test_konnichiha_commits_kana():
    assert commits(press(make(PlainConverter()), "konnnichiha<Return>")) == "こんにちは"


def test_f7_commits_katakana():
    assert commits(press(make(PlainConverter()), "kyoutoninaru<F7><Return>")) == "キョウトニナル"


def test_f10_commits_typed_keys():
    assert commits(press(make(PlainConverter()), "tokyo<F10><Return>")) == "tokyo"


# -- keys the session does not use --------------------------------------------------------------

def test_releases_modifiers_and_unbound_keys_are_not_handled():
    s = make()
    a = keysym_for_char("a")
    assert not s.process_key(a, 0, release=True).handled
    assert not s.process_key(a, *session_key_state(IBUS_RELEASE_MASK)).handled   # as a frontend passes it
    for name in ("Shift_L", "Control_R", "Alt_L", "Super_L", "Caps_Lock"):
        assert not s.process_key(parse_key_spec(name)[0]).handled
    for name in ("Return", "BackSpace", "Left", "Escape", "F1", "Delete"):
        assert not s.process_key(parse_key_spec(name)[0]).handled, name
    assert not s.process_key(a, CONTROL_MASK).handled         # Ctrl+A belongs to the app
    assert not s.process_key(a, MOD4_MASK).handled
    assert not s.process_key(a, *session_key_state(IBUS_SUPER_MASK)).handled
    assert not s.process_key(0x12345678).handled               # unknown keysym
    for control in range(0x20):
        assert not s.process_key(control).handled
    assert s.state is State.PRECOMPOSITION


def test_composition_shields_stray_keys_but_not_shortcuts():
    s = make()
    press(s, "ka")
    assert s.process_key(parse_key_spec("F1")[0]).handled
    assert not s.process_key(keysym_for_char("c"), CONTROL_MASK).handled
    assert s.view.preedit_text == "か"


# -- editing like Mozc --------------------------------------------------------------------------

def test_backspace_pending_then_kana_then_empty():
    s = make()
    press(s, "kak")
    assert (s.view.preedit_text, s.view.caret) == ("かｋ", 2)
    press(s, "<BackSpace>")
    assert s.view.preedit_text == "か"
    press(s, "<BackSpace>")
    assert s.view.preedit_text == "" and s.state is State.PRECOMPOSITION
    assert not press(s, "<BackSpace>")[0].handled


def test_cursor_movement_and_insertion():
    s = make()
    press(s, "aiueo<Left><Left>ka")
    assert (s.view.preedit_text, s.view.caret) == ("あいうかえお", 4)
    press(s, "<Home><Delete>")
    assert (s.view.preedit_text, s.view.caret) == ("いうかえお", 0)
    press(s, "<End>")
    assert s.view.caret == 5
    press(s, "<C-b><C-b><C-h>")
    assert (s.view.preedit_text, s.view.caret) == ("いうえお", 2)
    press(s, "<Right><Right><Right><Right>")
    assert s.view.caret == 4


def test_pending_n_is_resolved_on_commit_and_convert():
    s = make()
    assert commits(press(s, "kan<Return>")) == "かん"
    press(s, "kan<space>")
    assert s.state is State.CONVERSION and s.view.preedit_text == "漢0"


def test_escape_cancels_composition():
    s = make()
    views = press(s, "kyou<Escape>")
    assert views[-1].handled and s.state is State.PRECOMPOSITION and not commits(views)


def test_space_in_precomposition_inserts_space():
    s = make()
    assert press(s, "<space>")[0].commit == "\u3000"
    assert press(s, "<S-space>")[0].commit == " "
    s.set_input_mode("alphanumeric")
    assert press(s, "<space>")[0].commit == " "


# -- conversion ---------------------------------------------------------------------------------

def test_conversion_segments_focus_and_learning():
    conv = ScriptedConverter(WORDS, SEGMENTS)
    s = make(conv)
    press(s, "kyouhaiitenki<space>")
    v = s.view
    assert [p.text for p in v.preedit] == ["今日は", "良い", "天気"]
    assert [p.style for p in v.preedit] == [PreeditStyle.HIGHLIGHT, PreeditStyle.UNDERLINE, PreeditStyle.UNDERLINE]
    assert v.caret == 0 and v.candidates.items[0].text == "今日は" and v.candidates.cursor == 0
    press(s, "<Right><space>")
    v = s.view
    assert [p.text for p in v.preedit] == ["今日は", "いい", "天気"]
    assert v.preedit[1].style is PreeditStyle.HIGHLIGHT and v.caret == 3
    assert v.candidates.cursor == 1
    press(s, "<Up>")
    assert s.view.preedit[1].text == "良い"
    press(s, "<Right><Right><Right>")     # focus stops at the last segment
    assert s.view.preedit[2].style is PreeditStyle.HIGHLIGHT
    assert commits(press(s, "<Return>")) == "今日は良い天気"
    assert conv.recorded == [([("きょうは", "今日は"), ("いい", "良い"), ("てんき", "天気")], "")]
    assert s.state is State.PRECOMPOSITION


def test_resize_passes_fixed_lengths():
    conv = ScriptedConverter(WORDS, SEGMENTS)
    s = make(conv)
    press(s, "kyouhaiitenki<space><S-Left>")
    assert conv.requests[-1].fixed_lengths == (3,)
    assert [p.text for p in s.view.preedit] == ["今日", "はいいてんき"]
    press(s, "<S-Right><S-Right>")
    assert conv.requests[-1].fixed_lengths == (5,)
    assert [p.text for p in s.view.preedit][0] == "きょうはい"
    # The first segment keeps the user's choice when a later one is resized.
    press(s, "<S-Left><S-Left><space><Right><S-Left>")
    assert conv.requests[-1].fixed_lengths == (3, 5)
    assert s.view.preedit[0].text == "京"


def test_resize_limits():
    s = make()
    press(s, "ki<space>")
    press(s, "<S-Left>")
    assert s.view.preedit_text == "き"
    press(s, "<S-Right>")
    assert s.view.preedit_text == "き"


def test_candidate_paging_and_selection():
    s = make()
    press(s, "kan<space>")
    page = s.view.candidates
    assert (page.page, page.pages, page.total, len(page.items)) == (0, 3, 23, 9)
    assert [i.label for i in page.items] == [str(n) for n in range(1, 10)]
    press(s, "<Next>")
    assert s.view.candidates.page == 1 and s.view.candidates.cursor == 0 and s.view.preedit_text == "漢9"
    s.page_down()
    s.page_down()
    assert s.view.candidates.page == 0          # wraps
    s.page_up()
    assert s.view.candidates.page == 2 and s.view.candidates.cursor == 0
    assert [i.text for i in s.view.candidates.items] == ["漢18", "漢19", "かん", "カン", "ｶﾝ"]
    assert s.select_candidate(3).commit == "カン"
    press(s, "kan<space>")
    assert press(s, "3")[0].commit == "漢2"
    press(s, "kan<space>")
    views = press(s, "<Prior>9")
    assert not commits(views) and s.state is State.CONVERSION   # no 9th item on the last page
    assert press(s, "5")[0].commit == "ｶﾝ"


def test_select_out_of_page_is_ignored():
    s = make()
    press(s, "kan<space><Prior>")
    assert s.view.candidates.page == 2
    v = s.select_candidate(8)
    assert not v.commit and s.state is State.CONVERSION
    assert not s.select_candidate(-1).commit


def test_candidates_wrap():
    s = make()
    press(s, "kan<space><Up>")
    assert s.view.preedit_text == "ｶﾝ"
    press(s, "<Down>")
    assert s.view.preedit_text == "漢0"


def test_escape_and_backspace_return_to_composition():
    s = make()
    press(s, "kyou<space>")
    press(s, "<Escape>")
    assert s.state is State.COMPOSITION and s.view.preedit_text == "きょう" and s.view.caret == 3
    press(s, "<space><BackSpace>")
    assert s.state is State.COMPOSITION and s.view.preedit_text == "きょう"


def test_printable_in_conversion_commits_and_starts_new_input():
    s = make()
    views = press(s, "kyou<space>k")
    assert views[-1].commit == "今日"
    assert s.state is State.COMPOSITION and s.view.preedit_text == "ｋ"


def test_commit_first_segment_keeps_the_rest():
    conv = ScriptedConverter(WORDS, SEGMENTS)
    s = make(conv)
    press(s, "kyouhaiitenki<space>")
    v = press(s, "<C-Down>")[0]
    assert v.commit == "今日は"
    assert s.state is State.CONVERSION and s.view.preedit_text == "良い天気"
    assert commits(press(s, "<Return>")) == "良い天気"
    assert conv.recorded[0] == ([("きょうは", "今日は")], "")


def test_transliteration_of_focused_segment():
    s = make()
    press(s, "kyouhaiitenki<space><Right><F7>")
    assert [p.text for p in s.view.preedit] == ["今日は", "イイ", "天気"]
    press(s, "<F10>")
    assert s.view.preedit[1].text == "ii"
    press(s, "<F10>")
    assert s.view.preedit[1].text == "II"
    press(s, "<C-u>")
    assert s.view.preedit[1].text == "いい"


@pytest.mark.parametrize("keys, text", [
    ("kyouha<F6>", "きょうは"), ("kyouha<F7>", "キョウハ"), ("kyouha<F8>", "ｷｮｳﾊ"),
    ("kyouha<F9>", "ｋｙｏｕｈａ"), ("kyouha<F10>", "kyouha"),
    ("kyouha<C-u>", "きょうは"), ("kyouha<C-i>", "キョウハ"), ("kyouha<C-o>", "ｷｮｳﾊ"),
    ("kyouha<C-p>", "ｋｙｏｕｈａ"), ("kyouha<C-t>", "kyouha"),
    ("tokyo<F9><F9>", "ＴＯＫＹＯ"), ("tokyo<F10><F10><F10>", "Tokyo"), ("tokyo<F10><F10><F10><F10>", "tokyo"),
    ("ka<Left>k<F10>", "kka"),
])
def test_transliteration_in_composition(keys, text):
    s = make(PlainConverter())
    press(s, keys)
    assert s.state is State.CONVERSION and s.view.preedit_text == text
    assert commits(press(s, "<Return>")) == text


def test_transliteration_is_not_learned():
    conv = ScriptedConverter(WORDS, SEGMENTS)
    s = make(conv)
    press(s, "kyou<F7><Return>")
    assert conv.recorded == []


# -- modes and IME on/off ----------------------------------------------------------------------

@pytest.mark.parametrize("mode, keys, text", [
    ("katakana", "kyouha-", "キョウハー"),
    ("halfwidth_katakana", "gakkou", "ｶﾞｯｺｳ"),
    ("fullwidth_alphanumeric", "Tokyo 2", "Ｔｏｋｙｏ\u3000２"),
    ("alphanumeric", "Tokyo 2", "Tokyo 2"),
    (InputMode.HIRAGANA, "kyou", "きょう"),
])
def test_input_modes(mode, keys, text):
    s = make()
    v = s.set_input_mode(mode)
    assert v.mode == InputMode.parse(mode).value
    assert commits(press(s, keys + "<Return>")) == text


def test_unknown_mode_is_an_error():
    with pytest.raises(ValueError, match="unknown input mode"):
        make().set_input_mode("klingon")


def test_mode_keys():
    s = make()
    press(s, "<S-Hiragana_Katakana>")
    assert s.input_mode is InputMode.KATAKANA
    press(s, "<Hiragana_Katakana>")
    assert s.input_mode is InputMode.HIRAGANA


def test_shift_letter_types_latin_until_the_word_ends():
    s = make()
    press(s, "Karukan")
    assert s.view.preedit_text == "Karukan" and typing_latin_until_word_ends(s)
    assert commits(press(s, "<Return>")) == "Karukan"
    press(s, "ka")
    assert s.view.preedit_text == "か"
    press(s, "<BackSpace>Ab<BackSpace><BackSpace>ka")
    assert s.view.preedit_text == "か"            # erased to empty: back to hiragana
    press(s, "<Escape>")
    press(s, "I love<Return>")
    assert s.state is State.PRECOMPOSITION


def test_caps_lock_alone_is_not_shift():
    s = make()
    for ch in "KA":
        s.process_key(keysym_for_char(ch), LOCK_MASK)
    assert s.view.preedit_text == "か"


@pytest.mark.parametrize("key", ["Zenkaku_Hankaku", "Eisu_toggle", "Kanji", "A-grave"])
def test_toggle_ime_commits_composition(key):
    s = make()
    press(s, "kyou")
    v = press(s, f"<{key}>")[0]
    assert v.commit == "きょう" and not v.enabled and s.state is State.DIRECT
    assert not press(s, "a")[0].handled
    v = press(s, f"<{key}>")[0]
    assert v.handled and v.enabled


def test_henkan_muhenkan():
    s = make()
    press(s, "<Muhenkan>")
    assert s.state is State.DIRECT
    press(s, "<Henkan>")
    assert s.state is State.PRECOMPOSITION
    press(s, "kyou<Henkan>")
    assert s.state is State.CONVERSION


def test_set_enabled_and_set_input_mode_turn_on():
    s = make()
    press(s, "ka")
    v = s.set_enabled(False)
    assert v.commit == "か" and not v.enabled
    v = s.set_input_mode("katakana")
    assert v.enabled and s.state is State.PRECOMPOSITION
    assert s.set_enabled(True).enabled


# -- live conversion ----------------------------------------------------------------------------

def test_live_conversion_toggle_show_commit_and_learn():
    conv = ScriptedConverter(WORDS, SEGMENTS, live_text={"きょうは": "今日は"})
    s = make(conv)
    assert not s.live_conversion
    v = press(s, "<C-S-l>")[0]
    assert s.live_conversion and v.aux
    release = s.process_key(*parse_key_spec("C-S-l"), release=True)
    assert not release.handled and release.aux == v.aux     # a release changes nothing
    press(s, "kyouh")
    assert (s.view.preedit_text, s.view.caret) == ("今日ｈ", 3)
    press(s, "a")
    assert s.view.preedit_text == "今日は"
    press(s, "<Left>")
    assert s.view.preedit_text == "きょうは"     # editing inside: kana
    press(s, "<End>")
    assert s.view.preedit_text == "今日は"
    assert commits(press(s, "<Return>")) == "今日は"
    assert conv.recorded == [([("きょうは", "今日は")], "")]


def test_live_escape_cancels_at_once():
    """Mozc: one Escape while composing, live text shown or not (the first Escape used to only
    hide the live kanji)."""
    s = make(live_conversion=True)
    press(s, "kyou")
    assert s.view.preedit_text == "今日"
    views = press(s, "<Escape>")
    assert views[-1].handled and s.state is State.PRECOMPOSITION and not commits(views)
    assert s.view.preedit_text == ""
    press(s, "kyo")                                  # kana-only text: one Escape as well
    assert s.view.preedit_text == "きょ"
    press(s, "<Escape>")
    assert s.state is State.PRECOMPOSITION


@pytest.mark.parametrize("back", ["<Escape>", "<BackSpace>", "<C-h>"])
def test_live_conversion_back_to_the_reading_then_cancel(back):
    """Two Escapes while converting: first back to the reading (kana, not the live kanji), then
    cancel; BackSpace is the same first step."""
    s = make(live_conversion=True)
    press(s, "kyou<space>")
    assert s.state is State.CONVERSION
    press(s, back)
    assert s.state is State.COMPOSITION and (s.view.preedit_text, s.view.caret) == ("きょう", 3)
    assert commits(press(s, "<Return>")) == "きょう"    # the reading is what Return commits
    press(s, "kyou<space>" + back)
    press(s, "ha")                                      # typing again: live conversion resumes
    assert s.view.preedit_text == "今日は"
    press(s, "<space>" + back + "<Escape>")
    assert s.state is State.PRECOMPOSITION and s.view.preedit_text == ""


def test_escape_presses_to_empty_like_mozc():
    """Count the Escapes from each state to an empty preedit, live conversion on and off."""
    for live in (True, False):
        for keys, expected in (("kyou", 1), ("kyouh", 1), ("ky", 1), ("kyou<Left>", 1),
                               ("kyou<space>", 2), ("kyouhaiitenki<space><Right>", 2),
                               ("kyou<space><Down><Down>", 2), ("kyou<F7>", 2)):
            s = make(live_conversion=live)
            press(s, keys)
            count = 0
            while s.state is not State.PRECOMPOSITION:
                views = press(s, "<Escape>")
                assert not commits(views)
                count += 1
                assert count <= 3
            assert count == expected, (live, keys)


@settings(max_examples=60, deadline=None)
@given(typed=st.text(alphabet="aiueokstnhmyrwgzdbp", min_size=1, max_size=12), live=st.booleans(),
       convert=st.booleans())
def test_escape_count_property(typed, live, convert):
    s = make(PlainConverter(), live_conversion=live)
    press(s, typed + ("<space>" if convert else ""))
    assert s.state is (State.CONVERSION if convert else State.COMPOSITION)
    press(s, "<Escape>")
    if convert:
        assert s.state is State.COMPOSITION
        press(s, "<Escape>")
    assert s.state is State.PRECOMPOSITION and not s.view.preedit_text


def test_live_failure_falls_back_to_kana():
    s = make(ScriptedConverter(WORDS, fail=["live"]), live_conversion=True)
    press(s, "kyou")
    assert s.view.preedit_text == "きょう"


# -- converters that fail ------------------------------------------------------------------------

def test_failing_converter_falls_back_to_kana_variants():
    conv = ScriptedConverter(WORDS, fail=["convert", "record"])
    s = make(conv)
    press(s, "kyou<space>")
    assert s.state is State.CONVERSION and s.view.preedit_text == "きょう"
    assert commits(press(s, "<Return>")) == "きょう"


class BadSegments(ScriptedConverter):
    def convert(self, request):
        return [Segment("ずれ", (Candidate("ズレ"),))]


def test_converter_with_bad_segments_is_not_trusted():
    s = make(BadSegments())
    press(s, "kyou<space>")
    assert s.view.preedit_text == "きょう"


# -- context, privacy, focus --------------------------------------------------------------------

def test_surrounding_text_gives_left_context():
    conv = ScriptedConverter(WORDS)
    s = make(conv, context_chars=5)
    s.set_surrounding_text("first line\nあいうえおかきくけこ|right\nnext", 21)
    assert s.left_context == "かきくけこ" and s.right_context == "|righ"
    press(s, "kyou<space>")
    assert conv.requests[-1].left_context == "かきくけこ"
    press(s, "<Return>")
    assert s.left_context == "くけこ今日"   # what we committed extends it
    s.set_surrounding_text("abc", 99, anchor=1)
    assert s.left_context == "a"
    s.set_surrounding_text("abc", -5)
    assert s.left_context == LINE_START   # the caret starts its line: a sentence start
    press(s, "kyou<space>")
    assert conv.requests[-1].left_context == LINE_START
    s.focus_out()
    assert s.left_context == ""           # nothing known of the text now


def test_context_chars_zero_keeps_nothing():
    s = make(context_chars=0)
    s.set_surrounding_text("abc", 3)
    press(s, "a<Return>")
    assert s.left_context == ""


@pytest.mark.parametrize("purpose", [PURPOSE_PASSWORD, PURPOSE_PIN])
def test_password_fields_pass_through(purpose):
    conv = ScriptedConverter(WORDS)
    s = make(conv)
    s.set_field_privacy(field_privacy(purpose, 0))
    assert not any(v.handled for v in press(s, "kyou<space><Return>"))
    assert conv.requests == [] and conv.recorded == []
    s.set_field_privacy(field_privacy(0, 0))
    assert commits(press(s, "kyou<space><Return>")) == "今日"


def test_private_hint_and_config_disable_learning():
    conv = ScriptedConverter(WORDS)
    s = make(conv)
    s.set_field_privacy(field_privacy(0, HINT_PRIVATE))
    press(s, "kyou<space><Return>")
    assert conv.recorded == [] and conv.requests[-1].learn is False
    s = Session(conv, Config(learning=LearningSettings(enabled=False)))
    press(s, "kyou<space><Return>")
    assert conv.recorded == []


@pytest.mark.parametrize("keys", ["kyou<space><Return>", "kyou<Return>"])
def test_text_typed_in_a_private_field_is_not_learned_after_the_field_turns_normal(keys):
    # Issue 29 item 4: privacy is decided when the text is typed, not when it is committed.
    conv = ScriptedConverter(WORDS)
    s = make(conv)
    s.set_surrounding_text("前の", 2)
    s.set_field_privacy(field_privacy(0, HINT_PRIVATE))
    press(s, keys[:-len("<Return>")])
    s.set_field_privacy(field_privacy(0, 0))
    assert press(s, "<Return>")[-1].commit
    assert conv.recorded == [] and not any(r.learn for r in conv.requests)
    assert s.left_context == ""               # nor is it a later choice's left context
    press(s, "kyou<space><Return>")             # typed in the normal field: learned again
    assert conv.recorded == [([("きょう", "今日")], "")]


def test_text_typed_before_a_field_turns_private_is_not_learned_there():
    conv = ScriptedConverter(WORDS)
    s = make(conv)
    press(s, "kyou<space>")
    s.set_field_privacy(field_privacy(0, HINT_PRIVATE))
    s.set_field_privacy(field_privacy(0, 0))
    press(s, "<Return>")
    assert conv.recorded == []


def test_focus_out_commits_reset_drops():
    s = make()
    press(s, "kan")
    assert s.focus_out().commit == "かん"
    press(s, "kyou<space>")
    assert s.focus_out().commit == "今日"
    press(s, "kyou")
    v = s.reset()
    assert not v.commit and s.state is State.PRECOMPOSITION and s.view.preedit == ()
    assert s.focus_in().handled


def test_view_property_is_current_state():
    s = make()
    press(s, "ka")
    v = s.view
    assert v.handled and v.commit == "" and v.preedit_text == "か" and s.state is State.COMPOSITION


# -- configuration -------------------------------------------------------------------------------

def test_config_input_settings_reach_the_composer():
    s = Session(PlainConverter(), Config(input=InputSettings(mode="katakana", punctuation="，．", digit_width="full")))
    assert commits(press(s, "a,1.<Return>")) == "ア，１．"


def test_bad_user_keymap_and_table_fall_back_to_defaults(tmp_path):
    keymap = tmp_path / "keymap.toml"
    keymap.write_text("[composition\n", encoding="utf-8")
    table = tmp_path / "table.tsv"
    table.write_text("only-one-column\n", encoding="utf-8")
    s = Session(PlainConverter(), Config(input=InputSettings(romaji_table=str(table)),
                                         session=SessionSettings(keymap=str(keymap))))
    assert len(s.load_errors) == 2 and "keymap.toml" in s.load_errors[0]
    assert commits(press(s, "ka<Return>")) == "か"


def test_user_keymap_overrides(tmp_path):
    keymap = tmp_path / "keymap.toml"
    keymap.write_text('[composition]\n"C-j" = "commit"\n"Return" = ""\n', encoding="utf-8")
    s = Session(PlainConverter(), Config(session=SessionSettings(keymap=str(keymap))))
    assert not s.load_errors
    views = press(s, "ka<Return>")
    assert not commits(views) and views[-1].handled   # unbound now: shielded, not committed
    assert commits(press(s, "<C-j>")) == "か"


# -- bad input -----------------------------------------------------------------------------------

def test_ten_thousand_key_burst():
    import random

    rng = random.Random(7)
    names = ["space", "Return", "BackSpace", "Escape", "Left", "Right", "F7", "F10", "S-Left", "S-Right",
             "Next", "Prior", "Zenkaku_Hankaku", "Down", "Up", "1", "C-Down"]
    s = make()
    for _ in range(10_000):
        if rng.random() < 0.7:
            keysym, mods = keysym_for_char(rng.choice("kyouhaiitenkinn-.,!A1 ")), 0
        else:
            keysym, mods = parse_key_spec(rng.choice(names))
        v = s.process_key(keysym, mods)
        assert 0 <= v.caret <= len(v.preedit_text)
    press(s, "<Zenkaku_Hankaku>" if s.state is State.DIRECT else "")


def test_long_composition_burst_is_capped():
    s = make(PlainConverter())
    for _ in range(10_000):
        v = s.process_key(keysym_for_char("a"))
        assert v.handled
    assert len(s.view.preedit_text) == MAX_COMPOSITION_CHARS and v.aux
    assert len(press(s, "<Return>")[0].commit) == MAX_COMPOSITION_CHARS
