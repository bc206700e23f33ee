"""End to end through a real headless fcitx5 with our C++ addon, built and installed by
`karukan install --user`, forwarding to the engine service on the private session bus."""

from __future__ import annotations

import asyncio
import os
import signal


from e2e_support import engine_pids, eventually, karukan, run, settled_candidates
from karukan_testing.app_clients import FCITX_CAP_PASSWORD, FCITX_CAPS, FcitxApp

SPACE, RETURN = 0x20, 0xFF0D
FCITX_HIGHLIGHT = 1 << 4
FCITX_CAP_SENSITIVE = 1 << 36    # fcitx-utils/capabilityflags.h
FCITX_UNDERLINE = 1 << 3


async def ready_app(desktop, caps: int = FCITX_CAPS) -> FcitxApp:
    app = await FcitxApp.connect(desktop.session_address, caps=caps)
    await app.set_im("karukan")
    if not caps & FCITX_CAP_PASSWORD:   # fcitx5 itself may keep password fields on the keyboard IM
        assert await app.current_im() == "karukan"
    return app


async def reaches_app(app: FcitxApp, keysym: int) -> bool:
    """Press and release; did the application get the key (declined, or forwarded back to it)?"""
    before = len(app.shown.forwarded)
    handled = await app.key(keysym)
    await app.key(keysym, release=True)
    forwarded = [sym for sym, _state, release in app.shown.forwarded[before:] if not release]
    return not handled or keysym in forwarded


async def type_text(app: FcitxApp, text: str) -> None:
    for ch in text:
        assert await app.tap(ord(ch)), ch


def test_fcitx5_starts_the_installed_service_before_the_first_key(fcitx5_desktop):
    """fcitx5 loads the addon at startup (Karukan is in the group); the addon asks D-Bus to start
    the service then, so it is up before anyone types, and the first key is handled."""
    async def body():
        await eventually(lambda: _service_pids(fcitx5_desktop), timeout_s=60, interval_s=0.2)
        app = await ready_app(fcitx5_desktop)
        assert await app.tap(ord("i"))    # held if the service is still starting, never lost
        await eventually(lambda: _shows(app, "い"), timeout_s=60, interval_s=0.1)
        app.disconnect()

    run(body())
    assert engine_pids(fcitx5_desktop, "ime_frontend.service")
    doctor = karukan(fcitx5_desktop, "doctor", check=False)
    assert "[ok] engine service: answers" in doctor.stdout, doctor.stdout
    assert "[ok] fcitx5: running" in doctor.stdout
    assert "fcitx5 addon" in doctor.stdout


async def _service_pids(desktop) -> list[int]:
    return engine_pids(desktop, "ime_frontend.service")


async def _shows(app: FcitxApp, preedit: str) -> bool:
    await app.ic("FocusIn")    # a round trip: views replayed before it are in
    return app.shown.preedit == preedit


def test_type_convert_select_commit(fcitx5_desktop):
    async def body():
        await eventually(lambda: _service_up(fcitx5_desktop), timeout_s=45, interval_s=0.3)
        app = await ready_app(fcitx5_desktop)
        await type_text(app, "kanji")
        assert app.shown.preedit == "かんじ" and app.shown.preedit_cursor == 3
        assert all(flags & FCITX_UNDERLINE for _t, flags in app.shown.preedit_attrs)
        assert await app.tap(SPACE)
        candidates = list(app.shown.candidates)
        assert "漢字" in candidates and app.shown.candidate_cursor == 0
        assert app.shown.preedit_attrs[0] == (candidates[0], FCITX_HIGHLIGHT)
        # What a candidate window click does: select through the frontend.
        await app.ic("SelectCandidate", "i", [1])
        await app.ic("FocusIn")    # a round trip: signals caused by the click are in
        assert candidates[1] in (app.shown.preedit, *app.shown.commits)
        if app.shown.preedit:
            assert await app.tap(RETURN)
        assert app.shown.commits == [candidates[1]]
        app.disconnect()

    run(body())


def test_password_field_never_reaches_the_engine(fcitx5_desktop):
    async def body():
        app = await ready_app(fcitx5_desktop, caps=FCITX_CAPS | FCITX_CAP_PASSWORD)
        unhandled = []
        for ch in "himitsu":
            if not await app.key(ord(ch)):
                unhandled.append(ch)                      # the application types it itself
            await app.key(ord(ch), release=True)
            assert app.shown.preedit == ""
        await app.ic("FocusIn")                           # a round trip: every signal is in
        # Or fcitx5's keyboard IM committed or forwarded it back unchanged.
        forwarded = [chr(sym) for sym, _state, release in app.shown.forwarded if not release]
        received = unhandled + app.shown.commits + forwarded
        assert "".join(received) == "himitsu"
        app.disconnect()

    run(body())


