"""Suggestions through the real ibus-daemon: while composing they reach the application as a
lookup table without a visible cursor (as ibus-mozc shows predictions); Tab selects the first
one and Return commits it."""

from __future__ import annotations

from e2e_support import run, settled_candidates
from test_e2e_ibus import ready_app, type_text

TAB, RETURN = 0xFF09, 0xFF0D


def test_suggestions_reach_the_lookup_table_and_tab_return_commits_one(ibus_desktop):
    async def body():
        app = await ready_app(ibus_desktop)
        await type_text(app, "arigatou")
        suggestions = await settled_candidates(app, lambda: app.ic("GetEngine"))
        assert app.shown.preedit == "ありがとう"              # typing is untouched
        assert app.shown.candidate_cursor == -1               # shown, nothing selected
        assert all(s.startswith("ありがとう") or s.startswith("有難う") for s in suggestions), suggestions
        assert await app.tap(TAB)
        assert app.shown.candidate_cursor == 0 and app.shown.preedit == suggestions[0]
        assert await app.tap(RETURN)
        assert app.shown.commits == [suggestions[0]]
        assert app.shown.preedit == "" and app.shown.candidates == []
        app.disconnect()

    run(body())


def test_keys_that_keep_the_suggestion_list_do_not_resend_it(ibus_desktop):
    """A pending romaji letter and its BackSpace leave the list as it was: the engine sends no
    lookup table for them (ibus-daemon and its panel redraw every table they get)."""
    async def body():
        app = await ready_app(ibus_desktop)
        await type_text(app, "arigatou")
        suggestions = await settled_candidates(app, lambda: app.ic("GetEngine"))
        redraws = app.shown.window_updates
        for key in (ord("k"), 0xFF08, ord("k")):        # k, BackSpace, k
            assert await app.tap(key)
        assert app.shown.preedit == "ありがとうｋ" and app.shown.candidates == suggestions
        assert app.shown.window_updates == redraws
        assert await app.tap(TAB)                        # entering the list does redraw it
        assert app.shown.candidate_cursor == 0 and app.shown.window_updates > redraws
        app.disconnect()

    run(body())
