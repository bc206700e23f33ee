"""A real GTK3 application through fcitx5 (issue 14): the fcitx GTK im-module, keys through XTEST.

The application (karukan_testing/gtk_app.py) runs on a private Xvfb with GTK_IM_MODULE=fcitx,
talking to a private fcitx5 that loads the C++ addon `karukan install --user` built; the addon
forwards to the engine service, started by D-Bus activation.
"""

from __future__ import annotations

import subprocess
import time

import pytest

from e2e_support import engine_pids, karukan, live_conversion_off, need_fcitx5_addon
from gtk_support import (SENTENCE_KEYS, WORD, commit_later_word_without_secret, held_then_converted,
                         need_gtk, raw_romaji_seen, ready_in, type_word)
from karukan_testing.gtk_client import GtkClient
from karukan_testing.headless import HeadlessDesktop

FCITX5_ADDONS = ["dbus", "dbusfrontend", "keyboard", "karukan"]


def need_fcitx5() -> None:
    need_fcitx5_addon()
    need_gtk("fcitx")


def select_karukan(desktop: HeadlessDesktop) -> None:
    """Switch the focused context (the GTK TextView) to Karukan, as the trigger key would."""
    def call(member: str, *args: str) -> str:
        return subprocess.run(["dbus-send", "--session", "--print-reply", "--dest=org.fcitx.Fcitx5", "/controller",
                               f"org.fcitx.Fcitx.Controller1.{member}", *args], env=desktop.env,
                              capture_output=True, text=True, timeout=60).stdout

    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        call("SetCurrentIM", "string:karukan")
        if '"karukan"' in call("CurrentInputMethod"):
            return
        time.sleep(0.1)
    raise AssertionError("fcitx5 never switched the TextView to karukan")


def gtk_desktop(desktop: HeadlessDesktop, extra_env: dict[str, str]) -> GtkClient:
    live_conversion_off(desktop)
    desktop.start_session_bus()    # activated services inherit its environment (a gate included)
    desktop.start_xvfb()
    karukan(desktop, "install", "--user", "--no-ibus", "--no-model")
    desktop.start_fcitx5(["keyboard-us", "karukan"], FCITX5_ADDONS, extra_env=extra_env)
    gtk = GtkClient(desktop, "fcitx")
    gtk.focus("text")
    select_karukan(desktop)
    return gtk


@pytest.fixture(scope="module")
def gtk_fcitx5():
    need_fcitx5()
    with HeadlessDesktop() as desktop:
        gtk = gtk_desktop(desktop, {"KARUKAN_FCITX5_STARTUP_MS": "120000"})
        ready_in(gtk)
        try:
            yield desktop, gtk
        finally:
            gtk.close()


def test_romaji_space_return_commits_kanji_in_the_text_view(gtk_fcitx5):
    _desktop, gtk = gtk_fcitx5
    gtk.focus("text")
    state = type_word(gtk)
    assert state["text"].endswith(WORD)
    assert not raw_romaji_seen(state["history"])


def test_the_password_entry_gets_raw_characters_and_nothing_is_learned(gtk_fcitx5):
    desktop, gtk = gtk_fcitx5
    gtk.focus("password")
    gtk.type("himitsu")
    gtk.wait_for(lambda s: s["password"] == "himitsu", what="the raw password")
    gtk.focus("text")
    select_karukan(desktop)      # fcitx5 keeps a password field on the keyboard IM; back to Karukan
    commit_later_word_without_secret(gtk, desktop, ("himitsu", "ひみつ", "秘密"))


@pytest.fixture(scope="module")
def cold_gtk_fcitx5():
    """fcitx5 asks D-Bus to start the service when it loads the addon; a test-only gate
    (KARUKAN_TEST_START_GATE) keeps the service starting until the app has typed a sentence."""
    need_fcitx5()
    with HeadlessDesktop() as desktop:
        desktop.env["KARUKAN_TEST_START_GATE"] = str(desktop.root / "engine-may-start")
        # A startup budget far beyond the gate's life: this is about holding, not falling back.
        gtk = gtk_desktop(desktop, {"KARUKAN_FCITX5_STARTUP_MS": "300000"})
        try:
            yield desktop, gtk
        finally:
            gtk.close()


def test_keys_typed_while_the_engine_service_starts_arrive_converted(cold_gtk_fcitx5):
    desktop, gtk = cold_gtk_fcitx5
    assert engine_pids(desktop, "ime_frontend.service"), "the addon did not start the service"
    gtk.type(SENTENCE_KEYS)
    gtk.keys("space", "Return")
    held_then_converted(gtk, desktop.root / "engine-may-start")
