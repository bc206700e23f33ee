"""How much learning a crash or a full store can cost (issue 29, item 8): a full store evicts
one entry per new one, the weakest by recency and count; steady typing is saved every few
seconds, not only after a pause."""

from __future__ import annotations

import json
import time

from hypothesis import given, settings
from hypothesis import strategies as st

from karukan_engine.dictionary.eviction import WeakestFirst
from karukan_engine.dictionary.learning import MAX_SAVE_DELAY_S, LearningStore


def test_a_full_store_evicts_one_entry_per_new_choice(tmp_path):
    store = LearningStore(tmp_path / "l.json", save_delay=None, max_entries=100, max_context_entries=100)
    for n in range(100):
        store.record(f"よみ{n}", "語", f"前{n}")
    assert len(store) == 100 and store.context_entries == 100
    for n in range(100, 130):
        store.record(f"よみ{n}", "語", f"前{n}")
        assert len(store) == 100 and store.context_entries == 100   # was 90: a tenth went at once
    assert store.lookup("よみ129") == ["語"] and store.lookup("よみ29") == []
    assert store.lookup("よみ30") == ["語"]   # the oldest went first, one at a time


def test_a_used_entry_outlives_newer_ones_used_once(tmp_path):
    store = LearningStore(tmp_path / "l.json", save_delay=None, max_entries=3)
    for _ in range(5):
        store.record("いつも", "何時も")
    for word in ("あ", "い", "う"):
        store.record(word, word)
    assert store.lookup("いつも") == ["何時も"] and store.lookup("あ") == []


@settings(max_examples=200, deadline=None)
@given(history=st.lists(st.sampled_from(["あ", "い", "う", "え", "お", "か", "き"]), min_size=1, max_size=60),
       bound=st.integers(1, 5))
def test_property_eviction_takes_the_weakest_first_one_at_a_time(tmp_path_factory, history, bound):
    """Against a plain model: after each choice the store holds the same pairs as a table that
    drops, while over its bound, the entry with the lowest (score, last use, key), never the
    choice just made."""
    store = LearningStore(tmp_path_factory.mktemp("b") / "l.json", save_delay=None, max_entries=bound)
    model: dict[tuple[str, str], list[int]] = {}   # key -> [count, last]
    for tick, reading in enumerate(history, 1):
        store.record(reading, reading)
        use = model.setdefault((reading, reading), [0, 0])
        use[0] += 1
        use[1] = tick
        while len(model) > bound:
            weakest = min((u[1] + 10 * u[0], u[1], k) for k, u in model.items() if k != (reading, reading))
            del model[weakest[2]]
        assert sorted(r for r, _ in model) == sorted(r for r in set(history[:tick]) if store.lookup(r))


class _Use:
    def __init__(self, count: int, last: int) -> None:
        self.count, self.last = count, last

    def score(self) -> int:
        return self.last + 10 * self.count


@settings(max_examples=200, deadline=None)
@given(steps=st.lists(st.tuples(st.sampled_from("abcdefgh"), st.booleans()), min_size=1, max_size=80))
def test_property_weakest_first_pops_the_minimum_of_a_changing_table(steps):
    """Entries used again, added and removed: pop() always gives the table's minimum (score,
    last, key), skipping `keep`, however stale the heap has become."""
    uses: dict[str, _Use] = {}
    order = WeakestFirst()
    for tick, (key, pop) in enumerate(steps, 1):
        if pop:
            keep = key if key in uses else None
            rest = [(u.score(), u.last, k) for k, u in uses.items() if k != keep]
            got = order.pop(uses, keep)
            assert got == (min(rest)[2] if rest else None)
            if got is not None:
                del uses[got]
        else:
            use = uses.get(key)
            if use is None:
                use = uses[key] = _Use(0, 0)
            use.count += 1
            use.last = tick
            order.note(key, uses)
        assert len(order) <= 2 * len(uses) + 64 + 1


def test_steady_typing_is_saved_within_a_few_seconds(tmp_path):
    """Saves wait for a pause, but never longer than MAX_SAVE_DELAY_S after the first unsaved
    choice: a kill -9 during steady typing loses at most that much (it was 30 s)."""
    assert MAX_SAVE_DELAY_S <= 5
    path = tmp_path / "l.json"
    store = LearningStore(path)   # the default delays
    try:
        give_up = time.monotonic() + 4 * MAX_SAVE_DELAY_S   # a bound against waiting for ever, not a timing check
        n = 0
        while store.saves == 0 and time.monotonic() < give_up:
            store.record(f"よみ{n}", "語")   # a choice every 0.2 s: never a 2 s pause
            n += 1
            time.sleep(0.2)
        assert store.saves >= 1
        saved = json.loads(path.read_bytes())
        assert len(saved["entries"]) >= 1
    finally:
        store.close()
