"""The rewriters through a real headless fcitx5 and our addon (rewriter_e2e.py)."""

from __future__ import annotations

from datetime import date

from e2e_support import run
from rewriter_e2e import convert_and_commit, shows
from test_e2e_fcitx5 import ready_app
from test_e2e_fcitx5_candidate_window import service_answers


def test_fcitx5_neko_commits_the_cat_emoji_and_kyou_todays_date(fcitx5_desktop):
    async def body():
        await service_answers(fcitx5_desktop)
        app = await ready_app(fcitx5_desktop)
        pages = await convert_and_commit(app, "neko", "🐱")
        assert shows(pages[0], "🐱", "絵文字")
        today = f"{date.today():%Y/%m/%d}"
        pages = await convert_and_commit(app, "kyou", today)
        assert not pages[0][0].startswith(today) and shows(pages[0], today)
        app.disconnect()

    run(body())
