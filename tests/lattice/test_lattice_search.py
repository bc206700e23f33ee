"""Viterbi and N-best against a brute-force enumeration of every path (property tests)."""

from __future__ import annotations

import itertools
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tools import build_dictionary  # noqa: E402
from tools import dictionary_synthetic  # noqa: E402

from karukan_engine.dictionary.system import SystemDictionary  # noqa: E402
from karukan_engine.lattice.lattice import LatticeBuilder  # noqa: E402
from karukan_engine.lattice.search import BOS, EOS, INF, SearchSpace  # noqa: E402

KANA = "あいう"


def _random_words(seed: int):
    rng = random.Random(seed)
    words = []
    for length in (1, 1, 1, 2, 2, 2, 2, 3, 3):
        for _ in range(3):
            reading = "".join(rng.choice(KANA) for _ in range(length))
            words.append((reading, rng.randrange(1, 9), rng.randrange(0, 4000), f"W{len(words)}"))
    return words


@pytest.fixture(scope="module")
def dictionary(tmp_path_factory):
    root = tmp_path_factory.mktemp("lat")
    source = dictionary_synthetic.write_source(root / "mozc", words=_random_words(7), seed=3)
    build_dictionary.compile_dictionary(source, root / "out", {})
    return SystemDictionary(root / "out")


def _all_paths(space: SearchSpace):
    """Every path from lo to hi through the space's members, with its cost (brute force)."""
    d = space.dictionary
    by_start: dict[int, list[int]] = {}
    for node in space.members:
        by_start.setdefault(int(space.start[node]), []).append(int(node))
    results = []

    def extend(position: int, prev: int, cost: int, path: list[int]) -> None:
        if position == space.hi:
            edge = int(d.matrix[space.rid[prev], space.lid[EOS]])
            results.append((cost + edge, list(path)))
            return
        for node in by_start.get(position, ()):
            if space.inside_segment and prev != BOS and d.segmenter[space.rid[prev], space.lid[node]]:
                continue
            if prev == BOS:
                choices = space.bos_choices or ((space.bos_rid, 0),)
                edge = min(c + int(d.matrix[r, space.lid[node]]) for r, c in choices)
            else:
                edge = int(d.matrix[space.rid[prev], space.lid[node]])
            extend(int(space.end[node]), node, cost + edge + int(space.cost[node]), path + [node])

    extend(space.lo, BOS, 0, [])
    return results


readings = st.text(alphabet=KANA, min_size=1, max_size=7)


@settings(max_examples=150, deadline=None)
@given(reading=readings, data=st.data())
def test_viterbi_and_nbest_match_brute_force(dictionary, reading, data):
    lattice = LatticeBuilder(dictionary).build(reading)
    lo = data.draw(st.integers(0, len(reading) - 1))
    hi = data.draw(st.integers(lo + 1, len(reading)))
    inside = data.draw(st.booleans())
    bos_rid, eos_lid = data.draw(st.integers(0, 8)), data.draw(st.integers(0, 8))
    choices = tuple(data.draw(st.lists(st.tuples(st.integers(0, 8), st.integers(0, 3000)), max_size=3)))
    space = SearchSpace(lattice, dictionary, lo, hi, bos_rid, eos_lid, inside_segment=inside,
                        bos_choices=choices)
    brute = _all_paths(space)
    if not brute:
        assert not space.reachable and space.best_path() == [] and list(space.paths()) == []
        return
    best_cost = min(c for c, _ in brute)
    assert space.alpha[EOS] == best_cost
    assert space.path_cost(space.best_path()) == best_cost
    produced = list(itertools.islice(space.paths(max_expansions=10**6), len(brute) + 1))
    # every path exactly once, cheapest first, with the right costs
    assert [c for c, _ in produced] == sorted(c for c, _ in brute)
    assert sorted(tuple(p) for _, p in produced) == sorted(tuple(p) for _, p in brute)
    for cost, path in produced:
        assert space.path_cost(path) == cost


