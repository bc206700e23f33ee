"""The lattice is linear in memory (issue 17 item 8: a (n+1)² coverage matrix asked for 6.5 GB
at 80,000 characters and 1 TiB at a million), and its fallback nodes are exactly the
positions no dictionary word covers (property test against a direct recomputation)."""

from __future__ import annotations

import tracemalloc

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tools import build_dictionary  # noqa: E402
from tools import dictionary_synthetic  # noqa: E402

from karukan_engine.dictionary.system import SystemDictionary  # noqa: E402
from karukan_engine.lattice.lattice import LatticeBuilder, char_class  # noqa: E402

WORDS = [("あ", 1, 100, "亜"), ("あい", 2, 200, "愛"), ("いう", 3, 300, "言う"), ("う", 1, 400, "宇"),
         ("あいう", 2, 500, "藍宇")]


@pytest.fixture(scope="module")
def dictionary(tmp_path_factory):
    root = tmp_path_factory.mktemp("mem")
    source = dictionary_synthetic.write_source(root / "mozc", words=WORDS, seed=5)
    build_dictionary.compile_dictionary(source, root / "out", {})
    return SystemDictionary(root / "out")


def test_building_a_long_lattice_takes_linear_memory(dictionary):
    builder = LatticeBuilder(dictionary)
    peaks = []
    for n in (5000, 20000):
        reading = ("あいうえお" * n)[:n]
        tracemalloc.start()
        try:
            lattice = builder.build(reading)
            peaks.append(tracemalloc.get_traced_memory()[1])
        finally:
            tracemalloc.stop()
        assert len(lattice) > n
    # quadratic: 20000² bools alone are 400 MB, and 16 times the 5000-character peak
    assert peaks[1] < 4 * 1.5 * peaks[0] and peaks[1] < 64 << 20


@settings(max_examples=80, deadline=None)
@given(reading=st.text(alphabet="あいうえ1２aZ", min_size=1, max_size=14), cut=st.integers(0, 14))
def test_fallbacks_are_exactly_what_no_dictionary_word_covers(dictionary, reading, cut):
    builder = LatticeBuilder(dictionary)
    cuts = [cut] if 0 < cut < len(reading) else []
    lattice = builder.build(reading, cuts)
    nodes = [(int(lattice.start[k]), int(lattice.end[k]), lattice.source(k)) for k in range(2, len(lattice))]
    words = {(s, e) for s, e, src in nodes if src == "dictionary"}
    fallbacks = {(s, e) for s, e, src in nodes if src == "fallback"}
    limit = [min([c for c in cuts if c > i] or [len(reading)]) for i in range(len(reading))]
    expected = set()
    for i, ch in enumerate(reading):
        if (i, i + 1) not in words:
            expected.add((i, i + 1))
        kind = char_class(ch)
        if kind in ("digit", "alpha") and (i == 0 or char_class(reading[i - 1]) != kind):
            j = i + 1
            while j < limit[i] and char_class(reading[j]) == kind:
                j += 1
            if j > i + 1 and (i, j) not in words:
                expected.add((i, j))
    assert fallbacks == expected
    assert all(e <= limit[s] for s, e, _ in nodes)    # no word crosses a fixed boundary
