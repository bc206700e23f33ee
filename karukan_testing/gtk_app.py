"""A real GTK3 application for the end-to-end tests: a TextView and a password Entry.

Run with the system Python (python3-gi and GTK 3 are Debian packages, not in the venv):
    python3 -m karukan_testing.gtk_app
The toolkit's own im-module does the input method work (GTK_IM_MODULE=ibus or fcitx), exactly
as in any desktop application; keys come from the X server (XTEST). The test drives the app
with one command per stdin line and reads one JSON object per stdout line:

    focus text | focus password   give that widget the keyboard focus (answers when it has it)
    state                         what the widgets hold (see _state)

Only stdlib and gi are imported: this runs outside the project's virtual environment.
"""

from __future__ import annotations

import json
import sys

import gi

gi.require_version("Gtk", "3.0")
gi.require_version("Gdk", "3.0")
from gi.repository import GLib, Gdk, Gtk  # noqa: E402

TITLE = "karukan-gtk-test"
FONT_CSS = b"textview, entry { font: 16px monospace; }"


class TestWindow:
    def __init__(self) -> None:
        self.window = Gtk.Window(title=TITLE)
        self.window.set_default_size(640, 240)
        self.window.move(0, 0)
        css = Gtk.CssProvider()
        css.load_from_data(FONT_CSS)
        Gtk.StyleContext.add_provider_for_screen(Gdk.Screen.get_default(), css,
                                                 Gtk.STYLE_PROVIDER_PRIORITY_APPLICATION)
        box = Gtk.Box(orientation=Gtk.Orientation.VERTICAL, spacing=8)
        self.text = Gtk.TextView()
        self.text.set_size_request(600, 120)
        self.password = Gtk.Entry()
        self.password.set_visibility(False)
        self.password.set_input_purpose(Gtk.InputPurpose.PASSWORD)
        box.pack_start(self.text, True, True, 0)
        box.pack_start(self.password, False, False, 0)
        self.window.add(box)
        # Every text the buffer ever held: raw romaji that was later replaced still shows here.
        self.history: list[str] = [""]
        self.preedit = ""
        self.key_presses = 0
        buffer = self.text.get_buffer()
        buffer.connect("changed", lambda b: self.history.append(self._buffer_text()))
        self.text.connect("preedit-changed", self._on_preedit)
        self.window.connect("key-press-event", self._on_key_press)
        self.window.connect("destroy", lambda _w: Gtk.main_quit())
        self.window.show_all()
        GLib.io_add_watch(GLib.IOChannel.unix_new(sys.stdin.fileno()), GLib.PRIORITY_DEFAULT,
                          GLib.IOCondition.IN | GLib.IOCondition.HUP, self._on_command)

    def _buffer_text(self) -> str:
        buffer = self.text.get_buffer()
        return buffer.get_text(buffer.get_start_iter(), buffer.get_end_iter(), True)

    def _on_preedit(self, _view, preedit: str) -> None:
        self.preedit = preedit

    def _on_key_press(self, _window, event) -> bool:
        # Runs before the focused widget (and its im-module) sees the key; the im-module's own
        # re-sent events are marked and counted again, so this counts at least the real ones.
        self.key_presses += 1
        return False

    def _on_command(self, channel, condition) -> bool:
        line = sys.stdin.readline()
        if not line:
            Gtk.main_quit()
            return False
        words = line.split()
        if words[:1] == ["focus"]:
            widget = self.text if words[1] == "text" else self.password
            self.window.present()
            widget.grab_focus()
            self._reply({"focused": widget.has_focus()})
        elif words[:1] == ["state"]:
            self._reply(self._state())
        else:
            self._reply({"error": f"unknown command {words[:1]}"})
        return True

    def _state(self) -> dict:
        return {
            "window": self.window.get_window().get_xid() if self.window.get_window() else 0,
            "active": self.window.is_active(),
            "text": self._buffer_text(),
            "history": self.history,
            "preedit": self.preedit,
            "password": self.password.get_text(),
            "key_presses": self.key_presses,
            "insert": self._insert_rect(),
            "advance": self._advances(),
        }

    def _insert_rect(self) -> list[int]:
        """The caret's rectangle in root-window coordinates (where the preedit starts)."""
        buffer = self.text.get_buffer()
        rect = self.text.get_iter_location(buffer.get_iter_at_mark(buffer.get_insert()))
        x, y = self.text.buffer_to_window_coords(Gtk.TextWindowType.TEXT, rect.x, rect.y)
        _ok, ox, oy = self.text.get_window(Gtk.TextWindowType.TEXT).get_origin()
        return [ox + x, oy + y, rect.width, rect.height]

    def _advances(self) -> list[int]:
        """Pixel width of each prefix of the preedit, as the TextView lays it out: where the
        character at index i starts, relative to the preedit's start."""
        widths = []
        for i in range(len(self.preedit) + 1):
            width, _height = self.text.create_pango_layout(self.preedit[:i]).get_pixel_size()
            widths.append(width)
        return widths

    def _reply(self, obj: dict) -> None:
        sys.stdout.write(json.dumps(obj, ensure_ascii=False) + "\n")
        sys.stdout.flush()


def main() -> None:
    TestWindow()
    Gtk.main()


if __name__ == "__main__":
    main()
