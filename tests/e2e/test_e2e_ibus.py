"""End to end through the real ibus-daemon: our engine started from its installed component."""

from __future__ import annotations

import os
import signal

from dbus_fast import Message
from dbus_fast.errors import DBusError

from e2e_support import TIMEOUT_S, engine_pids, eventually, karukan, run
from karukan_testing.app_clients import IBusApp
from ime_frontend.ibus import gvariant as gv

SPACE, RETURN, RIGHT, ESCAPE = 0x20, 0xFF0D, 0xFF53, 0xFF1B
PURPOSE_PASSWORD = 8
HINT_PRIVATE = 1 << 11


async def ready_app(desktop) -> IBusApp:
    app = await IBusApp.connect(desktop.ibus_address)
    # Component mode: SetEngine may return before the engine process is up, or (on a loaded
    # machine) time out waiting for it; select it again until it is the context's engine.
    await eventually(lambda: _reselected(app), timeout_s=TIMEOUT_S / 2)
    return app


async def _is_karukan(app: IBusApp) -> bool:
    return await app.engine_name() == "karukan"


async def type_text(app: IBusApp, text: str) -> None:
    for ch in text:
        assert await app.tap(ord(ch)), ch


def highlighted(app: IBusApp) -> tuple[int, int] | None:
    spans = [(a.start, a.end) for a in app.shown.preedit_attrs if a.type == gv.AttrType.BACKGROUND]
    return spans[0] if spans else None


def test_type_convert_choose_commit(ibus_desktop):
    async def body():
        app = await ready_app(ibus_desktop)
        await type_text(app, "kanji")
        assert app.shown.preedit == "かんじ"
        assert app.shown.preedit_cursor == 3
        assert gv.Attribute(gv.AttrType.UNDERLINE, gv.Underline.SINGLE, 0, 3) in app.shown.preedit_attrs
        assert await app.tap(SPACE)
        candidates = list(app.shown.candidates)
        assert "漢字" in candidates and app.shown.candidate_cursor == 0
        assert app.shown.preedit == candidates[0] and highlighted(app) == (0, len(candidates[0]))
        assert await app.tap(SPACE)                   # next candidate
        assert app.shown.candidate_cursor == 1 and app.shown.preedit == candidates[1]
        assert await app.tap(ord("3"))                # pick the third directly: commits it
        assert app.shown.commits == [candidates[2]]
        assert app.shown.preedit == "" and app.shown.candidates == []
        app.disconnect()

    run(body())


def test_move_between_segments_and_commit(ibus_desktop):
    async def body():
        app = await ready_app(ibus_desktop)
        await type_text(app, "watashinonamaehanakanodesu")
        assert await app.tap(SPACE)
        first = highlighted(app)
        assert first is not None and first[0] == 0 and first[1] < len(app.shown.preedit), "one segment only"
        assert await app.tap(RIGHT)
        second = highlighted(app)
        assert second is not None and second[0] == first[1]
        shown = app.shown.preedit
        assert await app.tap(RETURN)
        assert app.shown.commits == [shown]
        app.disconnect()

    run(body())


def test_candidate_click_selects(ibus_desktop):
    async def body():
        app = await ready_app(ibus_desktop)
        await type_text(app, "kanji")
        await app.tap(SPACE)
        candidates = list(app.shown.candidates)
        # What a panel does when the user clicks the second candidate: the daemon's engine proxy
        # calls CandidateClicked on the engine. Here the test calls the engine object directly.
        unique, paths = await _engine_objects(app)
        for path in paths:
            await app.bus.call(Message(destination=unique, path=path, interface="org.freedesktop.IBus.Engine",
                                       member="CandidateClicked", signature="uuu", body=[1, 1, 0]))
        await app.ic("GetEngine")   # a round trip through the daemon: its signals are in
        assert candidates[1] in (app.shown.preedit, *app.shown.commits)
        app.disconnect()

    run(body())


async def _engine_objects(app: IBusApp) -> tuple[str, list[str]]:
    """Our engine process's connection on the IBus bus and its engine object paths."""
    import xml.etree.ElementTree as ET

    (unique,) = (await app.bus.call(Message(
        destination="org.freedesktop.DBus", path="/org/freedesktop/DBus", interface="org.freedesktop.DBus",
        member="GetNameOwner", signature="s", body=["org.freedesktop.IBus.Karukan"]))).body
    reply = await app.bus.call(Message(destination=unique, path="/org/freedesktop/IBus/Engine",
                                       interface="org.freedesktop.DBus.Introspectable", member="Introspect"))
    nodes = ET.fromstring(reply.body[0]).findall("node")
    return unique, [f"/org/freedesktop/IBus/Engine/{n.get('name')}" for n in nodes]


def test_input_mode_menu_switches_mode(ibus_desktop):
    async def body():
        app = await ready_app(ibus_desktop)
        await app.tap(ord("a"))
        await app.tap(ESCAPE)
        (menu,) = app.shown.properties
        assert menu.prop_type == gv.PropType.MENU
        assert {p.key for p in menu.sub_props} >= {"InputMode.hiragana", "InputMode.katakana"}
        await app.ic("PropertyActivate", "su", ["InputMode.katakana", gv.PropState.CHECKED])
        await type_text(app, "ka")
        assert app.shown.preedit == "カ"
        (menu,) = app.shown.properties
        checked = [p.key for p in menu.sub_props if p.state == gv.PropState.CHECKED]
        assert checked == ["InputMode.katakana"]
        app.disconnect()

    run(body())


