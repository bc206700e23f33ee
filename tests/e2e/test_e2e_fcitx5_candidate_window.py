"""The candidate window through a real headless fcitx5 with our addon: vertical by default (the
[ui] candidate_layout setting, read from the engine service, makes it horizontal), each
candidate's annotation beside it, the page indicator and the suggestion list's hint."""

from __future__ import annotations

import os
import re
import signal
from pathlib import Path

from e2e_support import engine_pids, eventually, run, settled_candidates
from test_e2e_fcitx5 import _shows, ready_app, type_text

from karukan_engine.session.view import SUGGESTION_HINT

SPACE, TAB, ESCAPE, PAGE_DOWN = 0x20, 0xFF09, 0xFF1B, 0xFF56
# fcitx5's CandidateLayoutHint, as its D-Bus frontend sends it.
LAYOUT_VERTICAL, LAYOUT_HORIZONTAL = 1, 2


async def service_answers(desktop) -> None:
    """Until the engine service itself answers (a key typed while it starts is held, and
    reported as handled, before the service has seen it)."""
    app = await ready_app(desktop)
    assert await app.tap(ord("a"))
    await eventually(lambda: _shows(app, "あ"), timeout_s=60, interval_s=0.1)
    assert await app.tap(ESCAPE)
    app.disconnect()


async def annotated_katakana(app) -> tuple[str, str]:
    """Space on かんじ, then page until the list shows the katakana form with its annotation;
    (that candidate's text, the footer shown with the page it is on)."""
    await type_text(app, "kanji")
    assert await app.tap(SPACE)
    for _page in range(5):
        found = [c for c in app.shown.candidates if c.startswith("カンジ")]
        if found:
            return found[0], app.shown.aux_down
        assert await app.tap(PAGE_DOWN)
    raise AssertionError(f"no カンジ in the list: {app.shown.candidates}")


def test_candidates_are_vertical_annotated_and_counted(fcitx5_desktop):
    async def body():
        await service_answers(fcitx5_desktop)
        app = await ready_app(fcitx5_desktop)
        await type_text(app, "kanji")
        assert await app.tap(SPACE)
        assert app.shown.candidate_layout == LAYOUT_VERTICAL
        first = re.fullmatch(r"\[1/(\d+)\]", app.shown.aux_down)
        assert first, app.shown.aux_down
        total = int(first.group(1))
        assert total > len(app.shown.candidates)                 # more than one page
        assert await app.tap(SPACE)                              # the next candidate
        assert app.shown.aux_down == f"[2/{total}]"
        assert await app.tap(ESCAPE) and await app.tap(ESCAPE)
        text, footer = await annotated_katakana(app)
        assert text == "カンジ [全]カタカナ"                      # the annotation beside it
        assert re.fullmatch(rf"\[\d+/{total}\]", footer), footer
        assert await app.tap(ESCAPE) and await app.tap(ESCAPE)
        app.disconnect()

    run(body())


def test_the_suggestion_list_shows_how_to_enter_it(fcitx5_desktop):
    async def body():
        await service_answers(fcitx5_desktop)
        app = await ready_app(fcitx5_desktop)
        await type_text(app, "arigatou")
        suggestions = await settled_candidates(app, app.current_im)
        assert app.shown.candidate_cursor == -1 and app.shown.aux_down == SUGGESTION_HINT
        assert app.shown.candidate_layout == LAYOUT_VERTICAL
        assert await app.tap(TAB)
        assert app.shown.candidate_cursor == 0 and app.shown.aux_down == f"[1/{len(suggestions)}]"
        assert await app.tap(ESCAPE) and await app.tap(ESCAPE)
        app.disconnect()

    run(body())


def test_a_horizontal_setting_reaches_the_addon_when_the_service_starts(fcitx5_desktop):
    config = Path(fcitx5_desktop.env["XDG_CONFIG_HOME"]) / "karukan/config.toml"
    before = config.read_text(encoding="utf-8")

    async def restarted_with(text: str) -> None:
        config.write_text(text, encoding="utf-8")
        for pid in engine_pids(fcitx5_desktop, "ime_frontend.service"):
            os.kill(pid, signal.SIGKILL)
        await service_answers(fcitx5_desktop)       # started again for the held key

    async def body():
        await service_answers(fcitx5_desktop)
        await restarted_with(before + '\n[ui]\ncandidate_layout = "horizontal"\n')
        try:
            app = await ready_app(fcitx5_desktop)
            text, _footer = await annotated_katakana(app)
            assert app.shown.candidate_layout == LAYOUT_HORIZONTAL
            assert text == "カンジ [全]カタカナ"
            assert await app.tap(ESCAPE) and await app.tap(ESCAPE)
            app.disconnect()
        finally:
            await restarted_with(before)

    run(body())
