"""Drive the real GTK3 test application (gtk_app.py) on a private X server.

The app runs under the system Python with a toolkit im-module (GTK_IM_MODULE); keys go in
through the X server's XTEST extension (xdotool), as a keyboard's would, and what the widgets
hold comes back over the app's stdin/stdout. Waits are for conditions, with generous bounds:
the tests share a loaded machine.
"""

from __future__ import annotations

import json
import selectors
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any, Callable

from karukan_testing.headless import HeadlessDesktop

# python3-gi and the GTK 3 typelib are Debian packages of the system interpreter.
SYSTEM_PYTHON = "/usr/bin/python3"
REPLY_TIMEOUT_S = 60.0
XDOTOOL_TIMEOUT_S = 120.0
KEY_DELAY_MS = 40     # between XTEST key events, as a fast typist


def gtk_missing() -> str | None:
    """Why the GTK app cannot run here (a missing program or package), or None."""
    for program in ("Xvfb", "xdotool"):
        if shutil.which(program) is None:
            return f"{program} is not installed"
    probe = subprocess.run([SYSTEM_PYTHON, "-c", "import gi; gi.require_version('Gtk', '3.0'); "
                            "from gi.repository import Gtk"], capture_output=True, text=True)
    if probe.returncode != 0:
        return "python3-gi with GTK 3 (gir1.2-gtk-3.0) is not installed"
    return None


def im_module_missing(name: str) -> str | None:
    """GTK_IM_MODULE=name needs that module in GTK 3's module cache."""
    caches = Path("/usr/lib").glob("*/gtk-3.0/3.0.0/immodules.cache")
    listed = any(f'"{name}"' in cache.read_text(errors="replace") for cache in caches)
    return None if listed else f"the GTK 3 im-module {name!r} is not installed"


class GtkClient:
    APP = "karukan_testing.gtk_app"

    def __init__(self, desktop: HeadlessDesktop, im_module: str, name: str = "gtk-app") -> None:
        self.desktop = desktop
        self.env = dict(desktop.env, NO_AT_BRIDGE="1", **self.toolkit_env(im_module))
        self.name = name
        self.proc = desktop.spawn(name, [SYSTEM_PYTHON, "-m", self.APP], env=self.env,
                                  stdout_pipe=True, stdin_pipe=True)
        self.window = self.wait_for(lambda s: s["window"] and s, what="the window to map")["window"]

    @staticmethod
    def toolkit_env(im_module: str) -> dict[str, str]:
        return {"GTK_IM_MODULE": im_module, "GDK_BACKEND": "x11", "GTK_A11Y": "none",
                "GSETTINGS_BACKEND": "memory"}

    # --- the app ------------------------------------------------------------------------------

    def command(self, line: str) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(line.encode() + b"\n")
        self.proc.stdin.flush()
        sel = selectors.DefaultSelector()
        sel.register(self.proc.stdout, selectors.EVENT_READ)
        try:
            if not sel.select(REPLY_TIMEOUT_S):
                raise AssertionError(f"the GTK app did not answer {line!r}: {self.log()}")
        finally:
            sel.close()
        reply = self.proc.stdout.readline()
        if not reply:
            raise AssertionError(f"the GTK app exited: {self.log()}")
        return json.loads(reply)

    def state(self) -> dict[str, Any]:
        return self.command("state")

    def wait_for(self, condition: Callable[[dict], Any], timeout_s: float = 60.0, what: str = "") -> Any:
        """Poll the app's state until condition(state) is truthy; return that value."""
        deadline = time.monotonic() + timeout_s
        while True:
            state = self.state()
            value = condition(state)
            if value:
                return value
            if time.monotonic() > deadline:
                raise AssertionError(f"condition not reached in time: {what}; last state {state}")
            time.sleep(0.05)

    def focus(self, widget: str) -> None:
        """Give the X input focus to the window, then the keyboard focus to the widget."""
        self.xdotool("windowfocus", "--sync", str(self.window))
        self.wait_for(lambda s: s["active"], what="the window to be active")
        assert self.command(f"focus {widget}")["focused"], widget

    def log(self) -> str:
        return self.desktop.log_tail(self.name)

    # --- the keyboard -------------------------------------------------------------------------

    def xdotool(self, *args: str) -> None:
        subprocess.run(["xdotool", *args], env=self.env, check=True, capture_output=True,
                       timeout=XDOTOOL_TIMEOUT_S)

    def type(self, text: str) -> None:
        """Type printable ASCII through XTEST, one key press and release per character."""
        self.xdotool("type", "--delay", str(KEY_DELAY_MS), text)

    def keys(self, *names: str) -> None:
        """Press and release named keys (X keysym names: space, Return, Right, ...)."""
        self.xdotool("key", "--delay", str(KEY_DELAY_MS), *names)

    def close(self) -> None:
        self.desktop.stop(self.proc)


class QtClient(GtkClient):
    """The Qt 5 twin (karukan_testing/qt_app.py): same commands, same state."""

    APP = "karukan_testing.qt_app"

    @staticmethod
    def toolkit_env(im_module: str) -> dict[str, str]:
        return {"QT_IM_MODULE": im_module, "QT_QPA_PLATFORM": "xcb", "QT_ACCESSIBILITY": "0"}


def qt_missing(im_module: str) -> str | None:
    """Why the Qt app cannot run with that im-module here, or None."""
    for program in ("Xvfb", "xdotool"):
        if shutil.which(program) is None:
            return f"{program} is not installed"
    probe = subprocess.run([SYSTEM_PYTHON, "-c", "import PyQt5.QtWidgets"], capture_output=True)
    if probe.returncode != 0:
        return "python3-pyqt5 is not installed"
    plugins = Path("/usr/lib").glob("*/qt5/plugins/platforminputcontexts/*.so")
    names = {"ibus": "libibusplatforminputcontextplugin", "fcitx": "libfcitx5platforminputcontextplugin"}
    if not any(path.name.startswith(names[im_module]) for path in plugins):
        return f"the Qt 5 input context plugin for {im_module} is not installed"
    return None