def test_password_field_passes_keys_through(ibus_desktop):
    async def body():
        app = await ready_app(ibus_desktop)
        await app.set_content_type(PURPOSE_PASSWORD)
        for ch in "himitsu":
            assert not await app.tap(ord(ch))
        assert app.shown.preedit == "" and app.shown.commits == []
        await app.set_content_type(0)
        assert await app.tap(ord("a"))
        assert app.shown.preedit == "あ"
        app.disconnect()

    run(body())


def test_a_field_turning_into_a_password_field_gets_the_typed_text_committed(ibus_desktop):
    # Issue 17 item 10: the composition used to vanish from the screen and stay hidden in the
    # session; it is committed (never learned), as a focus change commits it.
    import asyncio

    async def body():
        app = await ready_app(ibus_desktop)
        await type_text(app, "kyou")
        assert app.shown.preedit
        await app.set_content_type(PURPOSE_PASSWORD)
        deadline = asyncio.get_running_loop().time() + 30   # a bound against hanging, not a timing check
        while not app.shown.commits and asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(0.05)
        assert app.shown.commits and app.shown.preedit == ""
        assert not await app.tap(ord("a"))                 # a password field: keys pass through
        app.disconnect()

    run(body())


def test_text_typed_in_a_private_field_is_not_learned_when_the_field_turns_normal(ibus_desktop):
    # Issue 29 item 4: privacy is decided when the text is typed, not when it is committed.
    from gtk_support import wait_learned

    async def body():
        app = await ready_app(ibus_desktop)
        await app.set_content_type(0, HINT_PRIVATE)
        await type_text(app, "tanuki")
        assert await app.tap(SPACE)
        await app.set_content_type(0, 0)
        assert await app.tap(RETURN)
        assert app.shown.commits and app.shown.preedit == ""
        await type_text(app, "kaigi")                # typed in the normal field: learned
        assert await app.tap(SPACE) and await app.tap(RETURN)
        app.disconnect()

    run(body())
    saved = wait_learned(ibus_desktop, "かいぎ")
    assert "たぬき" not in saved


def test_surrounding_text_is_accepted(ibus_desktop):
    async def body():
        app = await ready_app(ibus_desktop)
        await app.set_surrounding_text("今日は", 3)
        await type_text(app, "tenki")
        assert app.shown.preedit == "てんき"
        app.disconnect()

    run(body())


def test_engine_killed_mid_typing_keys_still_reach_the_app(ibus_desktop):
    async def body():
        app = await ready_app(ibus_desktop)
        await type_text(app, "ka")
        (pid,) = engine_pids(ibus_desktop, "ime_frontend.ibus")
        os.kill(pid, signal.SIGKILL)
        # With the engine gone the daemon answers "not handled": the application gets the key.
        await eventually(lambda: _not_handled(app))
        # What the panel / user does: select the engine again (and again, if ibus-daemon gave up
        # waiting for the new engine process on a loaded machine: its D-Bus timeout is 15 s).
        await eventually(lambda: _reselected(app), timeout_s=TIMEOUT_S / 2)
        await eventually(lambda: _handled(app))
        assert engine_pids(ibus_desktop, "ime_frontend.ibus") != [pid]
        app.disconnect()

    run(body())


async def _reselected(app: IBusApp) -> bool:
    try:
        await app.set_engine("karukan")
    except DBusError:   # e.g. "Timeout reached" while the engine process was starting
        return False
    return await _is_karukan(app)


async def _not_handled(app: IBusApp) -> bool:
    # libibus treats an error reply like FALSE: the im module lets the application have the key.
    try:
        return not await app.tap(ord("a"))
    except DBusError:
        return True


async def _handled(app: IBusApp) -> bool:
    try:
        handled = await app.tap(ord("a"))
    except DBusError:
        return False
    return handled and app.shown.preedit.endswith("あ")


def test_focus_out_commits_the_composition_once(ibus_desktop):
    async def body():
        app = await ready_app(ibus_desktop)
        await type_text(app, "ka")
        await app.ic("FocusOut")
        await app.ic("FocusIn")
        await app.ic("GetEngine")
        assert app.shown.commits == ["か"] and app.shown.preedit == ""
        app.disconnect()

    run(body())


def test_doctor_sees_ibus_and_our_engine(ibus_desktop):
    result = karukan(ibus_desktop, "doctor", check=False)
    assert "[ok] ibus-daemon: running" in result.stdout, result.stdout
    assert "[ok] ibus engine: 'karukan' is available" in result.stdout
    assert "[ok] install (user): ibus component, D-Bus activation, systemd unit" in result.stdout
    assert "[ok] system dictionary: " in result.stdout


def test_panel_cursor_buttons_move_the_candidate_cursor(ibus_desktop):
    async def body():
        app = await ready_app(ibus_desktop)
        await type_text(app, "kanji")
        await app.tap(SPACE)
        candidates = list(app.shown.candidates)
        unique, paths = await _engine_objects(app)
        for path in paths:   # what the panel's "next candidate" button does
            await app.bus.call(Message(destination=unique, path=path, interface="org.freedesktop.IBus.Engine",
                                       member="CursorDown"))
        await app.ic("GetEngine")
        assert app.shown.candidate_cursor == 1 and app.shown.preedit == candidates[1]
        app.disconnect()

    run(body())