def test_field_turning_sensitive_commits_what_was_typed(fcitx5_desktop):
    """The application marks the focused field as sensitive while something is composed: the
    addon tells the service, which commits the composition unlearned (the text is not lost,
    nothing stays on screen); the next keys pass through, and once the field turns back typing
    converts again. (A Password flag is handled by fcitx5 itself, which switches the input method
    and so sends the engine a focus-out; Sensitive alone switches nothing.)"""
    async def body():
        await eventually(lambda: _service_up(fcitx5_desktop), timeout_s=45, interval_s=0.3)
        app = await ready_app(fcitx5_desktop)
        await type_text(app, "kanji")
        assert app.shown.preedit == "かんじ"
        await app.ic("SetCapability", "t", [FCITX_CAPS | FCITX_CAP_SENSITIVE])
        await eventually(lambda: _committed(app, ["かんじ"]), timeout_s=10, interval_s=0.1)
        assert app.shown.preedit == ""
        assert await reaches_app(app, ord("x"))           # the engine no longer sees keys
        assert app.shown.preedit == ""
        await app.ic("SetCapability", "t", [FCITX_CAPS])
        await type_text(app, "ka")
        assert app.shown.preedit == "か"
        app.disconnect()

    run(body())


async def _committed(app: FcitxApp, commits: list[str]) -> bool:
    await app.ic("FocusIn")    # a round trip: signals sent before it are in
    return app.shown.commits == commits


def test_service_killed_mid_composition_loses_no_key(fcitx5_desktop):
    async def body():
        await eventually(lambda: _service_up(fcitx5_desktop), timeout_s=45, interval_s=0.3)
        app = await ready_app(fcitx5_desktop)
        await type_text(app, "ka")
        # Shown by the service itself (not held for one still starting): it is up.
        await eventually(lambda: _shows(app, "か"), timeout_s=60, interval_s=0.1)
        for pid in engine_pids(fcitx5_desktop, "ime_frontend.service"):
            os.kill(pid, signal.SIGKILL)
        # The addon starts the service again (D-Bus activation) and holds the key meanwhile;
        # the restarted service's fresh context gets the composition the old one died with
        # (its keys again), then the held key: nothing typed is lost (issue 30 item 4).
        assert await app.tap(ord("a"))
        await eventually(lambda: _shows(app, "かあ"), timeout_s=60, interval_s=0.1)
        assert app.shown.commits == [] and not [f for f in app.shown.forwarded if not f[2]]
        assert await app.tap(RETURN)
        assert app.shown.commits == ["かあ"]
        app.disconnect()

    run(body())


def test_slow_service_never_freezes_the_application(fcitx5_desktop):
    async def body():
        await eventually(lambda: _service_up(fcitx5_desktop), timeout_s=45, interval_s=0.3)
        app = await ready_app(fcitx5_desktop)
        await type_text(app, "ka")
        (pid,) = engine_pids(fcitx5_desktop, "ime_frontend.service")
        os.kill(pid, signal.SIGSTOP)                 # a service that does not answer at all
        try:
            reached = [await reaches_app(app, ord(ch)) for ch in "aiu"]   # each bounded by the timeout
        finally:
            os.kill(pid, signal.SIGCONT)
        assert reached == [True, True, True]         # the application got every key
        assert app.shown.preedit == ""               # and no stale composition is shown
        await eventually(lambda: _handled(app))      # and it answers again once it is back
        app.disconnect()

    run(body())


async def _handled(app: FcitxApp) -> bool:
    return await app.tap(ord("i"))


def test_sixteen_concurrent_applications(fcitx5_desktop):
    words = ["kyou", "ashita", "nihongo", "kanji", "tenki", "sakura", "yama", "kawa",
             "umi", "sora", "hoshi", "tsuki", "hana", "kaze", "mizu", "hikari"]

    from karukan_engine.conversion.plain import PlainConverter
    from karukan_engine.session import Session

    expected = []
    for word in words:
        session = Session(PlainConverter())
        for ch in word:
            session.process_key(ord(ch))
        expected.append(session.view.preedit_text)

    async def one(app: FcitxApp, word: str, want: str) -> str:
        for ch in word:
            await app.tap(ord(ch))
        # The last key's preedit signal may come after its reply, more so with 16 clients at once.
        async def shown() -> bool:
            return app.shown.preedit == want
        try:
            await eventually(shown, timeout_s=5)
        except AssertionError:
            pass   # the comparison below names what was shown
        app.disconnect()
        return app.shown.preedit

    async def body():
        await eventually(lambda: _service_up(fcitx5_desktop), timeout_s=45, interval_s=0.3)
        # Switching the input method acts on the most recently focused context, so open the
        # applications one after another; then all of them type at once.
        apps = [await ready_app(fcitx5_desktop) for _ in words]
        return await asyncio.gather(*(one(app, w, e) for app, w, e in zip(apps, words, expected)))

    assert run(body()) == expected


