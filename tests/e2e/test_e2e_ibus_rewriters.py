"""The rewriters through the real ibus-daemon (rewriter_e2e.py)."""

from __future__ import annotations

from datetime import date

from e2e_support import run
from rewriter_e2e import convert_and_commit, shows
from test_e2e_ibus import ready_app


def test_ibus_neko_commits_the_cat_emoji_and_kyou_todays_date(ibus_desktop):
    async def body():
        app = await ready_app(ibus_desktop)
        pages = await convert_and_commit(app, "neko", "🐱")
        assert shows(pages[0], "🐱", "絵文字")                            # on the first page
        today = f"{date.today():%Y/%m/%d}"
        pages = await convert_and_commit(app, "kyou", today)
        assert not pages[0][0].startswith(today) and shows(pages[0], today)  # never first, but on the first page
        app.disconnect()

    run(body())
