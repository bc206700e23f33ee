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
    leftovers = list(tmp_path.glob(".l.json.tmp-*"))
    assert leftovers and json.loads(leftovers[0].read_bytes())["entries"]   # the half-done save
    assert LearningStore(tmp_path / "l.json").lookup("きしゃ") == ["記者"]
    assert not list(tmp_path.glob(".l.json.tmp-*"))   # the next start removes what the dead one left


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


def test_one_saver_thread_saves_one_commit_after_another(tmp_path):
    import time

    store = LearningStore(tmp_path / "l.json", save_delay=0.01)
    store.record("きしゃ", "帰社")
    deadline = time.monotonic() + 30
    while store.saves == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    first = store._saver._thread
    store.record("きしゃ", "記者")   # the next commit: the same thread, no new one to start
    while store.saves == 1 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert store.saves == 2 and first is not None and store._saver._thread is first
    assert store.close()
    assert not first.is_alive()


def test_the_saver_thread_ends_when_nothing_is_pending(tmp_path, monkeypatch):
    import time

    from karukan_engine.dictionary import saver

    monkeypatch.setattr(saver, "LINGER_S", 0.01)
    store = LearningStore(tmp_path / "l.json", save_delay=0.01)
    store.record("きしゃ", "帰社")
    thread = store._saver._thread
    deadline = time.monotonic() + 30
    while thread.is_alive() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert store.saves == 1 and not thread.is_alive() and store._saver._thread is None
    store.record("きしゃ", "記者")   # a new change starts a new thread
    assert store._saver._thread not in (None, thread)
    assert store.close() and store.saves == 2
    assert LearningStore(tmp_path / "l.json").lookup("きしゃ") == ["記者", "帰社"]


# -- damaged, hostile and unreadable files (issue 17) -----------------------------------------------

import os  # noqa: E402

import pytest  # noqa: E402

from karukan_engine.core import user_files as storage  # noqa: E402
from damage_support import as_unprivileged, aside_copies, shared_tmp  # noqa: E402


@pytest.mark.parametrize("raw", [
    b'{"format": 1, "tick": 1e400, "entries": []}',                 # OverflowError once used as an int
    b'{"format": 1, "tick": Infinity, "entries": []}',
    b'{"format": 1, "tick": NaN, "entries": []}',
    b'{"format": 1, "tick": 3, "entries": ' + b"[" * 100000 + b"]" * 100000 + b"}",   # RecursionError
    b"[" * 100000,
    b'{"format": 1, "tick": ' + b"9" * 5000 + b', "entries": []}',  # more digits than int() takes
    b'{"format": 1, "tick": 3, "entries": {"a": 1}}',
])
def test_any_damage_starts_an_empty_store_and_keeps_the_file(tmp_path, raw):
    path = tmp_path / "l.json"
    path.write_bytes(raw)
    store = LearningStore(path, save_delay=None)
    assert len(store) == 0
    assert [p.read_bytes() for p in aside_copies(path)] == [raw]
    store.record("きしゃ", "記者")
    assert store.save() and LearningStore(path).lookup("きしゃ") == ["記者"]


def test_bad_entries_are_skipped_and_the_original_kept(tmp_path):
    path = tmp_path / "l.json"
    entries = [["きしゃ", "記者", 3, 4], ["かんじ", "漢字", 1e300, 1], ["あ", "亜\u0000", 1, 2],
               ["お", "尾", 1, float("nan")], ["い", "伊", True, 1], ["う", "宇", 2, -1], ["え"], "x"]
    text = json.dumps({"format": 1, "tick": 5, "entries": entries}, ensure_ascii=False)
    raw = text.replace("1e+300", "1e400").encode()   # 1e400: a float too large for any int
    path.write_bytes(raw)
    store = LearningStore(path, save_delay=None)
    assert len(store) == 1 and store.lookup("きしゃ") == ["記者"]
    assert [p.read_bytes() for p in aside_copies(path)] == [raw]   # nothing is lost


def test_an_unreadable_file_is_never_overwritten():
    # Issue 17 item 4: a permission error used to give an empty store that the next save wrote over.
    with shared_tmp() as tmp:
        _unreadable_is_set_aside(tmp)


def _unreadable_is_set_aside(tmp_path):
    path = tmp_path / "l.json"
    entries = [["きしゃ", "記者", 50, 99], ["かんじ", "漢字", 50, 100]]
    raw = json.dumps({"format": 1, "tick": 100, "entries": entries}, ensure_ascii=False).encode()
    path.write_bytes(raw)
    os.chmod(path, 0)
    result = as_unprivileged("""
        import sys
        from pathlib import Path
        from karukan_engine.dictionary.learning import LearningStore
        drop_privileges()
        store = LearningStore(Path(sys.argv[1]), save_delay=None)
        print(len(store))
        store.record("いぬ", "犬")
        print(store.save())
    """, str(path), open_dirs=(tmp_path,))
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["0", "True"]
    assert "could not be moved" not in result.stderr
    (copy,) = aside_copies(path)
    assert copy.read_bytes() == raw                      # both count-50 entries are still there
    assert LearningStore(path).lookup("いぬ") == ["犬"]


