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
