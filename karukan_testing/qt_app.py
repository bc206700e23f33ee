"""A real Qt 5 application for the end-to-end tests: a QTextEdit and a password QLineEdit.

The Qt twin of gtk_app.py, with the same stdin/stdout commands (focus, state, clear) and the
same state keys, so karukan_testing.gtk_client drives both. Run with the system Python
(python3-pyqt5 is a Debian package): QT_IM_MODULE=ibus (built into Debian's Qt 5) or fcitx
(fcitx5-frontend-qt5) picks the input method.
"""

from __future__ import annotations

import json
import sys

from PyQt5.QtCore import QSocketNotifier
from PyQt5.QtWidgets import QApplication, QLineEdit, QTextEdit, QVBoxLayout, QWidget

TITLE = "karukan-qt-test"


class PreeditTextEdit(QTextEdit):
    """A QTextEdit that remembers the preedit the input method last showed."""

    def __init__(self) -> None:
        super().__init__()
        self.preedit = ""

    def inputMethodEvent(self, event) -> None:
        self.preedit = event.preeditString()
        super().inputMethodEvent(event)


class TestWindow:
    def __init__(self) -> None:
        self.window = QWidget()
        self.window.setWindowTitle(TITLE)
        self.window.resize(640, 240)
        self.window.move(0, 0)
        self.text = PreeditTextEdit()
        self.password = QLineEdit()
        self.password.setEchoMode(QLineEdit.Password)
        layout = QVBoxLayout(self.window)
        layout.addWidget(self.text)
        layout.addWidget(self.password)
        self.history: list[str] = [""]
        self.text.textChanged.connect(lambda: self.history.append(self.text.toPlainText()))
        self.window.show()
        self.notifier = QSocketNotifier(sys.stdin.fileno(), QSocketNotifier.Read)
        self.notifier.activated.connect(self._on_command)

    def _on_command(self, _fd) -> None:
        line = sys.stdin.readline()
        if not line:
            QApplication.quit()
            return
        words = line.split()
        if words[:1] == ["focus"]:
            widget = self.text if words[1] == "text" else self.password
            self.window.activateWindow()
            widget.setFocus()
            QApplication.processEvents()
            self._reply({"focused": widget.hasFocus()})
        elif words[:1] == ["state"]:
            self._reply(self._state())
        elif words[:1] == ["clear"]:
            self.text.clear()
            self.history = [""]
            self._reply({"cleared": True})
        else:
            self._reply({"error": f"unknown command {words[:1]}"})

    def _state(self) -> dict:
        return {
            "window": int(self.window.winId()) if self.window.isVisible() else 0,
            "active": self.window.isActiveWindow(),
            "text": self.text.toPlainText(),
            "history": self.history,
            "preedit": self.text.preedit,
            "password": self.password.text(),
        }

    def _reply(self, obj: dict) -> None:
        sys.stdout.write(json.dumps(obj, ensure_ascii=False) + "\n")
        sys.stdout.flush()


def main() -> None:
    app = QApplication(sys.argv)
    window = TestWindow()   # held here: the widgets live as long as the event loop
    app.exec_()
    window.window.close()


if __name__ == "__main__":
    main()
