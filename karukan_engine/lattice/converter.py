"""LatticeConverter: the dictionary converter (Converter protocol) over Mozc's OSS data.

convert(): best path (Viterbi) -> bunsetsu segments (Mozc's segmenter rules, user-fixed
boundaries kept); each segment's candidates are the N-best spellings of its span inside one
bunsetsu, between its neighbours on the best path, followed by learned words and variants.
They are computed lazily (LazyCandidates): a segment costs a search only when its list is read.
candidates(): N-best whole-reading paths, deduplicated by surface.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from functools import partial
from pathlib import Path
from typing import Sequence

from karukan_engine.conversion.types import Candidate, ConversionRequest, LazyCandidates, Segment
from karukan_engine.dictionary.learning import LearningStore
from karukan_engine.dictionary.system import DEFAULT_DIR, SystemDictionary
from karukan_engine.dictionary.user_dictionary import UserDictionary
from karukan_engine.lattice.candidate_filter import SegmentFilter, Spelling
from karukan_engine.lattice.context import START, ContextAnalyzer
from karukan_engine.lattice.lattice import Lattice, LatticeBuilder
from karukan_engine.lattice.search import SearchSpace
from karukan_engine.lattice.segmenter import fixed_cuts, segment_spans
from karukan_engine.lattice.sources import LearnedWordSource, UserWordSource
from karukan_engine.lattice.variants import (
    load_symbols,
    merge,
    number_variants,
    script_variants,
    symbol_variants,
)

SEGMENT_ALTERNATIVES = 20
# bounds on A* pops: whole-reading N-best, and each segment's alternatives
MAX_EXPANSIONS = 20000
SEGMENT_EXPANSIONS = 200
# Segment candidates depend only on the span's text, its neighbours' POS ids and the user data,
# so resizing or re-converting reuses the segments that did not change.
SEGMENT_CACHE_SIZE = 256


class _Analysis:
    """One reading's lattice and its unconstrained search (cached between calls)."""

    def __init__(self, lattice: Lattice, space: SearchSpace, cuts: list[int]) -> None:
        self.lattice = lattice
        self.space = space
        self.cuts = cuts
        self.path = space.best_path()
        self.segments: list[Segment] | None = None   # convert()'s result, computed once


