"""The bundled character n-gram, loaded once per process on a thread of its own.

The dictionary converter judges its paths with it and the fused ranking scores the model's
proposals with it; both hold this one handle, so the file is read and kept in memory once.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path

from karukan_engine.lm.char_ngram import BUNDLED, CharNgram
from karukan_engine.neural.background import LoadHandle

log = logging.getLogger(__name__)
_lock = threading.Lock()
_handles: dict[Path, LoadHandle] = {}


def shared_ngram(path: Path = BUNDLED) -> LoadHandle:
    """The process's one LoadHandle of the n-gram file at path (started on first use)."""
    path = Path(path)
    with _lock:
        handle = _handles.get(path)
        if handle is None:
            handle = _handles[path] = LoadHandle(lambda: CharNgram.load(path), name="karukan-ngram-load")
        return handle


class LoadedNgram:
    """Called for the n-gram: the model once it has loaded, None while it loads or when it
    failed to (said once in the log: a missing or damaged file leaves its user without it;
    `without` says what that user then does)."""

    def __init__(self, handle: LoadHandle, without: str = "the dictionary converts alone") -> None:
        self.handle = handle
        self.without = without
        self._told = False

    def __call__(self) -> CharNgram | None:
        if self.handle.ready():
            return self.handle.wait(0)
        if self.handle.done() and not self._told:
            self._told = True
            log.warning("character n-gram unavailable (%s); %s", self.handle.error, self.without)
        return None

    def failed(self) -> bool:
        """True once loading ended without a model."""
        return self.handle.done() and not self.handle.ready()
