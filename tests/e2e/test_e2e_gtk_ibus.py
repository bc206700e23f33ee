"""A real GTK3 application through IBus (issue 14): the ibus GTK im-module, keys through XTEST.

The application (karukan_testing/gtk_app.py) runs on a private Xvfb with GTK_IM_MODULE=ibus,
talking to a private ibus-daemon; our engine is the component `karukan install --user` wrote.
A stand-in panel (karukan_testing/panel_probe.py) records what ibus-daemon tells the panel, so
the cursor rectangle the candidate window is placed at can be checked against where the
application drew the focused segment (item 3).
"""

from __future__ import annotations

import asyncio
import subprocess
import time
from pathlib import Path

import pytest

from e2e_support import karukan, live_conversion_off, need, start_ibus_forwarding_to_a_gated_service
from gtk_support import (SENTENCE_KEYS, WORD, commit_later_word_without_secret, held_then_converted,
                         need_gtk, raw_romaji_seen, ready_in, type_word)
from karukan_testing.gtk_client import GtkClient
from karukan_testing.headless import HeadlessDesktop
from karukan_testing.panel_probe import PanelProbe



def select_karukan(desktop: HeadlessDesktop) -> None:
    """`ibus engine karukan` until the daemon reports it (the first call may time out while the
    engine process starts on a loaded machine)."""
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        subprocess.run(["ibus", "engine", "karukan"], env=desktop.env, capture_output=True, timeout=60)
        now = subprocess.run(["ibus", "engine"], env=desktop.env, capture_output=True, text=True, timeout=60)
        if now.stdout.strip() == "karukan":
            return
        time.sleep(0.1)
    raise AssertionError("ibus-daemon never selected karukan")


class Panel:
    """The panel probe on its own event loop thread, so the blocking GTK driver can run."""

    def __init__(self, address: str) -> None:
        import threading

        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.probe: PanelProbe = asyncio.run_coroutine_threadsafe(PanelProbe.attach(address), self.loop).result(60)

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.probe.disconnect)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)


@pytest.fixture(scope="module")
def gtk_ibus():
    need("ibus-daemon", "dbus-daemon", "ibus")
    need_gtk("ibus")
    with HeadlessDesktop() as desktop:
        live_conversion_off(desktop)
        # Only the client's report may release a held table here: this checks the order, and
        # a loaded machine must not turn it into a race against the bound.
        desktop.env["KARUKAN_IBUS_CURSOR_WAIT_MS"] = "600000"
        desktop.start_session_bus()
        desktop.start_xvfb()
        karukan(desktop, "install", "--user", "--no-fcitx5", "--no-model")
        desktop.start_ibus([Path(desktop.env["XDG_DATA_HOME"]) / "ibus/component"])
        panel = Panel(desktop.ibus_address)
        gtk = GtkClient(desktop, "ibus")
        gtk.focus("text")
        select_karukan(desktop)
        ready_in(gtk)
        try:
            yield desktop, gtk, panel.probe
        finally:
            gtk.close()
            panel.close()


def test_romaji_space_return_commits_kanji_in_the_text_view(gtk_ibus):
    _desktop, gtk, _probe = gtk_ibus
    gtk.focus("text")
    state = type_word(gtk)
    assert state["text"].endswith(WORD)
    assert not raw_romaji_seen(state["history"])


def _placed(probe: PanelProbe, first_candidate: str):
    shown = probe.shown_table
    return shown if shown and shown.candidates[:1] == [first_candidate] else None


def test_the_candidate_window_is_placed_under_the_focused_segment(gtk_ibus):
    """Item 3: the rectangle the panel holds when each table arrives is the one under the
    focused segment, after Space and after → (it used to be the previous caret's)."""
    _desktop, gtk, probe = gtk_ibus
    gtk.focus("text")
    gtk.type("aa")                                  # a committed prefix: the preedit starts off the edge
    gtk.keys("Return")
    gtk.wait_for(lambda s: s["text"].endswith("ああ") and not s["preedit"], what="ああ committed")
    gtk.type("watashinonamae")
    gtk.wait_for(lambda s: s["preedit"] == "わたしのなまえ", what="the kana preedit")
    gtk.keys("space")
    state = gtk.wait_for(lambda s: s["preedit"] == "私の名前" and s, what="the conversion")
    placed = _wait(lambda: _placed(probe, "私の"), "the first segment's table")
    start_x, y = state["insert"][0], state["insert"][1]
    assert placed.rect is not None and abs(placed.rect[0] - (start_x + state["advance"][0])) <= 1, (placed, state)
    assert abs(placed.rect[1] - y) <= 1
    gtk.keys("Right")
    state = gtk.wait_for(lambda s: s["preedit"] == "私の名前" and s, what="still converting")
    placed = _wait(lambda: _placed(probe, "名前"), "the second segment's table")
    assert abs(placed.rect[0] - (start_x + state["advance"][2])) <= 1, (placed, state)
    gtk.keys("Left")
    placed = _wait(lambda: _placed(probe, "私の"), "the first segment's table again")
    assert abs(placed.rect[0] - (start_x + state["advance"][0])) <= 1, (placed, state)
    gtk.keys("Return")
    gtk.wait_for(lambda s: s["text"].endswith("ああ私の名前"), what="the sentence committed")