def test_a_file_that_can_be_neither_read_nor_moved_is_never_saved_over(tmp_path, monkeypatch):
    # No real mechanism stops root from renaming in its own directory: simulate the I/O errors.
    path = tmp_path / "l.json"
    path.write_bytes(b"precious")

    def fail(*_args, **_kwargs):
        raise OSError(5, "Input/output error")

    monkeypatch.setattr("karukan_engine.dictionary.learning.read_user_file", fail)
    monkeypatch.setattr(storage, "_move_no_replace", fail)
    store = LearningStore(path, save_delay=None)
    store.record("きしゃ", "記者")
    assert not store.save() and store.lookup("きしゃ") == ["記者"]
    assert path.read_bytes() == b"precious" and not aside_copies(path)


@pytest.mark.parametrize("kind", ["directory", "fifo", "device", "loop"])
def test_a_path_that_is_not_a_file_never_blocks_and_is_set_aside(tmp_path, kind):
    path = tmp_path / "l.json"
    if kind == "directory":
        path.mkdir()
        (path / "inside").write_text("keep me")
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "device":
        path.symlink_to("/dev/zero")
    else:
        path.symlink_to(path)
    store = LearningStore(path, save_delay=None)   # returns: a FIFO or /dev/zero is never read
    assert len(store) == 0
    (copy,) = aside_copies(path)
    if kind == "directory":
        assert (copy / "inside").read_text() == "keep me"
    store.record("きしゃ", "記者")
    assert store.save() and LearningStore(path).lookup("きしゃ") == ["記者"]


def test_set_aside_copies_made_in_the_same_second_keep_their_own_names(tmp_path, monkeypatch):
    monkeypatch.setattr(storage.time, "strftime", lambda *_: "20260101-000000")
    path = tmp_path / "l.json"
    for n in range(3):
        path.write_bytes(b"garbage %d" % n)
        LearningStore(path, save_delay=None)
    assert sorted(p.read_bytes() for p in aside_copies(path)) == [b"garbage 0", b"garbage 1", b"garbage 2"]


def test_the_data_directory_and_files_are_private(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    directory = tmp_path / "karukan"
    directory.mkdir(mode=0o755)
    os.chmod(directory, 0o755)
    old_umask = os.umask(0)
    try:
        store = LearningStore(save_delay=None)
        store.record("きしゃ", "記者")
        assert store.save()
    finally:
        os.umask(old_umask)
    assert directory.stat().st_mode & 0o777 == 0o700
    assert default_path().stat().st_mode & 0o777 == 0o600


def test_a_fresh_data_directory_is_private(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "share"))
    store = LearningStore(save_delay=None)
    store.record("きしゃ", "記者")
    assert store.save()
    assert (tmp_path / "share" / "karukan").stat().st_mode & 0o777 == 0o700


def test_temporary_files_of_dead_writers_are_removed(tmp_path):
    import subprocess as sp
    import threading

    path = tmp_path / "l.json"
    child = sp.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead = int(child.stdout)
    stale = tmp_path / f".l.json.tmp-{dead}-1234"
    mine_gone = tmp_path / f".l.json.tmp-{os.getpid()}-1"            # no thread of ours has ident 1
    mine_live = tmp_path / f".l.json.tmp-{os.getpid()}-{threading.get_ident()}"
    other_live = tmp_path / f".l.json.tmp-{os.getppid()}-99"        # a live process may be writing it
    unrelated = tmp_path / f".other.json.tmp-{dead}-1"
    for p in (stale, mine_gone, mine_live, other_live, unrelated):
        p.write_bytes(b"half")
    LearningStore(path, save_delay=None)
    assert not stale.exists() and not mine_gone.exists()
    assert mine_live.exists() and other_live.exists() and unrelated.exists()


_json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
    max_leaves=20)


@settings(max_examples=60, deadline=None)
@given(raw=st.one_of(st.binary(max_size=200),
                     _json_values.map(lambda v: json.dumps({"format": 1, "tick": 1, "entries": v}).encode())))
def test_whatever_the_file_holds_the_store_starts_and_nothing_is_lost(tmp_path_factory, raw):
    path = tmp_path_factory.mktemp("damage") / "l.json"
    path.write_bytes(raw)
    store = LearningStore(path, save_delay=None)
    copies = [p.read_bytes() for p in aside_copies(path)]
    assert path.exists() or copies == [raw]
    if copies:
        assert copies == [raw]
    elif path.exists():
        assert path.read_bytes() == raw and len(store) >= 0
    store.record("きしゃ", "記者")
    assert store.save()


def test_what_a_load_would_refuse_is_never_recorded(tmp_path):
    path = tmp_path / "l.json"
    store = LearningStore(path, save_delay=None)
    for reading, surface in (("か\x00", "蚊"), ("か", "蚊\ud800"), ("か" * 1100, "蚊"), ("", "蚊"), ("か", "")):
        store.record(reading, surface)
    store.record("か", "蚊")
    assert len(store) == 1 and store.save()
    assert len(LearningStore(path)) == 1 and not aside_copies(path)   # the saved file loads clean
