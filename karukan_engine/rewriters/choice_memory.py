"""Which kind of rewriter candidate the user chose for a reading (きょう → "slash"): remembered
instead of the text, so next time today's date in that form comes first, not the day it was
chosen. Bounded, kept in memory and, with a path, in a small JSON file beside the learning
history (written atomically on each change; a damaged file is ignored)."""

from __future__ import annotations

import json
import logging
import threading
from collections import OrderedDict
from pathlib import Path

from karukan_engine.core.user_files import MAX_SETTINGS_BYTES, data_dir, has_control_chars, read_user_file, write_atomic

log = logging.getLogger(__name__)

MAX_ENTRIES = 200
MAX_KIND_CHARS = 40


def default_path() -> Path:
    return data_dir() / "rewriter_choices.json"


class ChoiceMemory:
    def __init__(self, path: Path | None = None) -> None:
        self.path = path
        self._kinds: OrderedDict[str, str] = OrderedDict()
        self._loaded = path is None
        self._lock = threading.Lock()

    def kind_for(self, reading: str) -> str | None:
        with self._lock:
            self._load()
            return self._kinds.get(reading)

    def remember(self, reading: str, kind: str) -> None:
        if not reading or not kind or len(kind) > MAX_KIND_CHARS or has_control_chars(reading + kind):
            return
        with self._lock:
            self._load()
            self._kinds.pop(reading, None)
            self._kinds[reading] = kind
            while len(self._kinds) > MAX_ENTRIES:
                self._kinds.popitem(last=False)
            data = json.dumps(dict(self._kinds), ensure_ascii=False).encode("utf-8")
        if self.path is not None:
            try:
                write_atomic(self.path, data)
            except OSError as exc:
                log.warning("rewriter choices not saved (%s)", type(exc).__name__)

    def _load(self) -> None:
        if self._loaded:
            return
        self._loaded = True
        assert self.path is not None
        try:
            data = json.loads(read_user_file(self.path, MAX_SETTINGS_BYTES).decode("utf-8"))
        except FileNotFoundError:
            return
        except (OSError, ValueError, RecursionError) as exc:
            log.warning("rewriter choices unreadable (%s); starting afresh", type(exc).__name__)
            return
        if isinstance(data, dict):
            for reading, kind in list(data.items())[-MAX_ENTRIES:]:
                if isinstance(kind, str) and kind and len(kind) <= MAX_KIND_CHARS:
                    self._kinds[reading] = kind


_shared: ChoiceMemory | None = None


def shared() -> ChoiceMemory:
    """The process's memory, saved in the user's data directory (one for all sessions)."""
    global _shared
    if _shared is None:
        _shared = ChoiceMemory(default_path())
    return _shared