class LatticeConverter:
    def __init__(self, dictionary: SystemDictionary, user_dictionary: UserDictionary | None = None,
                 learning: LearningStore | None = None) -> None:
        self.dictionary = dictionary
        self.user_dictionary = user_dictionary
        self.learning = learning
        sources = []
        if user_dictionary is not None:
            sources.append(UserWordSource(user_dictionary, dictionary))
        if learning is not None:
            sources.append(LearnedWordSource(learning, dictionary))
        self.builder = LatticeBuilder(dictionary, sources)
        self.symbols = load_symbols(dictionary.directory / "symbols.tsv")
        self.context = ContextAnalyzer(dictionary)
        self.use_context = True   # the first word connects to the end of request.left_context
        self._lock = threading.Lock()
        self._cache: tuple[tuple, _Analysis] | None = None
        self._segment_cache: OrderedDict[tuple, tuple[Candidate, ...]] = OrderedDict()

    @classmethod
    def load_default(cls, directory: Path = DEFAULT_DIR) -> "LatticeConverter":
        """The bundled system dictionary with the user's dictionary and learning history.
        Raises FileNotFoundError when the compiled dictionary is missing, DictionaryFormatError
        when it is damaged."""
        dictionary = SystemDictionary(directory)
        user = UserDictionary(pos_names=dictionary.user_pos)
        return cls(dictionary, user, LearningStore())

    def clear_cache(self) -> None:
        """Forget the last analysis (benchmarks; the cache is otherwise keyed safely)."""
        with self._lock:
            self._cache = None
            self._segment_cache.clear()

    # -- analysis ------------------------------------------------------------------------------
    def _generations(self) -> tuple[int, int]:
        if self.user_dictionary is not None:
            self.user_dictionary.reload_if_changed()
        return (self.user_dictionary.generation if self.user_dictionary else 0,
                self.learning.generation if self.learning else 0)

    def _analyse(self, request: ConversionRequest) -> _Analysis:
        cuts = fixed_cuts(len(request.reading), tuple(request.fixed_lengths))
        start = self.context.left_neighbours(request.left_context) if self.use_context else START
        key = (request.reading, tuple(cuts), start, self._generations())
        with self._lock:
            if self._cache is not None and self._cache[0] == key:
                return self._cache[1]
        lattice = self.builder.build(request.reading, cuts)
        space = SearchSpace(lattice, self.dictionary, 0, len(request.reading), bos_choices=start)
        analysis = _Analysis(lattice, space, cuts)
        with self._lock:
            self._cache = (key, analysis)
        return analysis

    # -- Converter protocol --------------------------------------------------------------------
    def live(self, request: ConversionRequest) -> str:
        if not request.reading:
            return ""
        analysis = self._analyse(request)
        return "".join(analysis.lattice.surface(n) for n in analysis.path)

    def candidates(self, request: ConversionRequest, n: int) -> list[Candidate]:
        if not request.reading or n <= 0:
            return []
        analysis = self._analyse(request)
        found = []
        seen: set[str] = set()
        for _, path in analysis.space.paths(MAX_EXPANSIONS):
            surface = "".join(analysis.lattice.surface(node) for node in path)
            if surface not in seen:
                seen.add(surface)
                found.append(Candidate(surface, "", _source_of(analysis.lattice, path)))
                if len(found) >= n:
                    break
        tail = script_variants(request.reading) if len(request.reading) <= 40 else []
        return merge(found, tail, limit=n)

    def convert(self, request: ConversionRequest) -> list[Segment]:
        if not request.reading:
            return []
        analysis = self._analyse(request)
        if analysis.segments is None:
            analysis.segments = self._segments(request.reading, analysis)
        return list(analysis.segments)

    def _segments(self, reading: str, analysis: _Analysis) -> list[Segment]:
        lattice, path, space = analysis.lattice, analysis.path, analysis.space
        spans = segment_spans(
            [int(space.start[x]) for x in path], [int(space.end[x]) for x in path],
            [int(space.lid[x]) for x in path], [int(space.rid[x]) for x in path],
            self.dictionary.segmenter, len(reading), analysis.cuts)
        generations = self._generations()
        segments = []
        for lo, hi in spans:
            inner = [x for x in path if lo <= space.start[x] and space.end[x] <= hi]
            before = [x for x in path if space.end[x] == lo]
            after = [x for x in path if space.start[x] == hi]
            left = ((int(space.rid[before[-1]]), 0),) if before else space.bos_choices
            eos_lid = int(space.lid[after[0]]) if after else 0
            best = Candidate("".join(lattice.surface(x) for x in inner), "",
                             _source_of(lattice, inner))
            key = (reading[lo:hi], left, eos_lid, best, generations)
            with self._lock:
                candidates = self._segment_cache.get(key)
                if candidates is not None:
                    self._segment_cache.move_to_end(key)
                else:
                    candidates = self._segment_cache[key] = LazyCandidates(
                        best, partial(self._segment_candidates, lattice, lo, hi, left, eos_lid, best))
                    while len(self._segment_cache) > SEGMENT_CACHE_SIZE:
                        self._segment_cache.popitem(last=False)
            segments.append(Segment(reading[lo:hi], candidates))
        return segments

    def record(self, pairs: Sequence[tuple[str, str]], left_context: str = "") -> None:
        """Learn in memory; the store writes its file in the background (never on this key)."""
        if self.learning is None:
            return
        for reading, surface in pairs:
            self.learning.record(reading, surface)

    def save(self) -> bool:
        """Write pending learning now. True when everything is on disk."""
        return self.learning.flush() if self.learning is not None else True

    def close(self) -> None:
        """Stop background saving and write what is pending (shutdown)."""
        if self.learning is not None:
            self.learning.close()

    # -- segment candidates --------------------------------------------------------------------
    def _segment_candidates(self, lattice: Lattice, lo: int, hi: int, left: tuple[tuple[int, int], ...],
                            eos_lid: int, best: Candidate) -> list[Candidate]:
        """Runs when a segment's list is first read, in whichever thread reads it (the lattice is
        only read, apart from its surface cache, a dict)."""
        reading = lattice.reading[lo:hi]
        space = SearchSpace(lattice, self.dictionary, lo, hi, eos_lid=eos_lid, inside_segment=True,
                            bos_choices=left)
        if not space.reachable:   # no single-bunsetsu spelling: let words of any kind join
            space = SearchSpace(lattice, self.dictionary, lo, hi, eos_lid=eos_lid, bos_choices=left)
        alternatives = []
        seen = set()
        plausible = SegmentFilter()
        for cost, nodes in space.paths(SEGMENT_EXPANSIONS):
            surface = "".join(lattice.surface(x) for x in nodes)
            if surface in seen:
                continue
            seen.add(surface)
            source = _source_of(lattice, nodes)
            structure = sum(self.dictionary.connection(int(lattice.rid[a]), int(lattice.lid[b]))
                            for a, b in zip(nodes, nodes[1:]))
            if plausible.keep(Spelling(surface, int(cost), structure, len(nodes), source != "dictionary")):
                alternatives.append(Candidate(surface, "", source))
                if len(alternatives) >= SEGMENT_ALTERNATIVES:
                    break
        learned = [Candidate(s, "", "learning") for s in self.learning.lookup(reading)] if self.learning else []
        return merge([best], learned, alternatives, number_variants(best.surface),
                     script_variants(reading), symbol_variants(reading, self.symbols))


def _source_of(lattice: Lattice, nodes: Sequence[int]) -> str:
    sources = {lattice.source(x) for x in nodes}
    return next((s for s in ("learning", "user") if s in sources), "dictionary")
