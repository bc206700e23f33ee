"""Learning history: ranking, bounds, and persistence that survives crashes and full disks."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

from hypothesis import given, settings
from hypothesis import strategies as st

from karukan_engine.dictionary.learning import LearningStore, default_path


def test_recent_and_frequent_surfaces_rank_first(tmp_path):
    store = LearningStore(tmp_path / "l.json")
    store.record("きしゃ", "記者")
    store.record("きしゃ", "帰社")
    assert store.lookup("きしゃ") == ["帰社", "記者"]         # most recent first
    for _ in range(3):
        store.record("きしゃ", "記者")
    store.record("きしゃ", "汽車")
    assert store.lookup("きしゃ")[0] == "汽車"
    assert store.lookup("きしゃ").index("記者") < store.lookup("きしゃ").index("帰社")
    assert store.lookup("なし") == []


def test_prefix_lookup(tmp_path):
    store = LearningStore(tmp_path / "l.json")
    store.record("かいぎ", "会議")
    store.record("かいしゃ", "会社")
    store.record("きしゃ", "記者")
    assert store.prefix_lookup("かい") == [("かいしゃ", "会社"), ("かいぎ", "会議")]
    assert store.prefix_lookup("かい", limit=1) == [("かいしゃ", "会社")]


def test_size_is_bounded_and_the_weakest_go(tmp_path):
    store = LearningStore(tmp_path / "l.json", max_entries=3)
    for _ in range(5):
        store.record("あ", "亜")
    for word in ("い", "う", "え", "お"):
        store.record(word, word.upper())
    assert len(store) == 3
    assert store.lookup("あ") == ["亜"]          # frequent survives
    assert store.lookup("い") == []             # oldest single use evicted


@settings(max_examples=40, deadline=None)
@given(pairs=st.lists(st.tuples(st.text("あいう", min_size=1, max_size=3), st.text("亜伊宇", min_size=1, max_size=2)),
                      max_size=30))
def test_save_and_load_round_trip(tmp_path_factory, pairs):
    path = tmp_path_factory.mktemp("rt") / "l.json"
    store = LearningStore(path, max_entries=10)
    for reading, surface in pairs:
        store.record(reading, surface)
    assert store.save()
    again = LearningStore(path, max_entries=10)
    assert len(again) == len(store) <= 10
    for reading, _ in pairs:
        assert again.lookup(reading) == store.lookup(reading)


def test_default_path_follows_xdg(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    assert default_path() == tmp_path / "karukan" / "learning.json"


def test_corrupt_file_is_set_aside(tmp_path, caplog):
    path = tmp_path / "l.json"
    path.write_bytes(b'{"format": 1, "tick": 3, "entr')   # truncated
    store = LearningStore(path)
    assert len(store) == 0
    aside = list(tmp_path.glob("l.json.corrupt-*"))
    assert len(aside) == 1 and aside[0].read_bytes().startswith(b'{"format"')
    assert "unreadable" in caplog.text and "きしゃ" not in caplog.text
    store.record("きしゃ", "記者")
    assert store.save() and LearningStore(path).lookup("きしゃ") == ["記者"]


def _run_child(tmp_path, body: str) -> subprocess.CompletedProcess:
    script = textwrap.dedent("""
        import os, signal, sys
        from pathlib import Path
        from karukan_engine.dictionary.learning import LearningStore
        path = Path(sys.argv[1])
        store = LearningStore(path)
        store.record("きしゃ", "帰社")
    """) + textwrap.dedent(body)
    return subprocess.run([sys.executable, "-c", script, str(tmp_path / "l.json")],
                          capture_output=True, text=True, timeout=60)


def _seed(tmp_path) -> None:
    store = LearningStore(tmp_path / "l.json")
    store.record("きしゃ", "記者")
    assert store.save()


def test_crash_between_write_and_rename_keeps_the_old_file(tmp_path):
    _seed(tmp_path)
    before = (tmp_path / "l.json").read_bytes()
    # the process dies (SIGKILL) right after writing and fsyncing the temporary file
    result = _run_child(tmp_path, """
        os.replace = lambda *a, **k: os.kill(os.getpid(), signal.SIGKILL)
        store.save()
    """)
    assert result.returncode == -9
    assert (tmp_path / "l.json").read_bytes() == before
    assert LearningStore(tmp_path / "l.json").lookup("きしゃ") == ["記者"]
    leftovers = list(tmp_path.glob(".l.json.tmp-*"))
    assert leftovers and json.loads(leftovers[0].read_bytes())["entries"]   # the half-done save


def test_full_disk_loses_no_earlier_data(tmp_path):
    _seed(tmp_path)
    before = (tmp_path / "l.json").read_bytes()
    # a real write failure: the file size limit makes the kernel refuse the write (EFBIG)
    result = _run_child(tmp_path, """
        import resource
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        for i in range(200):
            store.record("よみ%d" % i, "語%d" % i)
        resource.setrlimit(resource.RLIMIT_FSIZE, (64, 64))
        print("saved" if store.save() else "refused")
        print(store.lookup("きしゃ"))
    """)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["refused", "['帰社', '記者']"]
    assert (tmp_path / "l.json").read_bytes() == before
    assert not list(tmp_path.glob(".l.json.tmp-*"))
    assert "previous copy is kept" in result.stderr


def test_a_full_store_evicts_with_slack(tmp_path):
    store = LearningStore(tmp_path / "l.json", max_entries=20)
    for i in range(25):
        store.record(f"よみ{i}", f"語{i}")
    assert 18 <= len(store) <= 20
    assert store.lookup("よみ24") == ["語24"] and store.lookup("よみ0") == []


def test_concurrent_saves_leave_a_whole_file(tmp_path):
    import threading

    store = LearningStore(tmp_path / "l.json")
    for i in range(300):
        store.record(f"よみ{i}", f"語{i}")

    def save_many():
        for _ in range(10):
            assert store.save()

    threads = [threading.Thread(target=save_many) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(LearningStore(tmp_path / "l.json")) == 300
    assert not list(tmp_path.glob(".l.json.tmp-*"))


# -- debounced saving --------------------------------------------------------------------------------

def test_a_record_writes_nothing_until_close(tmp_path):
    store = LearningStore(tmp_path / "l.json")   # the default background delay
    store.record("きしゃ", "帰社")
    assert store.saves == 0 and store.dirty and not (tmp_path / "l.json").exists()
    assert store.close()
    assert store.saves == 1 and not store.dirty
    assert LearningStore(tmp_path / "l.json").lookup("きしゃ") == ["帰社"]
    assert store.close() and store.saves == 1   # nothing left to write


def test_changes_coalesce_into_one_write(tmp_path):
    store = LearningStore(tmp_path / "l.json", save_delay=600)
    for i in range(20):
        store.record(f"よみ{i}", f"語{i}")
    store.forget("よみ0", "語0")
    assert store.saves == 0
    assert store.flush() and store.saves == 1
    assert len(LearningStore(tmp_path / "l.json")) == 19
    store.close()


def test_the_background_saver_writes_after_a_quiet_period(tmp_path):
    import time

    store = LearningStore(tmp_path / "l.json", save_delay=0.01)
    store.record("きしゃ", "帰社")
    deadline = time.monotonic() + 30   # a bound against hanging, not a timing assertion
    while store.saves == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert store.saves == 1 and not store.dirty
    assert LearningStore(tmp_path / "l.json").lookup("きしゃ") == ["帰社"]
    store.close()
    assert store.saves == 1


def test_steady_changes_still_save_by_the_deadline(tmp_path):
    import time

    store = LearningStore(tmp_path / "l.json", save_delay=600, max_save_delay=0.01)
    store.record("きしゃ", "帰社")
    deadline = time.monotonic() + 30
    while store.saves == 0 and time.monotonic() < deadline:
        store.record("きしゃ", "記者")   # keeps postponing the quiet period
        time.sleep(0.01)
    assert store.saves >= 1
    store.close()


def test_pending_changes_are_written_when_the_process_exits(tmp_path):
    _seed(tmp_path)
    result = _run_child(tmp_path, """
        assert store.saves == 0
        sys.exit(0)   # no close(): the exit hook writes
    """)
    assert result.returncode == 0, result.stderr
    assert LearningStore(tmp_path / "l.json").lookup("きしゃ") == ["帰社", "記者"]


def test_close_on_a_full_disk_keeps_the_old_file(tmp_path):
    _seed(tmp_path)
    before = (tmp_path / "l.json").read_bytes()
    result = _run_child(tmp_path, """
        import resource
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        for i in range(200):
            store.record("よみ%d" % i, "語%d" % i)
        resource.setrlimit(resource.RLIMIT_FSIZE, (64, 64))
        print(store.close(), store.dirty, store.saves)
    """)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[0] == "False True 0"
    assert (tmp_path / "l.json").read_bytes() == before
    assert not list(tmp_path.glob(".l.json.tmp-*"))


def test_the_saver_thread_ends_when_nothing_is_pending(tmp_path):
    import threading
    import time

    store = LearningStore(tmp_path / "l.json", save_delay=0.01)
    store.record("きしゃ", "帰社")
    deadline = time.monotonic() + 30
    while any(t.name == "karukan-learning-save" for t in threading.enumerate()) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert store.saves == 1
    assert not any(t.name == "karukan-learning-save" for t in threading.enumerate())
    store.record("きしゃ", "記者")   # a new change starts a new thread
    assert store.close() and store.saves == 2
    assert LearningStore(tmp_path / "l.json").lookup("きしゃ") == ["記者", "帰社"]