@settings(max_examples=60, deadline=None)
@given(reading=readings, data=st.data())
def test_cuts_keep_words_from_crossing_fixed_boundaries(dictionary, reading, data):
    cuts = sorted(set(data.draw(st.lists(st.integers(1, max(1, len(reading) - 1)), max_size=3))))
    lattice = LatticeBuilder(dictionary).build(reading, cuts)
    for node in range(2, len(lattice)):
        for cut in cuts:
            assert not (lattice.start[node] < cut < lattice.end[node])
    space = SearchSpace(lattice, dictionary, 0, len(reading))
    assert space.reachable  # single-character fallbacks always leave a path
    assert "".join(lattice.node_reading(n) for n in space.best_path()) == reading


def test_fallbacks_pass_digits_and_latin_through(dictionary):
    lattice = LatticeBuilder(dictionary).build("あ12ab")
    space = SearchSpace(lattice, dictionary, 0, 5)
    surfaces = [lattice.surface(n) for n in space.best_path()]
    assert "".join(surfaces).endswith("12ab")
    assert "12" in surfaces and "ab" in surfaces
    assert space.alpha[EOS] < INF


@settings(max_examples=120, deadline=None)
@given(reading=readings, data=st.data())
def test_word_bonuses_keep_viterbi_and_nbest_exact(dictionary, reading, data):
    """A word LM's terms (lattice/word_lm.py): a cost per node and a bonus <= 0 on some
    transitions (BOS and EOS ones too); the search must stay exact against brute force."""
    lattice = LatticeBuilder(dictionary).build(reading)
    n = len(lattice)
    extra = [data.draw(st.integers(0, 3000)) if node > EOS else 0 for node in range(n)]
    pairs = {}
    for _ in range(data.draw(st.integers(0, 12))):
        prev = data.draw(st.sampled_from([BOS, *range(2, n)]))
        after = int(lattice.end[prev]) if prev != BOS else 0
        nexts = [c for c in range(2, n) if int(lattice.start[c]) == after] + ([EOS] if after == len(reading) else [])
        if nexts:
            pairs[(prev, data.draw(st.sampled_from(nexts)))] = -data.draw(st.integers(0, 5000))
    import numpy as np

    arrays = (np.array([p for p, _ in pairs], dtype=np.int64), np.array([c for _, c in pairs], dtype=np.int64),
              np.array(list(pairs.values()), dtype=np.int64))
    space = SearchSpace(lattice, dictionary, 0, len(reading), extra_cost=np.array(extra, dtype=np.int64),
                        pairs=arrays)
    plain = SearchSpace(lattice, dictionary, 0, len(reading), extra_cost=np.array(extra, dtype=np.int64))
    brute = []
    for cost, path in _all_paths(plain):
        nodes = [BOS, *path, EOS]
        brute.append((cost + sum(pairs.get((a, b), 0) for a, b in zip(nodes, nodes[1:])), path))
    best_cost = min(c for c, _ in brute)
    assert space.alpha[EOS] == best_cost
    assert space.path_cost(space.best_path()) == best_cost
    produced = list(itertools.islice(space.paths(max_expansions=10**6), len(brute) + 1))
    assert [c for c, _ in produced] == sorted(c for c, _ in brute)
    assert sorted(tuple(p) for _, p in produced) == sorted(tuple(p) for _, p in brute)
    for cost, path in produced:
        assert space.path_cost(path) == cost


@settings(max_examples=100, deadline=None)
@given(reading=readings, data=st.data())
def test_distinct_mode_reaches_every_surface_with_true_costs(dictionary, reading, data):
    """paths(distinct=True) skips suffixes already expanded with the same text: every surface
    still comes out, the first path is still the cheapest, and each cost is its path's."""
    lattice = LatticeBuilder(dictionary).build(reading)
    space = SearchSpace(lattice, dictionary, 0, len(reading))
    text = lambda path: "".join(lattice.surface(x) for x in path)  # noqa: E731
    brute = _all_paths(space)
    produced = list(space.paths(max_expansions=10**6, distinct=True))
    assert produced[0][0] == min(c for c, _ in brute)
    assert {text(p) for _, p in produced} == {text(p) for _, p in brute}
    assert [c for c, _ in produced] == sorted(c for c, _ in produced)
    for cost, path in produced:
        assert space.path_cost(path) == cost
