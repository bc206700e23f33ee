"""Suggestions while composing, as key sequences: the list appears as you type, Tab / Down enter
it, Return commits (and learns the whole reading), and nothing changes for keys typed without
entering it. Off with [suggest] enabled = false, and never in private or password fields."""

from __future__ import annotations

import dataclasses
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from karukan_engine.config import Config, SessionSettings, SuggestSettings
from karukan_engine.live.live_service import LateUpdate, LiveLink, LiveService, UpdateKind
from karukan_engine.session import PreeditStyle, Session, State, View
from karukan_engine.session.field import FieldPrivacy
from karukan_engine.session.keys_cli import parse_keys
from session_fakes import SuggestingConverter

WORDS = {"ありがとう": ["有難う"], "きょう": ["今日", "京"], "てんき": ["天気"]}
COMPLETIONS = [("ありがとうございます", "ありがとうございます"), ("ありがとう", "有難う"),
               ("ありがたい", "有り難い"), ("きょうは", "今日は"), ("てんきよほう", "天気予報")]


def make(enabled: bool = True, count: int = 6, live: bool = False,
         converter: SuggestingConverter | None = None) -> tuple[Session, SuggestingConverter]:
    converter = converter or SuggestingConverter(COMPLETIONS, words=WORDS)
    config = Config(session=SessionSettings(live_conversion=live),
                    suggest=SuggestSettings(enabled=enabled, count=count))
    return Session(converter, config), converter


def press(s: Session, keys: str) -> list[View]:
    return [s.process_key(keysym, mods) for _, keysym, mods in parse_keys(keys)]


def texts(view: View) -> list[str]:
    return [item.text for item in view.suggestions.items] if view.suggestions else []


def commits(views: list[View]) -> str:
    return "".join(v.commit for v in views)


def test_typing_shows_suggestions_without_a_selection():
    s, _ = make()
    view = press(s, "arigat")[-1]
    assert view.preedit_text == "ありがｔ"
    assert texts(view) == ["ありがとうございます", "有難う", "有り難い"]
    assert view.suggestions.cursor is None and view.candidates is None
    view = press(s, "o")[-1]
    assert texts(view) == ["ありがとうございます", "有難う"]   # narrowed to what still fits
    assert [i.label for i in view.suggestions.items] == ["1", "2"]


def test_tab_selects_and_return_commits_the_suggestion_and_learns_its_whole_reading():
    s, converter = make()
    views = press(s, "arigato<Tab>")
    assert s.state is State.SUGGESTION
    assert views[-1].suggestions.cursor == 0 and views[-1].candidates is None
    assert views[-1].preedit == ((dataclasses.replace(views[-1].preedit[0], style=PreeditStyle.HIGHLIGHT)),)
    assert views[-1].preedit_text == "ありがとうございます"
    views = press(s, "<Return>")
    assert commits(views) == "ありがとうございます" and s.state is State.PRECOMPOSITION
    assert views[-1].suggestions is None and views[-1].preedit == ()
    assert converter.recorded == [([("ありがとうございます", "ありがとうございます")], "")]


def test_down_moves_through_the_list_and_up_wraps():
    s, _ = make()
    assert press(s, "arigato<Down><Down>")[-1].preedit_text == "有難う"
    assert press(s, "<Up><Up>")[-1].preedit_text == "有難う"   # 0 -> last
    assert press(s, "<S-Tab>")[-1].suggestions.cursor == 0
    assert commits(press(s, "<space><Return>")) == "有難う"


def test_what_was_committed_is_suggested_first_next_time():
    s, _ = make()
    press(s, "arigato<Down><Down><Return>")
    assert texts(press(s, "ari")[-1])[0] == "有難う"


def test_escape_closes_the_list_and_keeps_the_reading():
    s, converter = make()
    press(s, "arigato<Tab>")
    view = press(s, "<Escape>")[-1]
    assert s.state is State.COMPOSITION and view.preedit_text == "ありがと"
    assert view.suggestions is None and not view.commit
    view = press(s, "u")[-1]                        # typing goes on; the list is back
    assert view.preedit_text == "ありがとう" and texts(view)
    assert commits(press(s, "<Return>")) == "ありがとう" and converter.recorded == []


