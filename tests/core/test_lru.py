"""The one LRU behind every cache: it keeps what a dict with least-recently-used eviction keeps."""

import pytest
from hypothesis import given, strategies as st

from karukan_engine.core.lru import Lru

KEYS = st.integers(0, 7)
OPERATIONS = st.lists(st.one_of(
    st.tuples(st.just("put"), KEYS, st.integers()),
    st.tuples(st.just("get"), KEYS, st.none()),
    st.tuples(st.just("pop"), KEYS, st.none()),
), max_size=60)


class Reference:
    """A plain dict and a recency list, written the slow obvious way."""

    def __init__(self, capacity: int) -> None:
        self.capacity, self.values, self.order = capacity, {}, []

    def touch(self, key) -> None:
        if key in self.order:
            self.order.remove(key)
        self.order.append(key)

    def put(self, key, value) -> None:
        self.values[key] = value
        self.touch(key)
        while len(self.order) > self.capacity:
            del self.values[self.order.pop(0)]

    def get(self, key):
        if key not in self.values:
            return "absent"
        self.touch(key)
        return self.values[key]

    def pop(self, key):
        if key not in self.values:
            return "absent"
        self.order.remove(key)
        return self.values.pop(key)


@given(st.integers(0, 5), OPERATIONS)
def test_it_behaves_like_a_dict_with_lru_eviction_and_never_exceeds_its_bound(capacity, operations):
    lru, reference = Lru(capacity), Reference(capacity)
    for name, key, value in operations:
        if name == "put":
            lru.put(key, value)
            reference.put(key, value)
        elif name == "get":
            assert lru.get(key, "absent") == reference.get(key)
        else:
            assert lru.pop(key, "absent") == reference.pop(key)
        assert len(lru) <= capacity
        assert lru.keys() == reference.order          # same entries, same recency order
        assert all(k in lru for k in reference.order)


def test_a_stored_none_is_told_from_a_missing_key():
    lru = Lru(2)
    lru.put("nothing aligns", None)
    missing = object()
    assert lru.get("nothing aligns", missing) is None
    assert lru.get("never stored", missing) is missing


def test_membership_and_listing_leave_the_recency_alone():
    lru = Lru(2)
    lru.put("a", 1)
    lru.put("b", 2)
    assert "a" in lru and list(lru) == ["a", "b"]
    lru.put("c", 3)                                  # a was not touched: it goes first
    assert lru.keys() == ["b", "c"]
    assert lru.peek("b") == 2 and lru.peek("a", "gone") == "gone"
    lru.put("d", 4)                                  # peeking left b the least recent
    assert lru.keys() == ["c", "d"]


def test_a_negative_capacity_is_refused():
    with pytest.raises(ValueError):
        Lru(-1)
