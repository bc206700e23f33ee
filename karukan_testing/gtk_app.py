"""A real GTK3 application for the end-to-end tests: a TextView and a password Entry.

Run with the system Python (python3-gi and GTK 3 are Debian packages, not in the venv):
    python3 -m karukan_testing.gtk_app
The toolkit's own im-module does the input method work (GTK_IM_MODULE=ibus or fcitx), exactly
as in any desktop application; keys come from the X server (XTEST). The test drives the app
with one command per stdin line and reads one JSON object per stdout line:

    focus text | focus password   give that widget the keyboard focus (answers when it has it)
    state                         what the widgets hold (see _state)
    press KEYSYM_NAME             press and release a key through XTEST from here, noting when
                                  (the latency benchmark: no xdotool start-up in the figure)
    timings                       when each pressed key was sent, each preedit change and each
                                  change of the text (a commit) happened (monotonic seconds),
                                  then forget them
    clear                         empty the TextView (and its history)

Only stdlib and gi are imported: this runs outside the project's virtual environment.
"""

from __future__ import annotations

import json
import sys
import time

import gi

gi.require_version("Gtk", "3.0")
gi.require_version("Gdk", "3.0")
from gi.repository import GLib, Gdk, Gtk  # noqa: E402

TITLE = "karukan-gtk-test"
FONT_CSS = b"textview, entry { font: 16px monospace; }"


class XTest:
    """Key events through the X server's XTEST extension, on a connection of our own (libX11 and
    libXtst through ctypes: no extra Python package)."""

    def __init__(self) -> None:
        import ctypes
        import ctypes.util

        self.x11 = ctypes.CDLL(ctypes.util.find_library("X11") or "libX11.so.6")
        self.xtst = ctypes.CDLL(ctypes.util.find_library("Xtst") or "libXtst.so.6")
        self.x11.XOpenDisplay.restype = ctypes.c_void_p
        self.x11.XOpenDisplay.argtypes = [ctypes.c_char_p]
        self.x11.XStringToKeysym.restype = ctypes.c_ulong
        self.x11.XStringToKeysym.argtypes = [ctypes.c_char_p]
        self.x11.XKeysymToKeycode.restype = ctypes.c_ubyte
        self.x11.XKeysymToKeycode.argtypes = [ctypes.c_void_p, ctypes.c_ulong]
        self.x11.XFlush.argtypes = [ctypes.c_void_p]
        self.xtst.XTestFakeKeyEvent.argtypes = [ctypes.c_void_p, ctypes.c_uint, ctypes.c_int, ctypes.c_ulong]
        self.display = self.x11.XOpenDisplay(None)
        self.sent_at = 0.0

    def press(self, name: str) -> int:
        keysym = self.x11.XStringToKeysym(name.encode())
        keycode = self.x11.XKeysymToKeycode(self.display, keysym)
        if not keycode:
            raise ValueError(f"no key for {name}")
        self.sent_at = time.monotonic()
        self.xtst.XTestFakeKeyEvent(self.display, keycode, 1, 0)
        self.xtst.XTestFakeKeyEvent(self.display, keycode, 0, 0)
        self.x11.XFlush(self.display)
        return keysym


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
        self._xtest: XTest | None = None      # opened on the first press
        self.key_times: list[list] = []       # [keysym, seconds]
        self.preedit_times: list[list] = []   # [preedit, seconds]
        self.text_times: list[list] = []      # [buffer text, seconds]: commits
        self.preedit_changes = 0              # ever (preedit-changed may repeat the same text)
        buffer = self.text.get_buffer()
        buffer.connect("changed", self._on_text_changed)
        self.text.connect("preedit-changed", self._on_preedit)
        self.window.connect("destroy", lambda _w: Gtk.main_quit())
        self.window.show_all()
        GLib.io_add_watch(GLib.IOChannel.unix_new(sys.stdin.fileno()), GLib.PRIORITY_DEFAULT,
                          GLib.IOCondition.IN | GLib.IOCondition.HUP, self._on_command)

    def _buffer_text(self) -> str:
        buffer = self.text.get_buffer()
        return buffer.get_text(buffer.get_start_iter(), buffer.get_end_iter(), True)

    def _on_text_changed(self, _buffer) -> None:
        text = self._buffer_text()
        self.history.append(text)
        self.text_times.append([text, time.monotonic()])

    def _on_preedit(self, _view, preedit: str) -> None:
        self.preedit = preedit
        self.preedit_times.append([preedit, time.monotonic()])
        self.preedit_changes += 1

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
        elif words[:1] == ["press"]:
            self._xtest = self._xtest or XTest()
            keysym = self._xtest.press(words[1])
            self.key_times.append([keysym, self._xtest.sent_at])
            self._reply({"pressed": keysym})
        elif words[:1] == ["clear"]:
            self.text.get_buffer().set_text("")
            self.history = [""]
            self._reply({"cleared": True})
        elif words[:1] == ["timings"]:
            self._reply({"keys": self.key_times, "preedits": self.preedit_times, "texts": self.text_times})
            self.key_times, self.preedit_times, self.text_times = [], [], []
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
            "preedit_changes": self.preedit_changes,
            "password": self.password.get_text(),
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