def test_typing_in_the_list_commits_the_choice_and_composes_on():
    s, converter = make()
    views = press(s, "kyou<Tab>ha")
    assert commits(views) == "今日は"
    assert views[-1].preedit_text == "は" and s.state is State.COMPOSITION
    assert converter.recorded == [([("きょうは", "今日は")], "")]


def test_a_number_or_a_click_commits_that_suggestion():
    s, _ = make()
    assert commits(press(s, "ariga<Tab>3")) == "有り難い"
    press(s, "tenki")
    assert texts(s.view) == ["天気予報"]
    assert s.select_candidate(0).commit == "天気予報"


def test_focus_out_commits_the_choice_unlearned():
    s, converter = make()
    press(s, "kyou<Tab>")
    assert s.focus_out().commit == "今日は"
    assert converter.recorded == []


def test_without_the_list_keys_work_as_before():
    s, _ = make()
    view = press(s, "kyou<space>")[-1]                 # Space converts even with a list shown
    assert s.state is State.CONVERSION and view.suggestions is None
    assert view.candidates.items[0].text == "今日"
    assert commits(press(s, "<Return>")) == "今日"
    s, _ = make()
    assert commits(press(s, "kyou<Return>")) == "きょう"   # Return commits the reading
    s, _ = make()
    view = press(s, "kyou<BackSpace>")[-1]
    assert view.preedit_text == "きょ" and s.state is State.COMPOSITION


def test_tab_converts_when_no_suggestion_is_shown():
    s, _ = make()
    press(s, "zzz")
    assert s.view.suggestions is None
    press(s, "<Tab>")
    assert s.state is State.CONVERSION


def test_setting_off_means_no_suggestion_work_at_all():
    s, converter = make(enabled=False)
    view = press(s, "arigato")[-1]
    assert view.suggestions is None and converter.asked == []
    press(s, "<Tab>")
    assert s.state is State.CONVERSION


def test_count_limits_the_list():
    s, _ = make(count=2)
    assert len(texts(press(s, "ari")[-1])) == 2


@pytest.mark.parametrize("field", [FieldPrivacy(private=True), FieldPrivacy(password=True)])
def test_private_and_password_fields_get_no_suggestions_and_learn_nothing(field):
    s, converter = make()
    s.set_field_privacy(field)
    views = press(s, "arigato<Tab><Return>")
    assert all(v.suggestions is None for v in views) and converter.asked == []
    assert converter.recorded == []


def test_a_field_turning_private_closes_the_list():
    s, converter = make()
    press(s, "arigato<Tab>")
    s.set_field_privacy(FieldPrivacy(private=True))
    assert s.state is State.COMPOSITION and s.view.suggestions is None
    press(s, "<Return>")
    assert converter.recorded == []


def test_katakana_mode_and_latin_words_get_no_suggestions():
    s, _ = make()
    s.set_input_mode("katakana")
    assert press(s, "arigato")[-1].suggestions is None
    s, _ = make()
    assert press(s, "Ari")[-1].suggestions is None


# -- off the key path ----------------------------------------------------------------------------

@pytest.fixture
def service():
    live = LiveService(SuggestingConverter(COMPLETIONS, words=WORDS))
    yield live
    live.shutdown()


def linked(service: LiveService, context: int, delivered: list) -> Session:
    session, _ = make(converter=service.converter)
    session.attach_live(LiveLink(service, context, delivered.append))
    return session


def test_suggestions_arrive_as_updates_for_the_current_event(service):
    delivered: list = []
    s = linked(service, 3, delivered)
    view = press(s, "arigato")[-1]
    assert view.suggestions is None                 # the key did not wait for them
    assert service.scheduler.idle(10)
    updates = [u for u in delivered if u.kind is UpdateKind.SUGGESTIONS]
    assert updates and all(u.context == 3 for u in updates)
    current = [u for u in updates if u.epoch == service.scheduler.epoch(3)]
    assert len(current) == 1 and current[0].reading == "ありがと"
    late = s.apply_live_update(current[0])
    assert texts(late) == ["ありがとうございます", "有難う"] and late.commit == ""
    assert s.apply_live_update(current[0]) is None  # the same list again changes nothing shown
    assert commits(press(s, "<Tab><Return>")) == "ありがとうございます"


