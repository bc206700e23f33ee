"""The word lattice over a reading: every dictionary word matching at each position, plus words
from extra sources (user dictionary, learning) and fallback nodes so a path always exists.

Nodes are kept as parallel numpy arrays (start, end, lid, rid, cost) for the vectorised search;
surfaces are decoded only for the nodes a result uses.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Iterable, Protocol

import numpy as np

from karukan_engine.core.types import Source
from karukan_engine.dictionary.system import SystemDictionary

# A kana no word covers stays kana, but only as a last resort.
UNKNOWN_KANA_COST = 12000
# Digits and Latin letters have no dictionary words: a run of them passes through cheaply.
PASS_THROUGH_COST = 2000
PASS_THROUGH_CHAR_COST = 6000
# A reading's entries are stored cheapest first; the long tail (rare kanji) only slows the search.
MAX_ENTRIES_PER_READING = 120
# No dictionary reading is this long; bounding the prefix search keeps a build linear in the reading.
MAX_WORD_CHARS = 256
BOS, EOS = 0, 1


@dataclass(frozen=True)
class ExtraWord:
    """A word from outside the system dictionary (user dictionary, learning history)."""

    reading: str
    surface: str
    lid: int
    rid: int
    cost: int
    source: Source


class WordSource(Protocol):
    """Words to add to the lattice for a reading that starts at some position (those ending at
    min_end or after; others may come too)."""

    def words_at(self, text: str, start: int, min_end: int = 0) -> Iterable[ExtraWord]: ...


def char_class(ch: str) -> str:
    if "0" <= ch <= "9" or "０" <= ch <= "９":
        return "digit"
    if ch.isascii() and ch.isalpha() or "Ａ" <= ch <= "Ｚ" or "ａ" <= ch <= "ｚ":
        return "alpha"
    if "\u3041" <= ch <= "\u309f" or ch == "ー":
        return "kana"
    return "other"


@dataclass
class Lattice:
    """All candidate words of one reading. Index 0 is BOS, index 1 is EOS; the words follow in
    order of their end (LatticeBuilder.extend relies on it)."""

    reading: str
    start: np.ndarray
    end: np.ndarray
    lid: np.ndarray
    rid: np.ndarray
    cost: np.ndarray
    # surface id of dictionary nodes (see SystemDictionary.surface); other nodes: _extra_surfaces
    surface_id: np.ndarray
    _extra_surfaces: dict[int, str]
    _extra_sources: dict[int, str]
    _decode: Callable[[str, int], str] = field(repr=False, default=lambda r, i: r)
    # system dictionary entry of each node, -1 for the others (the word LM's ids are per entry)
    entry: np.ndarray | None = field(repr=False, default=None)
    cuts: tuple[int, ...] = ()   # positions no word crosses

    def __len__(self) -> int:
        return int(self.start.size)

    def surface(self, node: int) -> str:
        text = self._extra_surfaces.get(node)
        if text is None:   # decode once; N-best revisits the same nodes many times
            text = self._decode(self.node_reading(node), int(self.surface_id[node]))
            self._extra_surfaces[node] = text
        return text

    def source(self, node: int) -> Source:
        return self._extra_sources.get(node, Source.DICTIONARY)

    def node_reading(self, node: int) -> str:
        return self.reading[self.start[node]:self.end[node]]


class LatticeBuilder:
    """Builds lattices from the system dictionary plus any extra word sources."""

    def __init__(self, dictionary: SystemDictionary, sources: Iterable[WordSource] = ()) -> None:
        self.dictionary = dictionary
        self.sources = list(sources)
        meta = dictionary.meta
        self._class_pos = {"kana": meta["noun_id"], "digit": meta["number_id"],
                           "alpha": meta["alphabet_id"], "other": meta["symbol_id"]}

    def build(self, reading: str, cuts: Iterable[int] = ()) -> Lattice:
        """cuts: positions no word may cross (boundaries the user fixed)."""
        cuts = tuple(sorted({c for c in cuts if 0 < c < len(reading)}))
        return self._assemble(reading, cuts, None, 0)

    def extend(self, base: Lattice, reading: str) -> Lattice | None:
        """The lattice of `reading`, which continues base's reading, from base's nodes and the
        new words ending past it: node for node what build(reading) gives (the nodes are
        ordered by end, so base's come first unchanged). None when base cannot be extended:
        it has cuts, or a digit/Latin run goes on across the join (its pass-through node
        grows)."""
        old = len(base.reading)
        if base.cuts or old == 0 or len(reading) <= old or not reading.startswith(base.reading):
            return None
        joined = char_class(reading[old - 1])
        if joined in ("digit", "alpha") and char_class(reading[old]) == joined:
            return None
        return self._assemble(reading, (), base, old)

    def _assemble(self, reading: str, cuts: tuple[int, ...], base: Lattice | None, old: int) -> Lattice:
        """Nodes ending past `old` (all of them without a base), after base's."""
        d = self.dictionary
        n = len(reading)
        limit = _next_cut_table(n, cuts)
        # Dictionary words as runs of entries (position, end, first entry, count), gathered with
        # one vectorised index at the end; other nodes one by one. In generation order each
        # position has its dictionary words, extra words, fallbacks; the nodes are then put in
        # order of end (stable), so a longer reading's lattice starts with a shorter one's.
        run_start: list[int] = []
        run_end: list[int] = []
        run_first: list[int] = []
        run_count: list[int] = []
        extra_rows: list[tuple[int, int, int, int, int]] = []   # start, end, lid, rid, cost
        extra_surfaces: list[str] = []
        extra_sources: list[str] = []
        for i in range(n):
            covered: set[int] = set()   # ends of the dictionary words starting at i (O(n) memory overall)
            for word in d.prefixes(reading[i:min(limit[i], i + MAX_WORD_CHARS)]):
                span = d.key_range(word)
                if span is None:
                    continue
                j = i + len(word)
                covered.add(j)
                if j <= old:   # base has it
                    continue
                a, b = span
                run_start.append(i)
                run_end.append(j)
                run_first.append(a)
                run_count.append(min(b - a, MAX_ENTRIES_PER_READING))
            for source in self.sources:
                for extra in source.words_at(reading, i, old + 1):
                    j = i + len(extra.reading)
                    if old < j <= limit[i]:
                        extra_rows.append((i, j, extra.lid, extra.rid, extra.cost))
                        extra_surfaces.append(extra.surface)
                        extra_sources.append(extra.source)
            for j, surface, pos, cost in self._fallbacks(reading, i, limit[i], covered):
                if j > old:
                    extra_rows.append((i, j, pos, pos, cost))
                    extra_surfaces.append(surface)
                    extra_sources.append("fallback")

        counts = np.array(run_count, dtype=np.int64)
        run_offsets = np.cumsum(counts) - counts
        # entry indices of all runs, run after run: first + 0, first + 1, ... for each run
        entries = np.arange(int(counts.sum())) + np.repeat(np.array(run_first, dtype=np.int64) - run_offsets,
                                                           counts)
        extra = np.array(extra_rows, dtype=np.int64).reshape(-1, 5)
        starts = np.concatenate([np.repeat(np.array(run_start, dtype=np.int64), counts), extra[:, 0]])
        ends = np.concatenate([np.repeat(np.array(run_end, dtype=np.int64), counts), extra[:, 1]])
        # by end, then start; at the same span dictionary words before the others (stable)
        order = np.lexsort((starts, ends))
        first = 2 if base is None else len(base)

        def column(name: str, words: np.ndarray, others: np.ndarray, dtype, bos_eos=(0, 0)) -> np.ndarray:
            before = np.array(bos_eos, dtype=dtype) if base is None else getattr(base, name).astype(dtype, copy=False)
            return np.concatenate([before, np.concatenate([words.astype(dtype), others.astype(dtype)])[order]])

        no_surface = np.zeros(len(extra_rows), dtype=np.int32)   # extras keep their text aside
        # node number of every extra node after sorting, to key its surface and source
        position_of = np.empty(order.size, dtype=np.int64)
        position_of[order] = np.arange(order.size) + first
        extra_nodes = position_of[entries.size:].tolist()
        if base is None:
            surfaces = {0: "", 1: ""}
            sources = {0: "bos", 1: "eos"}
        else:   # base's decoded surfaces stay valid: its nodes keep their numbers
            surfaces = dict(base._extra_surfaces)
            sources = dict(base._extra_sources)
        surfaces.update(zip(extra_nodes, extra_surfaces))
        sources.update(zip(extra_nodes, extra_sources))
        start = column("start", np.repeat(np.array(run_start, dtype=np.int32), counts), extra[:, 0], np.int32)
        end = column("end", np.repeat(np.array(run_end, dtype=np.int32), counts), extra[:, 1], np.int32)
        start[EOS] = end[EOS] = n
        return Lattice(
            reading=reading,
            start=start,
            end=end,
            lid=column("lid", d.lid[entries], extra[:, 2], np.int32),
            rid=column("rid", d.rid[entries], extra[:, 3], np.int32),
            cost=column("cost", d.cost[entries], extra[:, 4], np.int64),
            surface_id=column("surface_id", d.surface_ids[entries], no_surface, np.int32),
            _extra_surfaces=surfaces,
            _extra_sources=sources,
            _decode=d.surface,
            entry=column("entry", entries, np.full(len(extra_rows), -1), np.int64, (-1, -1)),
            cuts=cuts,
        )

    def _fallbacks(self, reading: str, i: int, limit: int, covered: set[int]):
        """Single characters nothing covers, and whole digit/Latin runs passing through.
        covered: the ends of the dictionary words that start at i."""
        ch = reading[i]
        kind = char_class(ch)
        pos = self._class_pos[kind]
        if i + 1 not in covered:
            yield i + 1, ch, pos, UNKNOWN_KANA_COST if kind == "kana" else PASS_THROUGH_CHAR_COST
        if kind in ("digit", "alpha") and (i == 0 or char_class(reading[i - 1]) != kind):
            j = i + 1
            while j < limit and char_class(reading[j]) == kind:
                j += 1
            if j > i + 1 and j not in covered:
                yield j, reading[i:j], pos, PASS_THROUGH_COST


def _next_cut_table(n: int, inner: tuple[int, ...]) -> list[int]:
    """For each position, the farthest end a word starting there may have (inner: the cuts
    inside the reading, sorted: build() keeps them so on the lattice)."""
    table = []
    k = 0
    for i in range(n):
        while k < len(inner) and inner[k] <= i:
            k += 1
        table.append(inner[k] if k < len(inner) else n)
    return table
