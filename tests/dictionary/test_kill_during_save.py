"""kill -9 while saving (issue 17): at every moment of an atomic save, and at random, over many
rounds. After each kill the file is whole (it parses, nothing set aside), holds at least
everything whose save had returned, and the next start leaves no temporary file behind.

The "moments" are forced, not timed: the child stops inside write_atomic (after opening the
temporary file, after writing it, after its fsync, after the rename, after the directory fsync)
and tells the parent, which kills it there.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from karukan_engine.dictionary.learning import LearningStore
from karukan_engine.dictionary.user_dictionary import UserDictionary

REPO = Path(__file__).resolve().parents[2]
MOMENTS = ("open", "fsync-file", "replace", "fsync-dir", "done")
ROUNDS_AT_MOMENTS = 50   # 10 per moment, learning and user dictionary alternating
ROUNDS_AT_RANDOM = 50

CHILD = textwrap.dedent("""
    import os, sys, time
    from pathlib import Path
    from karukan_engine.core import user_files as storage
    from karukan_engine.dictionary.learning import LearningStore
    from karukan_engine.dictionary.user_dictionary import UserDictionary

    kind, path, stop_at = sys.argv[1], Path(sys.argv[2]), sys.argv[3]
    out = sys.stdout

    def halt(name):
        if name == stop_at:
            out.write("at " + name + "\\n"); out.flush()
            time.sleep(600)

    real_open, real_fsync, real_replace = os.open, os.fsync, os.replace
    fsyncs = [0]

    def hooked_open(p, flags, *a, **k):
        fd = real_open(p, flags, *a, **k)
        if ".tmp-" in str(p):
            halt("open")
        return fd

    def hooked_fsync(fd):
        real_fsync(fd)
        fsyncs[0] += 1
        halt("fsync-file" if fsyncs[0] % 2 else "fsync-dir")

    def hooked_replace(a, b):
        real_replace(a, b)
        halt("replace")

    storage.os.open, storage.os.fsync, storage.os.replace = hooked_open, hooked_fsync, hooked_replace
    if kind == "learning":
        store = LearningStore(path, save_delay=None)
        n = len(store)
        out.write("start %d\\n" % n); out.flush()
        while True:
            for i in range(n, n + 5):
                store.record("よみ%d" % i, "語%d" % i)
            n += 5
            assert store.save()
            halt("done")
            out.write("saved %d\\n" % n); out.flush()
    else:
        d = UserDictionary(path)
        n = len(d.words)
        out.write("start %d\\n" % n); out.flush()
        while True:
            for i in range(n, n + 5):
                d.add("よみ", "語%d" % i)
            n += 5
            d.save()
            halt("done")
            out.write("saved %d\\n" % n); out.flush()
""")


@pytest.fixture(autouse=True)
def hang_guard():
    def expired(*_):
        raise TimeoutError("a child did not reach its save moment")

    old = signal.signal(signal.SIGALRM, expired)
    signal.alarm(240)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def _start(kind: str, path: Path, stop_at: str) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(REPO), "PYTHONDONTWRITEBYTECODE": "1"}
    return subprocess.Popen([sys.executable, "-c", CHILD, kind, str(path), stop_at], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)


def _count(kind: str, path: Path) -> int:
    """Entries on disk, checking that the file is whole and nothing had to be set aside."""
    if kind == "learning":
        store = LearningStore(path, save_delay=None)
        n = len(store)
        assert all(store.lookup(f"よみ{i}") == [f"語{i}"] for i in range(n)), "entries out of order"
    else:
        words = UserDictionary(path).words
        n = len(words)
        assert [w.surface for w in words] == [f"語{i}" for i in range(n)], "entries out of order"
    assert not list(path.parent.glob(path.name + ".corrupt-*")), "a save left a damaged file"
    assert not list(path.parent.glob("." + path.name + ".tmp-*")), "a temporary file survived the next start"
    return n


def _round(kind: str, path: Path, stop_at: str, saves_before_kill: int, rng: random.Random) -> tuple[int, int]:
    """One child, killed at `stop_at` (or after some saves at a random point); (acknowledged
    entries, entries found afterwards)."""
    before = _count(kind, path)
    child = _start(kind, path, stop_at)
    acknowledged = before
    try:
        line = child.stdout.readline()
        assert line.startswith("start "), child.stderr.read()
        while True:
            if stop_at == "random" and acknowledged - before >= 5 * saves_before_kill:
                time.sleep(rng.random() * 0.02)   # lets the child run on to a random point
                break
            line = child.stdout.readline()
            assert line, child.stderr.read()
            if line.startswith("at "):
                break
            acknowledged = int(line.split()[1])
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
        child.stdout.close()
        child.stderr.close()
    after = _count(kind, path)
    return acknowledged, after


def test_kill_at_every_save_moment(tmp_path):
    totals = {"learning": 0, "user_dictionary": 0}
    rng = random.Random(1)
    for n in range(ROUNDS_AT_MOMENTS):
        kind = ("learning", "user_dictionary")[n % 2]
        moment = MOMENTS[(n // 2) % len(MOMENTS)]
        path = tmp_path / ("learning.json" if kind == "learning" else "user_dictionary.tsv")
        acknowledged, after = _round(kind, path, moment, 0, rng)
        assert after >= acknowledged and after >= totals[kind]   # nothing saved is ever lost
        totals[kind] = after
    assert totals["learning"] > 0 and totals["user_dictionary"] > 0


def test_kill_at_random_points(tmp_path):
    rng = random.Random(2)
    totals = {"learning": 0, "user_dictionary": 0}
    for n in range(ROUNDS_AT_RANDOM):
        kind = ("learning", "user_dictionary")[n % 2]
        path = tmp_path / ("learning.json" if kind == "learning" else "user_dictionary.tsv")
        acknowledged, after = _round(kind, path, "random", rng.randrange(0, 4), rng)
        assert after >= acknowledged and after >= totals[kind]
        totals[kind] = after
    assert totals["learning"] > 0
