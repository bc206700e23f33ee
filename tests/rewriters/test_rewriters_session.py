"""Each rewriter through the real Session, key by key: what Space lists, what each candidate is
annotated with, what committing one writes and teaches."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

from hypothesis import given, settings
from hypothesis import strategies as st

from karukan_engine.config import RewriterSettings
from karukan_engine.rewriters.choice_memory import ChoiceMemory
from ime_frontend.toolkit import HINT_PRIVATE, field_privacy
from rewriter_support import Clock, annotations, choose, listed, make, press

ON = RewriterSettings()


def commits(views) -> str:
    return "".join(v.commit for v in views)


def test_neko_offers_the_cat_emoji_on_the_first_page_and_learns_it_like_a_word():
    s, conv, _ = make()
    views = press(s, "neko ")
    page = [item.text for item in views[-1].candidates.items]
    assert page[0] == "猫" and "🐱" in page
    assert annotations(s)["🐱"] == "絵文字"
    assert dict((i.text, i.annotation) for i in views[-1].candidates.items)["🐱"] == "絵文字"
    assert commits(choose(s, "🐱")) == "🐱"
    assert conv.recorded[-1][0] == [("ねこ", "🐱")]


def test_colon_query_typed_in_latin_converts_to_the_emoji_first():
    s, conv, _ = make()
    views = press(s, ":smile")
    assert views[-1].preedit_text == ":smile"           # Latin, not ：ｓみぇ
    views = press(s, " ")
    assert views[-1].preedit_text == "😄"               # Space converts (no space typed)
    assert annotations(s)["😄"].startswith("絵文字")
    assert ":smile" in listed(s)                        # the typed text stays a candidate
    assert s._state.conversion.focused.reading == ":smile"   # one segment, not ":" and "smile"
    assert commits(press(s, "<Return>")) == "😄"


def test_colon_plus_one_and_a_colon_inside_a_word():
    s, _, _ = make()
    press(s, ":+1 ")
    assert s.view.preedit_text == "👍"
    press(s, "<Escape><Escape>")
    # A colon after kana is a plain symbol, as before.
    views = press(s, "ne:")
    assert views[-1].preedit_text == "ね："


def test_colon_query_is_off_with_the_emoji_rewriter():
    s, _, _ = make(replace(ON, emoji=False))
    assert press(s, ":s")[-1].preedit_text != ":s"


def test_digits_typed_as_digits_get_every_notation_annotated():
    s, _, _ = make()
    press(s, "100 ")
    notes = annotations(s)
    assert listed(s)[0] == "100"
    for surface, note in {"１００": "[全]数字", "百": "漢数字", "一〇〇": "漢数字", "壱百": "大字", "Ⅽ": "ローマ数字",
                          "0x64": "16進数", "0144": "8進数", "0b1100100": "2進数"}.items():
        assert notes[surface] == note, surface
    press(s, "<Escape><Escape>")
    press(s, "12 ")
    assert {"⑫", "Ⅻ"} <= set(listed(s)) and annotations(s)["⑫"] == "丸数字"
    press(s, "<Escape><Escape>")
    press(s, "1234 ")
    assert annotations(s)["1,234"] == "数字(桁区切り)"


def test_a_kana_number_reading_gets_its_digits():
    s, _, _ = make()
    press(s, "hyaku ")
    assert listed(s)[:2] == ["百", "100"]


def test_symbols_and_emoticons_by_reading():
    s, _, _ = make()
    press(s, "yajirusi ")
    assert listed(s)[0] == "矢印"
    assert listed(s)[3:8] == ["→", "←", "↑", "↓", "⇒"]
    assert annotations(s)["→"].startswith("[記号]矢印")
    press(s, "<Escape><Escape>")
    press(s, "kaomoji ")
    assert listed(s)[0] == "顔文字" and annotations(s)[listed(s)[1]] == "顔文字"
    assert len(listed(s)) > 100


def test_single_kanji_end_the_list():
    s, _, _ = make()
    press(s, "kyou ")
    tail = listed(s)[-20:]
    assert all(len(k) == 1 for k in tail) and tail[-1] == "驕" and "凶" in listed(s)
    assert listed(s).count("京") == 1 and listed(s).index("京") < listed(s).index("凶")


def test_today_is_read_from_the_clock_when_the_conversion_runs():
    clock = Clock(datetime(2026, 12, 2, 14, 5))
    s, _, _ = make(clock=clock)
    press(s, "kyou ")
    assert listed(s)[0] == "今日"
    assert listed(s)[1:7] == ["2026/12/02", "2026-12-02", "2026年12月2日", "令和8年12月2日", "12月2日(水)", "水曜日"]
    assert annotations(s)["2026/12/02"] == "今日の日付"
    press(s, "<Escape><Escape>")
    clock.now = datetime(2027, 1, 1, 0, 1)              # the same session, a month later
    press(s, "kyou ")
    assert "2027/01/01" in listed(s) and "2026/12/02" not in listed(s)
    press(s, "<Escape><Escape>")
    press(s, "ima ")
    assert {"00:01", "0時1分", "午前0時1分"} <= set(listed(s))


def test_a_chosen_date_is_remembered_as_its_kind_not_its_text():
    clock = Clock(datetime(2026, 12, 2, 14, 5))
    memory = ChoiceMemory()
    s, conv, _ = make(clock=clock, memory=memory)
    press(s, "kyou ")
    assert commits(choose(s, "2026/12/02")) == "2026/12/02"
    assert memory.kind_for("きょう") == "slash"
    assert all(("きょう", "2026/12/02") not in pairs for pairs, _ in conv.recorded)   # no stale text learned
    clock.now = datetime(2026, 12, 5, 9, 0)
    views = press(s, "kyou ")
    assert views[-1].preedit_text == "2026/12/05"      # today's date in the chosen form leads
    assert listed(s)[1] == "今日"
    assert commits(press(s, "<Return>")) == "2026/12/05"


def test_a_date_chosen_in_a_private_field_is_not_remembered():
    memory = ChoiceMemory()
    s, _, _ = make(memory=memory)
    s.set_field_privacy(field_privacy(0, HINT_PRIVATE))
    press(s, "kyou ")
    choose(s, "2026/12/02")
    assert memory.kind_for("きょう") is None


def test_each_rewriter_turns_off():
    s, _, _ = make(RewriterSettings(emoji=False, symbols=False, emoticons=False, dates=False, numbers=False,
                                    single_kanji=False))
    for keys, absent in (("neko ", "🐱"), ("yajirusi ", "→"), ("kaomoji ", "(^o^)"), ("kyou ", "2026/12/02"),
                         ("100 ", "壱百")):
        press(s, keys)
        assert absent not in listed(s), keys
        press(s, "<Escape><Escape>")
    press(s, "kyou ")
    assert "凶" not in listed(s)      # single kanji off


KNOWN_READINGS = ["ねこ", "きょう", "あした", "いま", "ことし", "げつようび", "やじるし", "まる", "ほし", "かっこ",
                  "かおもじ", "にこにこ", "ひゃく", "せん", "ぴえん", "かお", "はーと"]


@settings(max_examples=30, deadline=None)
@given(st.sampled_from(KNOWN_READINGS), st.text(st.characters(min_codepoint=0x4E00, max_codepoint=0x9FFF),
                                                 min_size=1, max_size=3),
       st.datetimes(min_value=datetime(2000, 1, 1), max_value=datetime(2100, 1, 1)))
def test_space_keeps_the_dictionary_word_first_through_the_session(reading, word, now):
    from karukan_engine.kana import to_hiragana
    from karukan_engine.romaji.table import RomajiTable
    from session_fakes import ScriptedConverter

    keys = RomajiTable.default().romaji_for(to_hiragana(reading))
    s, _, _ = make(clock=Clock(now), converter=ScriptedConverter({reading: [word]}))
    views = press(s, keys + " ")
    assert views[-1].preedit_text == word
    assert views[-1].candidates.items[0].text == word
    shown = listed(s)
    assert shown[0] == word and len(set(shown)) == len(shown)
