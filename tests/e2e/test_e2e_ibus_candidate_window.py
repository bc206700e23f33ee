"""The candidate window through the real ibus-daemon: a vertical lookup table by default, each
candidate's annotation after it in grey, the page indicator and the suggestion list's hint in
the auxiliary text (as ibus-mozc shows them)."""

from __future__ import annotations

import re

from e2e_support import run, settled_candidates
from test_e2e_ibus import ready_app, type_text

from ime_frontend.ibus import gvariant as gv
from ime_frontend.ibus.render import ANNOTATION_FOREGROUND
from karukan_engine.session.view import SUGGESTION_HINT

SPACE, TAB, ESCAPE, PAGE_DOWN = 0x20, 0xFF09, 0xFF1B, 0xFF56


def test_candidates_are_vertical_annotated_and_counted(ibus_desktop):
    async def body():
        app = await ready_app(ibus_desktop)
        await type_text(app, "kanji")
        assert await app.tap(SPACE)
        assert app.shown.candidate_layout == gv.Orientation.VERTICAL
        first = re.fullmatch(r"\[1/(\d+)\]", app.shown.aux)
        assert first, app.shown.aux
        total = int(first.group(1))
        assert await app.tap(SPACE)                              # the next candidate
        assert app.shown.aux == f"[2/{total}]"
        for _page in range(5):                                   # page to the katakana form
            shown = dict(zip(app.shown.candidates, app.shown.candidate_attrs))
            if "カンジ [全]カタカナ" in shown:
                break
            assert await app.tap(PAGE_DOWN)
        grey = gv.Attribute(gv.AttrType.FOREGROUND, ANNOTATION_FOREGROUND, 4, 11)
        assert shown.get("カンジ [全]カタカナ") == (grey,), app.shown.candidates
        assert re.fullmatch(rf"\[\d+/{total}\]", app.shown.aux), app.shown.aux
        assert await app.tap(ESCAPE) and await app.tap(ESCAPE)
        app.disconnect()

    run(body())


def test_the_suggestion_list_shows_how_to_enter_it(ibus_desktop):
    async def body():
        app = await ready_app(ibus_desktop)
        await type_text(app, "arigatou")
        suggestions = await settled_candidates(app, lambda: app.ic("GetEngine"))
        assert app.shown.candidate_cursor == -1 and app.shown.aux == SUGGESTION_HINT
        assert app.shown.candidate_layout == gv.Orientation.VERTICAL
        assert await app.tap(TAB)
        assert app.shown.candidate_cursor == 0 and app.shown.aux == f"[1/{len(suggestions)}]"
        assert await app.tap(ESCAPE) and await app.tap(ESCAPE)
        app.disconnect()

    run(body())
