"""Suggestions through the real ibus-daemon: while composing they reach the application as a
lookup table without a visible cursor (as ibus-mozc shows predictions); Tab selects the first
one and Return commits it."""

from __future__ import annotations

import asyncio

from e2e_support import eventually, run
from test_e2e_ibus import ready_app, type_text

TAB, RETURN = 0xFF09, 0xFF0D


async def _settled_suggestions(app) -> list[str]:
    """The suggestion list once the last key's own list has arrived: the key's reply shows the
    earlier list's entries that still fit, the new list follows; wait until two looks agree."""
    async def look() -> list[str]:
        await app.ic("GetEngine")   # a round trip through the daemon: late signals are in
        return list(app.shown.candidates)

    async def settled() -> list[str] | None:
        first = await look()
        await asyncio.sleep(0.3)
        return first if first and first == await look() else None

    return await eventually(settled, timeout_s=20, interval_s=0.1)


def test_suggestions_reach_the_lookup_table_and_tab_return_commits_one(ibus_desktop):
    async def body():
        app = await ready_app(ibus_desktop)
        await type_text(app, "arigatou")
        suggestions = await _settled_suggestions(app)
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
