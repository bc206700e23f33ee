"""Debounced saving: write user data in a background thread once changes have settled.

A commit must not wait for a file write (an fsync can take tens of milliseconds), so the store
asks for a save and goes on; the saver writes after `delay` seconds without a new request (or at
the latest `max_delay` seconds after the first unsaved one, so steady typing still saves), and at
once on flush()/close(). An exit hook flushes whatever is pending when the process ends without
close().
"""

from __future__ import annotations

import atexit
import logging
import threading
import time
from typing import Callable

log = logging.getLogger(__name__)

# The thread waits this long after a save for the next request before it ends: starting a
# thread waits for it to run, about 0.2 ms of the commit that asks (Return), and a typist commits
# every few seconds.
LINGER_S = 60.0


class DebouncedSaver:
    """Runs `save` (which should write only what changed) in a background thread, debounced."""

    def __init__(self, save: Callable[[], object], delay: float, max_delay: float, name: str = "karukan-saver") -> None:
        self._save = save
        self.delay = delay
        self.max_delay = max_delay
        self.name = name
        self._cond = threading.Condition()
        self._due: float | None = None          # when the pending save runs; None: nothing pending
        self._deadline: float | None = None     # the latest it may run (first request + max_delay)
        # the saver thread while a save is pending; a thread that is no longer this one ends
        self._thread: threading.Thread | None = None

    @property
    def pending(self) -> bool:
        return self._due is not None

    def request(self) -> None:
        """Save soon, in the background."""
        with self._cond:
            now = time.monotonic()
            if self._deadline is None:
                self._deadline = now + self.max_delay
            self._due = min(now + self.delay, self._deadline)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
                self._thread.start()
                atexit.register(self.close)
            self._cond.notify_all()

    def flush(self) -> None:
        """Save now, in the caller's thread (the save itself decides whether anything changed)."""
        with self._cond:
            self._due = self._deadline = None
        self._save()

    def close(self) -> None:
        """Stop the background thread, then flush. Safe to call more than once."""
        with self._cond:
            thread, self._thread = self._thread, None
            if thread is not None:
                atexit.unregister(self.close)
            self._cond.notify_all()
        if thread is not None and thread is not threading.current_thread():
            thread.join()
        self.flush()

    def _run(self) -> None:
        """Wait for the pending save to fall due, save, and end when nothing more was asked
        for within LINGER_S."""
        me = threading.current_thread()
        while True:
            with self._cond:
                while self._thread is me and self._due is not None and self._due > time.monotonic():
                    self._cond.wait(self._due - time.monotonic())
                if self._thread is not me:
                    return
                if self._due is None:   # saved (or flushed by someone else): wait a while, then end
                    self._cond.wait_for(lambda: self._thread is not me or self._due is not None, LINGER_S)
                    if self._thread is not me:
                        return
                    if self._due is None:
                        self._thread = None
                        atexit.unregister(self.close)
                        return
                    continue
                self._due = self._deadline = None
            try:
                self._save()
            except Exception:  # a background thread has no caller to tell: log and go on
                log.exception("background save failed")
