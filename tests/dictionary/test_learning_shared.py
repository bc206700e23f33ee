"""Learning shared between processes (issue 29, item 5): the service, `karukan keys` and the
IBus engine's in-process backend may each keep a store on the same learning.json. A save reads
the file under an advisory lock, merges it entry by entry (the more recent use wins) and writes
it atomically, so no process drops what another learned. Before, the last writer won."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from karukan_engine.dictionary.learning import LearningStore
from karukan_engine.dictionary.learning_merge import merge_into

REPO = Path(__file__).resolve().parents[2]
LEARNER = """
import sys, time
from pathlib import Path
from karukan_engine.dictionary.learning import LearningStore
path, name, words, go = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3]), Path(sys.argv[4])
store = LearningStore(path, save_delay=None)   # each process its own store on the same file
while not go.exists():
    time.sleep(0.005)
for n in range(words):
    store.record(f"{name}{n}", f"{name}語{n}", "前の")
    if n % 3 == 0:
        assert store.save()
assert store.close()
"""


def test_two_processes_learning_the_same_file_at_once_lose_nothing(tmp_path):
    path, go = tmp_path / "learning.json", tmp_path / "go"
    words = 60
    children = [subprocess.Popen([sys.executable, "-c", LEARNER, str(path), name, str(words), str(go)],
                                 cwd=REPO, stderr=subprocess.PIPE, text=True)
                for name in ("あ", "い")]
    time.sleep(0.3)   # both started and waiting
    go.touch()
    for child in children:
        assert child.wait(timeout=120) == 0, child.stderr.read()
    saved = json.loads(path.read_bytes())
    pairs = {(r, s) for r, s, _count, _last in saved["entries"]}
    want = {(f"{name}{n}", f"{name}語{n}") for name in ("あ", "い") for n in range(words)}
    assert want <= pairs, f"{len(want - pairs)} of {len(want)} choices lost"
    contexts = {(c, r, s) for c, r, s, _count, _last in saved["contexts"]}
    assert {("前の", r, s) for r, s in want} <= contexts
    assert not list(tmp_path.glob(".learning.json.tmp-*"))


def test_a_store_takes_in_what_another_saved_and_the_newer_use_wins(tmp_path):
    path = tmp_path / "learning.json"
    service = LearningStore(path, save_delay=None)
    service.record("きしゃ", "記者")
    assert service.save()
    keys = LearningStore(path, save_delay=None)   # another process, started later
    keys.record("きしゃ", "汽車")        # its tick is past the file's: the newer use
    keys.record("はし", "橋")
    assert keys.save()
    service.record("かんじ", "漢字")
    assert service.save()
    again = LearningStore(path, save_delay=None)
    assert again.lookup("かんじ") == ["漢字"] and again.lookup("はし") == ["橋"]
    assert again.lookup("きしゃ") == ["汽車", "記者"]
    assert service.lookup("はし") == ["橋"]   # the saving store learned it too


def test_what_this_process_forgot_is_not_taken_back_from_the_file(tmp_path):
    path = tmp_path / "learning.json"
    store = LearningStore(path, save_delay=None)
    store.record("きしゃ", "記者", "会議の")
    store.record("はし", "橋")
    assert store.save()
    other = LearningStore(path, save_delay=None)
    other.record("かんじ", "漢字")
    assert other.save()   # the file changed: the next save merges it
    assert store.forget("きしゃ", "記者")
    assert store.save()
    again = LearningStore(path, save_delay=None)
    assert again.lookup("きしゃ") == [] and again.chosen_after("きしゃ", "会議の") is None
    assert again.lookup("かんじ") == ["漢字"] and again.lookup("はし") == ["橋"]
    store.clear()
    assert store.save()
    assert len(LearningStore(path, save_delay=None)) == 0


def test_a_file_damaged_meanwhile_is_set_aside_before_the_save(tmp_path):
    path = tmp_path / "learning.json"
    store = LearningStore(path, save_delay=None)
    store.record("きしゃ", "記者")
    assert store.save()
    path.write_bytes(b"{not json")
    store.record("はし", "橋")
    assert store.save()
    assert [p.read_bytes() for p in tmp_path.glob("learning.json.corrupt-*")] == [b"{not json"]
    assert LearningStore(path, save_delay=None).lookup("はし") == ["橋"]


class _Use:
    def __init__(self, count: int, last: int) -> None:
        self.count, self.last = count, last

    def __repr__(self) -> str:
        return f"_Use({self.count}, {self.last})"


tables = st.dictionaries(st.sampled_from("abcdef"), st.tuples(st.integers(1, 5), st.integers(0, 20)), max_size=6)


@settings(max_examples=200, deadline=None)
@given(mine=tables, theirs=tables, forgotten=st.dictionaries(st.sampled_from("abcdef"), st.integers(-1, 20)),
       cleared=st.integers(-1, 20))
def test_property_merging_keeps_the_more_recent_use_of_each_key(mine, theirs, forgotten, cleared):
    merged = {k: _Use(*v) for k, v in mine.items()}
    taken = merge_into(merged, {k: _Use(*v) for k, v in theirs.items()}, forgotten, cleared)
    for key in set(mine) | set(theirs):
        candidates = [mine[key]] if key in mine else []
        if key in theirs and theirs[key][1] > cleared and theirs[key][1] > forgotten.get(key, -1):
            candidates.append(theirs[key])
        want = max(candidates, key=lambda u: (u[1], u[0])) if candidates else None
        got = merged.get(key)
        assert (None if got is None else (got.count, got.last)) == want
    assert set(taken) <= set(theirs)
