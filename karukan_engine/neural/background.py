"""Load a model on a background thread so the engine works on the dictionary meanwhile."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Callable

from karukan_engine.neural.errors import NeuralError


class LoadHandle:
    """ready() -> bool; wait(timeout) -> model or raises its error; error; model."""

    def __init__(self, load: Callable[[], object], name: str = "karukan-model-load") -> None:
        self.model = None
        self.error: NeuralError | None = None
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(load,), name=name, daemon=True)
        self._thread.start()

    def _run(self, load: Callable[[], object]) -> None:
        try:
            self.model = load()
        except NeuralError as exc:
            self.error = exc
        except Exception as exc:  # any other failure still leaves the engine on the dictionary
            self.error = NeuralError(f"model load failed: {type(exc).__name__}: {exc}")
            self.error.__cause__ = exc
        finally:
            self._done.set()

    def ready(self) -> bool:
        """True once loading succeeded (False while loading or after a failure)."""
        return self._done.is_set() and self.model is not None

    def done(self) -> bool:
        return self._done.is_set()

    def settle(self, timeout: float | None = None) -> bool:
        """Wait until loading ended, either way, without raising; True when it has."""
        return self._done.wait(timeout)

    def wait(self, timeout: float | None = None):
        """The model; raises the load error, or TimeoutError if still loading after timeout."""
        if not self._done.wait(timeout):
            raise TimeoutError("model still loading")
        if self.error is not None:
            raise self.error
        return self.model


def load_in_background(source: str | Path, **kwargs) -> LoadHandle:
    """source: a models.toml id, a GGUF path or a model directory. kwargs go to load_model
    (options=ModelOptions(...)). Hub models must already be downloaded."""
    from karukan_engine.neural.registry import load_model_by_id_or_path

    return LoadHandle(lambda: load_model_by_id_or_path(str(source), **kwargs))
