"""Helpers shared by the real-GTK-application end-to-end tests (IBus and fcitx5)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from karukan_testing.gtk_client import GtkClient, gtk_missing, im_module_missing
from karukan_testing.headless import HeadlessDesktop

WORD_KEYS, WORD_KANA, WORD = "nihongo", "にほんご", "日本語"
SENTENCE_KEYS, SENTENCE = "kyouhaiitenkidesune", "今日はいい天気ですね"


def need_gtk(im_module: str) -> None:
    """Skip (a developer machine without the packages; ./dev.sh test installs them in CI)."""
    missing = gtk_missing() or im_module_missing(im_module)
    if missing:
        pytest.skip(f"{missing} (./dev.sh test installs it)")


def ready_in(gtk: GtkClient) -> None:
    """Wait until the input method answers in the TextView: 'a' shows あ, Escape drops it."""
    gtk.type("a")
    gtk.wait_for(lambda s: s["preedit"] == "あ", timeout_s=120, what="the engine to show あ")
    gtk.keys("Escape")
    gtk.wait_for(lambda s: s["preedit"] == "", what="the preedit to clear")


def type_word(gtk: GtkClient) -> dict:
    """nihongo, Space, Return in the TextView; the app's state once 日本語 is committed."""
    before = gtk.state()["text"]
    gtk.type(WORD_KEYS)
    gtk.wait_for(lambda s: s["preedit"] == WORD_KANA, what="the kana in the preedit")
    gtk.keys("space")
    gtk.wait_for(lambda s: s["preedit"] == WORD, what="the conversion in the preedit")
    gtk.keys("Return")
    return gtk.wait_for(lambda s: s["text"] == before + WORD and not s["preedit"] and s, what="the commit")


def raw_romaji_seen(history: list[str]) -> list[str]:
    """Every buffer state that held ASCII letters: keys the input method let through raw."""
    return [text for text in history if any(c.isascii() and c.isalpha() for c in text)]


def learning_text(desktop: HeadlessDesktop) -> str:
    path = Path(desktop.env["XDG_DATA_HOME"]) / "karukan/learning.json"
    try:
        return json.dumps(json.loads(path.read_text(encoding="utf-8")), ensure_ascii=False)
    except (OSError, ValueError):
        return ""


def wait_learned(desktop: HeadlessDesktop, word: str, timeout_s: float = 90.0) -> str:
    """The learning history once it has been saved with word in it (saves follow 2 s of quiet)."""
    deadline = time.monotonic() + timeout_s
    while True:
        text = learning_text(desktop)
        if word in text:
            return text
        if time.monotonic() > deadline:
            raise AssertionError(f"{word} was never saved to the learning history: {text[:200]!r}")
        time.sleep(0.1)


def commit_later_word_without_secret(gtk: GtkClient, desktop: HeadlessDesktop, secret: tuple[str, ...]) -> None:
    """Type and commit きょう in the TextView (focused, on Karukan), wait until the history with it
    is saved, and check no form of the password typed before is in it."""
    gtk.type("kyou")
    gtk.wait_for(lambda s: s["preedit"] == "きょう", what="きょう")
    gtk.keys("space", "Return")
    gtk.wait_for(lambda s: not s["preedit"] and s["text"].endswith(("今日", "京", "強")), what="a commit")
    saved = wait_learned(desktop, "きょう")
    assert not any(form in saved for form in secret)


def held_then_converted(gtk: GtkClient, gate: Path) -> None:
    """After SENTENCE_KEYS + Space + Return typed while the engine is gated: nothing reached the
    app (held, not passed through); once the gate opens, the sentence arrives converted."""
    state = gtk.state()
    assert state["text"] == "" and not raw_romaji_seen(state["history"]), state
    gate.touch()
    state = gtk.wait_for(lambda s: s["text"] and not s["preedit"] and s, timeout_s=120, what="the commit")
    assert state["text"] == SENTENCE, state
    assert not raw_romaji_seen(state["history"]), state["history"]
