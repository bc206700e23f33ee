"""The real IBus panel's candidate window opens under the focused segment (issue 30 item 3).

A GTK3 window types through a private ibus-daemon, and the real panel (ibus-ui-gtk3) draws the
candidate window on the same Xvfb; the test reads where that window is (xdotool). The panel
opens a hidden window where it was last shown, whatever cursor rectangle it holds, and moves a
shown one on each table it gets (ime_frontend/ibus/placement.py): the first Space's window
used to open at the previous window's place (here the second segment's, from the round before).
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

from e2e_support import karukan, live_conversion_off, need
from gtk_support import need_gtk, ready_in
from karukan_testing.gtk_client import GtkClient
from karukan_testing.headless import HeadlessDesktop
from test_e2e_gtk_ibus import select_karukan

PANEL = Path("/usr/libexec/ibus-ui-gtk3")


@pytest.fixture(scope="module")
def gtk_with_real_panel():
    need("ibus-daemon", "dbus-daemon", "ibus", "xdotool")
    need_gtk("ibus")
    if not PANEL.exists():
        pytest.skip(f"{PANEL} is not installed (the ibus package has it)")
    with HeadlessDesktop() as desktop:
        live_conversion_off(desktop)
        # Only the client's report releases a held table: a loaded machine must not turn the
        # order into a race against the bound.
        desktop.env["KARUKAN_IBUS_CURSOR_WAIT_MS"] = "600000"
        desktop.start_session_bus()
        desktop.start_xvfb()
        karukan(desktop, "install", "--user", "--no-fcitx5", "--no-model")
        desktop.start_ibus([Path(desktop.env["XDG_DATA_HOME"]) / "ibus/component"])
        panel = desktop.spawn("ibus-ui-gtk3", [str(PANEL)], env=dict(
            desktop.env, GSETTINGS_BACKEND="memory", NO_AT_BRIDGE="1", GDK_BACKEND="x11"))
        panel_owns_its_name(desktop)   # as on a desktop: the panel is up before the application
        gtk = GtkClient(desktop, "ibus")
        gtk.focus("text")
        select_karukan(desktop)
        ready_in(gtk)
        try:
            yield gtk, panel.pid
        finally:
            gtk.close()


def panel_owns_its_name(desktop: HeadlessDesktop) -> None:
    """Wait until ibus-ui-gtk3 owns org.freedesktop.IBus.Panel on ibus-daemon's bus: a panel
    that connects after the application focused its field has not seen that focus."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        reply = subprocess.run(
            ["dbus-send", f"--bus={desktop.ibus_address}", "--print-reply", "--dest=org.freedesktop.DBus",
             "/org/freedesktop/DBus", "org.freedesktop.DBus.NameHasOwner", "string:org.freedesktop.IBus.Panel"],
            env=desktop.env, capture_output=True, text=True, timeout=30)
        if "boolean true" in reply.stdout:
            return
        time.sleep(0.1)
    raise AssertionError("ibus-ui-gtk3 did not connect to ibus-daemon")


def panel_windows(gtk: GtkClient, pid: int) -> list[tuple[int, int]]:
    """Where the panel's visible windows are (root coordinates of their top-left corners)."""
    found = subprocess.run(["xdotool", "search", "--onlyvisible", "--pid", str(pid), "."], env=gtk.env,
                           capture_output=True, text=True, timeout=60).stdout.split()
    places = []
    for window in found:
        geometry = subprocess.run(["xdotool", "getwindowgeometry", "--shell", window], env=gtk.env,
                                  capture_output=True, text=True, timeout=60).stdout
        values = dict(line.split("=", 1) for line in geometry.split() if "=" in line)
        if "X" in values:
            places.append((int(values["X"]), int(values["Y"])))
    return places


def window_at(gtk: GtkClient, pid: int, place: tuple[int, int], what: str) -> None:
    deadline = time.monotonic() + 20
    while place not in (seen := panel_windows(gtk, pid)):
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: the candidate window is at {seen}, not at {place}")
        time.sleep(0.1)


def test_the_first_space_opens_the_candidate_window_under_the_focused_segment(gtk_with_real_panel):
    gtk, pid = gtk_with_real_panel
    gtk.focus("text")
    for round_ in range(2):   # the second round opens the window after it was shown elsewhere
        gtk.type("aa")        # a committed prefix: the preedit starts off the edge
        gtk.keys("Return")
        gtk.wait_for(lambda s: s["text"].endswith("ああ") and not s["preedit"], what="ああ committed")
        gtk.type("watashinonamae")
        gtk.wait_for(lambda s: s["preedit"] == "わたしのなまえ", what="the kana preedit")
        gtk.keys("space")
        state = gtk.wait_for(lambda s: s["preedit"] == "私の名前" and s, what="the conversion")
        x, y, _w, height = state["insert"]           # where the preedit starts
        window_at(gtk, pid, (x + state["advance"][0], y + height), f"round {round_}, Space")
        gtk.keys("Right")
        window_at(gtk, pid, (x + state["advance"][2], y + height), f"round {round_}, Right")
        gtk.keys("Return")
        gtk.wait_for(lambda s: s["text"].endswith("私の名前") and not s["preedit"], what="the commit")