def _wait(value, what: str, timeout_s: float = 60.0):
    deadline = time.monotonic() + timeout_s
    while True:
        got = value()
        if got:
            return got
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not reached in time: {what}")
        time.sleep(0.05)


def test_the_password_entry_gets_raw_characters_and_nothing_is_learned(gtk_ibus):
    desktop, gtk, _probe = gtk_ibus
    gtk.focus("password")
    gtk.type("himitsu")
    gtk.wait_for(lambda s: s["password"] == "himitsu", what="the raw password")
    assert gtk.state()["preedit"] == ""
    # A word typed afterwards is learned and saved: the history then exists, without the password.
    gtk.focus("text")
    commit_later_word_without_secret(gtk, desktop, ("himitsu", "ひみつ", "秘密"))


# --- a cold start -----------------------------------------------------------------------------

@pytest.fixture(scope="module")
def cold_gtk_ibus():
    """The forwarding engine (--backend service): the engine service starts by D-Bus activation,
    kept starting by a test-only gate until the application has typed a whole sentence."""
    need("ibus-daemon", "dbus-daemon", "ibus")
    need_gtk("ibus")
    with HeadlessDesktop() as desktop:
        live_conversion_off(desktop)
        desktop.start_xvfb()
        start_ibus_forwarding_to_a_gated_service(desktop)
        gtk = GtkClient(desktop, "ibus")
        gtk.focus("text")
        select_karukan(desktop)
        try:
            yield desktop, gtk
        finally:
            gtk.close()


def test_keys_typed_while_the_engine_service_starts_arrive_converted(cold_gtk_ibus):
    from e2e_support import engine_pids

    desktop, gtk = cold_gtk_ibus
    gtk.type(SENTENCE_KEYS)
    gtk.keys("space", "Return")
    _wait(lambda: engine_pids(desktop, "ime_frontend.service"), "the engine service to be starting")
    held_then_converted(gtk, desktop.root / "engine-may-start")


@pytest.fixture(scope="module")
def cold_inprocess_gtk_ibus():
    """The installed in-process engine, its converter kept from loading by a test-only gate
    (KARUKAN_TEST_CORE_GATE, inherited through ibus-daemon) until the app has typed a sentence."""
    need("ibus-daemon", "dbus-daemon", "ibus")
    need_gtk("ibus")
    with HeadlessDesktop() as desktop:
        live_conversion_off(desktop)
        desktop.env["KARUKAN_TEST_CORE_GATE"] = str(desktop.root / "converter-may-load")
        desktop.start_session_bus()
        desktop.start_xvfb()
        karukan(desktop, "install", "--user", "--no-fcitx5", "--no-model")
        desktop.start_ibus([Path(desktop.env["XDG_DATA_HOME"]) / "ibus/component"])
        gtk = GtkClient(desktop, "ibus")
        gtk.focus("text")
        # ibus-daemon passes keys to the app raw until CreateEngine answers: the engine must
        # answer while its converter is still loading (it used to wait for it).
        try:
            select_karukan(desktop)
            yield desktop, gtk
        finally:
            gtk.close()
            (desktop.root / "converter-may-load").touch()   # a gated engine could not stop


def test_keys_typed_while_the_engine_loads_its_converter_arrive_converted(cold_inprocess_gtk_ibus):
    desktop, gtk = cold_inprocess_gtk_ibus
    gtk.type(SENTENCE_KEYS)
    gtk.keys("space", "Return")
    held_then_converted(gtk, desktop.root / "converter-may-load")