def test_stale_suggestions_are_dropped(service):
    delivered: list = []
    s = linked(service, 4, delivered)
    press(s, "ari")
    assert service.scheduler.idle(10)
    (update,) = [u for u in delivered if u.kind is UpdateKind.SUGGESTIONS]
    press(s, "<BackSpace>")                         # a newer event
    assert s.apply_live_update(update) is None
    other = dataclasses.replace(update, context=99, epoch=service.scheduler.epoch(4))
    assert s.apply_live_update(other) is None
    assert s.apply_live_update(LateUpdate.live(4, update.epoch, "あり", "x")) is None


# -- typing without entering the list is unaffected ------------------------------------------------

KEYS = st.lists(st.one_of(
    st.sampled_from(list("arigatoukyhnesz")),
    st.sampled_from(["<space>", "<Return>", "<BackSpace>", "<Escape>", "<Left>", "<Right>", "<F7>",
                     "<Up>", "<S-Left>", "<Delete>", "<End>"]),
), max_size=30)


def _without_suggestions(view: View) -> View:
    return dataclasses.replace(view, suggestions=None)


@settings(max_examples=150, deadline=None)
@given(keys=KEYS, live=st.booleans())
def test_without_tab_or_down_suggestions_change_nothing(keys, live):
    on, on_converter = make(enabled=True, live=live)
    off, off_converter = make(enabled=False, live=live)
    for key in keys:
        a = press(on, key)
        b = press(off, key)
        assert [_without_suggestions(v) for v in a] == b
    assert on_converter.recorded == off_converter.recorded


# -- the list itself -----------------------------------------------------------------------------

from karukan_engine.core.types import Completion  # noqa: E402
from karukan_engine.session.suggestions import SuggestionList  # noqa: E402

completions = st.lists(st.builds(Completion, st.text("あいう", min_size=1, max_size=3),
                                 reading=st.text("あいう", min_size=1, max_size=4)), min_size=1, max_size=9)


@given(completions, st.lists(st.integers(-3, 3), max_size=12), st.text("あいう", max_size=3))
def test_moving_stays_in_the_list_and_narrowing_keeps_what_fits(items, moves, reading):
    lst = SuggestionList.of("ん", items, 9)   # a reading no surface equals
    assert lst is not None and lst.cursor is None
    lst = lst.entered()
    for delta in moves:
        lst = lst.moved(delta)
        assert 0 <= lst.cursor < len(lst.items)
    assert lst.page().cursor == lst.cursor and len(lst.page().items) == len(lst.items)
    narrowed = lst.narrowed(reading)
    kept = [c for c in items if c.reading.startswith(reading) and c.surface != reading]
    assert (narrowed.items if narrowed else ()) == tuple(kept)
    assert narrowed is None or (narrowed.cursor is None and not narrowed.complete)
    assert lst.learn_pair(items[0]) == (items[0].reading, items[0].surface)


def test_a_key_typed_before_the_search_starts_costs_no_search():
    converter = SuggestingConverter(COMPLETIONS, words=WORDS)
    live = LiveService(converter, suggestion_delay_s=30.0)   # the search would start long after
    try:
        delivered: list = []
        s = linked(live, 5, delivered)
        started = time.monotonic()
        press(s, "ari")                                # each key supersedes the last one's wait
        s.focus_out()
        assert live.scheduler.idle(10) and time.monotonic() - started < 10
        assert converter.asked == [] and delivered == []
    finally:
        live.shutdown()


def test_the_typed_kana_itself_is_never_suggested():
    s, converter = make()
    converter.recorded.append(([("きょう", "きょう")], ""))   # learned as typed, say
    assert "きょう" not in texts(press(s, "kyou")[-1]) and texts(s.view) == ["今日は"]


def test_a_field_turning_into_a_password_field_commits_the_selected_suggestion_unlearned():
    s, converter = make()
    press(s, "kyou<Tab>")
    view = s.set_field_privacy(FieldPrivacy(password=True, private=True))
    assert view.commit == "今日は" and view.preedit == () and converter.recorded == []


def test_pending_keys_come_back_after_escape():
    s, _ = make()
    press(s, "kyouk<Tab>")
    assert s.state is State.SUGGESTION
    assert press(s, "<Escape>")[-1].preedit_text == "きょうｋ"
    assert press(s, "a")[-1].preedit_text == "きょうか"