async def _service_up(desktop) -> bool:
    app = await ready_app(desktop)
    ok = await app.tap(ord("a"))
    app.disconnect()
    return ok


def test_focus_out_commits_the_composition_once(fcitx5_desktop):
    async def body():
        await eventually(lambda: _service_up(fcitx5_desktop), timeout_s=45, interval_s=0.3)
        app = await ready_app(fcitx5_desktop)
        await type_text(app, "ka")
        await app.ic("FocusOut")
        await app.ic("FocusIn")
        assert app.shown.commits == ["か"] and app.shown.preedit == ""
        app.disconnect()

    run(body())


def test_suggestions_reach_the_candidate_list_and_tab_return_commits_one(fcitx5_desktop):
    """While composing, the addon shows the service's suggestions as fcitx5's candidate list
    with no cursor; Tab selects the first, which the preedit then shows, and Return commits it."""
    async def body():
        await eventually(lambda: _service_up(fcitx5_desktop), timeout_s=45, interval_s=0.3)
        app = await ready_app(fcitx5_desktop)
        await type_text(app, "arigatou")
        suggestions = await settled_candidates(app, app.current_im)
        assert app.shown.preedit == "ありがとう" and app.shown.candidate_cursor == -1
        assert await app.tap(0xFF09)                      # Tab
        assert app.shown.candidate_cursor == 0 and app.shown.preedit == suggestions[0]
        assert await app.tap(RETURN)
        assert app.shown.commits == [suggestions[0]]
        assert app.shown.preedit == "" and app.shown.candidates == []
        app.disconnect()

    run(body())


def test_each_key_sends_the_application_one_preedit(fcitx5_desktop):
    """A key's release and the late view that brings its suggestion list repeat the preedit's
    text: the addon sends the application its preedit only when it changes (issue 30 item 7)."""
    async def body():
        await eventually(lambda: _service_up(fcitx5_desktop), timeout_s=45, interval_s=0.3)
        app = await ready_app(fcitx5_desktop)
        await eventually(lambda: _shows(app, ""), timeout_s=10, interval_s=0.05)
        app.shown.preedits.clear()   # switching to Karukan cleared the preedit: not a key's
        await type_text(app, "nihongo")
        await settled_candidates(app, app.current_im)   # the suggestion list's late view is in
        assert await app.tap(RETURN)
        await eventually(lambda: _shows(app, ""), timeout_s=10, interval_s=0.05)
        preedits = app.shown.preedits
        assert len(preedits) == len("nihongo") + 1, preedits        # one per key, and Return's
        assert all(a != b for a, b in zip(preedits, preedits[1:])), preedits
        assert preedits[-2] == "にほんご" and preedits[-1] == "" and app.shown.commits == ["にほんご"]
        app.disconnect()

    run(body())


def test_keys_that_keep_the_suggestion_list_do_not_redraw_it(fcitx5_desktop):
    """A key that leaves the list as it was (a pending romaji letter, its BackSpace) gets a reply
    without the list (it was sent once) and the addon leaves fcitx5's candidate window alone;
    the list stays shown, and the preedit follows the keys."""
    async def body():
        await eventually(lambda: _service_up(fcitx5_desktop), timeout_s=45, interval_s=0.3)
        app = await ready_app(fcitx5_desktop)
        await type_text(app, "arigatou")
        suggestions = await settled_candidates(app, app.current_im)
        assert await app.tap(ord("k"))
        assert app.shown.candidates == suggestions and app.shown.preedit == "ありがとうｋ"
        redraws = app.shown.window_updates
        assert await app.tap(0xFF08)                      # BackSpace: the k goes, the list stays
        assert await app.tap(ord("k"))
        assert app.shown.preedit == "ありがとうｋ" and app.shown.candidates == suggestions
        assert app.shown.window_updates == redraws          # the candidate window was left as it was
        assert await app.tap(0xFF09)                      # Tab still enters the list
        assert app.shown.candidate_cursor == 0 and app.shown.preedit == suggestions[0]
        assert app.shown.window_updates > redraws
        assert await app.tap(RETURN)
        assert app.shown.commits == [suggestions[0]]
        app.disconnect()

    run(body())
