"""Lazy per-segment alternatives: LazyCandidates, the lattice converter's segments, the session."""

from __future__ import annotations

import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from karukan_engine.config import Config, LearningSettings
from karukan_engine.core.types import Candidate, ConversionRequest, LazyCandidates, Segment
from karukan_engine.dictionary.learning import LearningStore
from karukan_engine.dictionary.system import DEFAULT_DIR, SystemDictionary
from karukan_engine.lattice.converter import LatticeConverter
from karukan_engine.session import Session, State
from karukan_engine.session.keys_cli import parse_keys


class CountingCompute:
    def __init__(self, items):
        self.items = list(items)
        self.calls = 0

    def __call__(self):
        self.calls += 1
        return self.items


def cand(surface: str) -> Candidate:
    return Candidate(surface, "", "dictionary")


def test_the_head_costs_nothing_and_the_rest_is_computed_once():
    compute = CountingCompute([cand("今日は"), cand("きょうは"), cand("キョウハ")])
    lazy = LazyCandidates(cand("今日は"), compute)
    segment = Segment("きょうは", lazy)   # __post_init__ checks non-emptiness without computing
    assert segment.best == lazy[0] == cand("今日は")
    assert next(iter(lazy)) == cand("今日は") and bool(lazy)
    assert compute.calls == 0 and not lazy.computed
    assert len(lazy) == 3 and lazy[1] == cand("きょうは") and lazy[-1] == cand("キョウハ")
    assert list(lazy) == compute.items and lazy[1:] == tuple(compute.items[1:])
    assert compute.calls == 1 and lazy.computed


def test_equality_and_hash_follow_the_whole_list():
    items = (cand("a"), cand("b"))
    lazy = LazyCandidates(items[0], lambda: items)
    assert lazy == items and hash(lazy) == hash(items)
    assert Segment("x", lazy) == Segment("x", items)
    assert lazy != (cand("a"),)


def test_the_head_stays_first_and_unique():
    lazy = LazyCandidates(cand("b"), lambda: [cand("a"), cand("b"), cand("c")])
    assert [c.surface for c in lazy] == ["b", "a", "c"]


def test_a_failing_computation_leaves_the_head(caplog):
    def broken():
        raise RuntimeError("boom")

    lazy = LazyCandidates(cand("今日"), broken)
    assert list(lazy) == [cand("今日")] and len(lazy) == 1
    assert "RuntimeError" in caplog.text and "今日" not in caplog.text


def test_threads_share_one_computation():
    started = threading.Event()
    release = threading.Event()
    calls = []

    def slow():
        calls.append(1)
        started.set()
        release.wait(5)
        return [cand("a"), cand("b")]

    lazy = LazyCandidates(cand("a"), slow)
    results = []
    threads = [threading.Thread(target=lambda: results.append(tuple(lazy))) for _ in range(4)]
    for thread in threads:
        thread.start()
    started.wait(5)
    release.set()
    for thread in threads:
        thread.join()
    assert calls == [1] and results == [(cand("a"), cand("b"))] * 4


@settings(max_examples=60, deadline=None)
@given(head=st.text("abc", min_size=1, max_size=2),
       rest=st.lists(st.text("abc", min_size=1, max_size=2), max_size=6),
       index=st.integers(-8, 8))
def test_behaves_like_the_tuple_it_stands_for(head, rest, index):
    expected = (cand(head), *(cand(s) for s in rest if s != head))
    lazy = LazyCandidates(cand(head), lambda: [cand(s) for s in rest])
    assert tuple(lazy) == expected and len(lazy) == len(expected)
    if -len(expected) <= index < len(expected):
        assert lazy[index] == expected[index]
    else:
        with pytest.raises(IndexError):
            lazy[index]
    assert lazy[1:3] == expected[1:3]


# -- the lattice converter and the session --------------------------------------------------------

needs_dictionary = pytest.mark.skipif(not (DEFAULT_DIR / "meta.json").is_file(),
                                      reason="compiled dictionary not built")


@pytest.fixture(scope="module")
def system():
    return SystemDictionary()


@pytest.fixture
def converter(system, tmp_path):
    converter = LatticeConverter(system, None, LearningStore(tmp_path / "learning.json"))
    yield converter
    converter.close()


@needs_dictionary
def test_convert_searches_no_alternatives_until_a_list_is_read(converter):
    reading = "きょうはいいてんきですね"
    segments = converter.convert(ConversionRequest(reading))
    assert len(segments) > 1
    assert all(isinstance(s.candidates, LazyCandidates) and not s.candidates.computed for s in segments)
    assert "".join(s.best.surface for s in segments) == converter.live(ConversionRequest(reading))
    assert not any(s.candidates.computed for s in segments)
    first = [c.surface for c in segments[0].candidates]
    assert first[0] == "今日は" and "きょうは" in first and "キョウハ" in first
    assert segments[0].candidates.computed and not segments[1].candidates.computed


@needs_dictionary
def test_lazy_lists_equal_an_eager_search(converter, system):
    reading = "わたしはがくせいです"
    lazy = converter.convert(ConversionRequest(reading))
    fresh = LatticeConverter(system, None, LearningStore(converter.learning.path))
    eager = [Segment(s.reading, tuple(s.candidates)) for s in fresh.convert(ConversionRequest(reading))]
    assert lazy == eager


@needs_dictionary
def test_space_in_a_session_reads_only_the_focused_segment(converter):
    session = Session(converter, Config(learning=LearningSettings(enabled=False)))
    for _, keysym, mods in parse_keys("kyouhaiitenkidesune<space>"):
        view = session.process_key(keysym, mods)
    assert session.state is State.CONVERSION
    assert view.candidates is not None and view.candidates.items[0].text == "今日は"
    segments = converter.convert(ConversionRequest("きょうはいいてんきですね"))   # the cached result
    assert [s.candidates.computed for s in segments] == [True] + [False] * (len(segments) - 1)
    session.process_key(*next((k, m) for _, k, m in parse_keys("<Right>")))
    assert segments[1].candidates.computed
