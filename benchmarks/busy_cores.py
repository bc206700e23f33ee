"""Other programs keeping cores busy while a benchmark measures (issue 26: a desktop always has
something else running). Each busy core is a child process spinning in a loop."""

from __future__ import annotations

import subprocess
import sys
import time
from contextlib import contextmanager

SETTLE_S = 0.5  # long enough for the load meter's window (karukan_engine/neural/threads.py)


@contextmanager
def busy_cores(count: int):
    spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]
    try:
        if spinners:
            time.sleep(SETTLE_S)
        yield
    finally:
        for spinner in spinners:
            spinner.kill()
            spinner.wait()
