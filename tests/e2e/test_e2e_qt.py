"""A real Qt 5 application through IBus and through fcitx5 (issue 14), keys through XTEST.

The application (karukan_testing/qt_app.py: a QTextEdit and a password QLineEdit) runs on a
private Xvfb with QT_IM_MODULE=ibus (Qt 5's own IBus support) or fcitx (fcitx5-frontend-qt5).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from e2e_support import karukan, live_conversion_off, need
from gtk_support import WORD, raw_romaji_seen, ready_in, type_word
from karukan_testing.gtk_client import QtClient, qt_missing
from karukan_testing.headless import HeadlessDesktop
from test_e2e_gtk_fcitx5 import FCITX5_ADDONS, need_fcitx5, select_karukan as select_fcitx5_karukan
from test_e2e_gtk_ibus import Panel, _placed, _wait, select_karukan as select_ibus_karukan


def need_qt(im_module: str) -> None:
    missing = qt_missing(im_module)
    if missing:
        pytest.skip(f"{missing} (./dev.sh test installs it)")


@pytest.fixture(scope="module", params=["ibus", "fcitx5"])
def qt(request):
    return request.getfixturevalue(f"qt_{request.param}")


@pytest.fixture(scope="module")
def qt_ibus():
    yield from _qt_desktop("ibus")


@pytest.fixture(scope="module")
def qt_fcitx5():
    yield from _qt_desktop("fcitx5")


def _qt_desktop(framework: str):
    if framework == "ibus":
        need("ibus-daemon", "dbus-daemon", "ibus")
    else:
        need_fcitx5()
    need_qt("ibus" if framework == "ibus" else "fcitx")
    with HeadlessDesktop() as desktop:
        live_conversion_off(desktop)
        desktop.env["KARUKAN_IBUS_CURSOR_WAIT_MS"] = "600000"   # only the client's report releases a table
        desktop.start_session_bus()
        desktop.start_xvfb()
        if framework == "ibus":
            karukan(desktop, "install", "--user", "--no-fcitx5", "--no-model")
            desktop.start_ibus([Path(desktop.env["XDG_DATA_HOME"]) / "ibus/component"])
            panel = Panel(desktop.ibus_address)
        else:
            panel = None
            karukan(desktop, "install", "--user", "--no-ibus", "--no-model")
            desktop.start_fcitx5(["keyboard-us", "karukan"], FCITX5_ADDONS,
                                 extra_env={"KARUKAN_FCITX5_STARTUP_MS": "120000"})
        app = QtClient(desktop, "ibus" if framework == "ibus" else "fcitx", name=f"qt-{framework}")
        app.focus("text")
        (select_ibus_karukan if framework == "ibus" else select_fcitx5_karukan)(desktop)
        ready_in(app)
        try:
            yield framework, desktop, app, panel
        finally:
            app.close()
            if panel is not None:
                panel.close()


def test_romaji_space_return_commits_kanji_in_the_text_edit(qt):
    _framework, _desktop, app, _panel = qt
    app.focus("text")
    state = type_word(app)
    assert state["text"].endswith(WORD)
    assert not raw_romaji_seen(state["history"])


def test_the_password_line_edit_gets_raw_characters(qt):
    framework, desktop, app, _panel = qt
    app.focus("password")
    app.type("himitsu")
    app.wait_for(lambda s: s["password"] == "himitsu", what="the raw password")
    app.focus("text")
    if framework == "fcitx5":
        select_fcitx5_karukan(desktop)   # fcitx5 keeps a password field on the keyboard IM
    state = type_word(app)               # and typing converts again in the text field
    assert state["text"].endswith(WORD)


def test_the_ibus_candidate_window_follows_the_focused_segment(qt_ibus):
    """Item 3 in Qt: each table is placed at the rectangle Qt reported after drawing the new
    preedit, so → moves the window right (it used to stay at the previous segment)."""
    _framework, _desktop, app, panel = qt_ibus
    probe = panel.probe
    app.focus("text")
    app.type("watashinonamae")
    app.wait_for(lambda s: s["preedit"] == "わたしのなまえ", what="the kana preedit")
    app.keys("space")
    first = _wait(lambda: _placed(probe, "私の"), "the first segment's table")
    app.keys("Right")
    second = _wait(lambda: _placed(probe, "名前"), "the second segment's table")
    assert first.rect is not None and second.rect is not None
    assert second.rect[0] > first.rect[0] and second.rect[1] == first.rect[1], (first, second)
    assert second.rect == probe.rect          # where Qt says the focused segment is drawn now
    app.keys("Return")
    app.wait_for(lambda s: s["text"].endswith("私の名前") and not s["preedit"], what="the commit")
