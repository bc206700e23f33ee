"""Words from the user dictionary and the learning history, as lattice nodes."""

from __future__ import annotations

from array import array
from typing import Iterator

import numpy as np

from karukan_engine.core.types import Source
from karukan_engine.dictionary.learning import LearningStore
from karukan_engine.dictionary.system import SystemDictionary
from karukan_engine.dictionary.user_dictionary import UserDictionary
from karukan_engine.lattice.lattice import ExtraWord, LatticeBuilder
from karukan_engine.lattice.search import SearchSpace

# A user word with no system word of the same reading costs about as much as a common noun.
USER_WORD_COST = 3000
# How much cheaper the last conversion learned for a reading is than the best the dictionary
# offers for it; older conversions of the same reading get this much less (so they no longer tie
# with the last choice and let the connections pick one of them: the last choice wins, as in
# Mozc; the converter also puts it first in its segment, see LatticeConverter).
LEARNED_BONUS = 300
OLDER_LEARNED_PENALTY = 1000
# User-word costs kept at once (each a dictionary search); the cache starts over when full.
MAX_CACHED_COSTS = 100_000
# Readings whose user words (or their absence) are kept: typing looks the same substrings up
# on every key, and a short reading of a big list is many words to check and conjugate.
MAX_CACHED_READINGS = 50_000


def _standalone_cost(dictionary: SystemDictionary, reading: str, pos: int) -> int:
    """A word cost for (reading, pos) that just beats the best system word of that reading when
    the reading is converted on its own (sentence start and end connections included)."""
    span = dictionary.key_range(reading)
    if span is None:
        return USER_WORD_COST
    a, b = span
    matrix = dictionary.matrix
    best = int((dictionary.cost[a:b].astype(np.int64) + matrix[0, dictionary.lid[a:b]]
                + matrix[dictionary.rid[a:b], 0]).min())
    return max(0, best - int(matrix[0, pos]) - int(matrix[pos, 0]) - 1)


class UserWordSource:
    """User words: the POS id of their user POS; a cost that puts them just before the best
    system word of the same reading on its own, while context still decides in a sentence.
    Verbs and adjectives, given in their dictionary form, enter in every conjugated form.

    Sized for whole imported word lists (a million lines): the index holds no object per word,
    only the hash of each form's reading in a sorted array beside the word's number and form's
    number; a hit is checked against the word itself (hashes may collide), and costs are worked
    out when a reading is first looked up. A reading longer than any form is never looked up."""

    def __init__(self, user_dictionary: UserDictionary, dictionary: SystemDictionary) -> None:
        self.user_dictionary = user_dictionary
        self.dictionary = dictionary
        self._version = -1
        self._hashes = np.zeros(0, dtype=np.int64)   # sorted hash of each form's reading
        self._word_ids = np.zeros(0, dtype=np.int32)   # the word each hash is a form of
        self._form_ids = np.zeros(0, dtype=np.int16)   # which of its forms
        self._lengths: tuple[int, ...] = ()   # the form readings' lengths, shortest first
        self._costs: dict[tuple[str, int], int] = {}
        self._found: dict[str, tuple[ExtraWord, ...]] = {}
        self._refresh()   # built with the converter, not at the first key

    def _forms(self, reading: str, surface: str, pos: str) -> list[tuple[str, str, int]]:
        noun = self.dictionary.meta["noun_id"]
        forms = self.dictionary.meta.get("user_pos_forms", {}).get(pos)
        if not forms:
            return [(reading, surface, self.dictionary.user_pos.get(pos, noun))]
        base_surface, base_reading, base_id = forms[0]
        if not (surface.endswith(base_surface) and reading.endswith(base_reading)):
            return [(reading, surface, base_id)]   # not in dictionary form: take it as it is
        stem_surface = surface[: len(surface) - len(base_surface)]
        stem_reading = reading[: len(reading) - len(base_reading)]
        return [(stem_reading + r_end, stem_surface + s_end, pos_id)
                for s_end, r_end, pos_id in forms if stem_reading + r_end]

    def _refresh(self) -> None:
        if self._version == self.user_dictionary.version:
            return
        version = self.user_dictionary.version
        hashes, word_ids, form_ids = array("q"), array("i"), array("h")
        lengths: set[int] = set()
        forms = self.dictionary.meta.get("user_pos_forms", {})
        # POS whose words enter as they are written (nouns...): no forms to work out
        as_written = {pos for pos in self.dictionary.user_pos
                      if not forms.get(pos) or [f[:2] for f in forms[pos]] == [["", ""]]}
        for number, (reading, surface, pos) in enumerate(self.user_dictionary.entries()):
            if pos in as_written:
                hashes.append(hash(reading))
                word_ids.append(number)
                form_ids.append(0)
                lengths.add(len(reading))
                continue
            for form, (form_reading, _s, _p) in enumerate(self._forms(reading, surface, pos)):
                hashes.append(hash(form_reading))
                word_ids.append(number)
                form_ids.append(form)
                lengths.add(len(form_reading))
        order = np.argsort(np.frombuffer(hashes, dtype=np.int64), kind="stable")
        self._hashes = np.frombuffer(hashes, dtype=np.int64)[order]
        self._word_ids = np.frombuffer(word_ids, dtype=np.int32)[order]
        self._form_ids = np.frombuffer(form_ids, dtype=np.int16)[order]
        self._lengths = tuple(sorted(lengths))
        self._costs = {}
        self._found = {}
        self._version = version

    def _cost(self, reading: str, pos: int) -> int:
        key = (reading, pos)
        cost = self._costs.get(key)
        if cost is None:
            if len(self._costs) >= MAX_CACHED_COSTS:
                self._costs.clear()
            cost = self._costs[key] = _standalone_cost(self.dictionary, reading, pos)
        return cost

    def lookup(self, reading: str) -> tuple[ExtraWord, ...]:
        """The user words (forms) spelt exactly `reading`, in the dictionary's order."""
        found = self._found.get(reading)
        if found is None:
            if len(self._found) >= MAX_CACHED_READINGS:
                self._found.clear()
            found = self._found[reading] = self._search(reading)
        return found

    def _search(self, reading: str) -> tuple[ExtraWord, ...]:
        wanted = hash(reading)
        hashes = self._hashes
        a = int(hashes.searchsorted(wanted))
        if a == len(hashes) or hashes[a] != wanted:
            return ()   # most substrings are no user word: one search
        b = int(hashes.searchsorted(wanted, side="right"))
        found = []
        for i in range(a, b):
            word = self.user_dictionary.word(int(self._word_ids[i]))
            form_reading, surface, pos = self._forms(word.reading, word.surface, word.pos)[int(self._form_ids[i])]
            if form_reading == reading:   # not a hash collision
                found.append(ExtraWord(reading, surface, pos, pos, self._cost(reading, pos), Source.USER))
        return tuple(found)

    def words_at(self, text: str, start: int, min_end: int = 0) -> Iterator[ExtraWord]:
        self._refresh()
        rest = len(text) - start
        for length in self._lengths:
            if length > rest:
                return
            if start + length >= min_end:
                yield from self.lookup(text[start:start + length])


class LearnedWordSource:
    """Learned conversions: a node spanning the learned reading, with the POS ids of the words
    it is made of (found by searching the reading alone) and a cost below the best alternative."""

    def __init__(self, store: LearningStore, dictionary: SystemDictionary) -> None:
        self.store = store
        self.dictionary = dictionary
        self._plain = LatticeBuilder(dictionary)
        self._shapes: dict[tuple[str, str], tuple[int, int, int]] = {}
        # the dictionary words that spell a learned pair: (start, end, lid, rid, surface) each
        self._words: dict[tuple[str, str], tuple[tuple[int, int, int, int, str], ...]] = {}
        self._longest = (-1, 0)   # (store version, longest learned reading)

    def _shape(self, reading: str, surface: str) -> tuple[int, int, int]:
        """(lid, rid, cost) of the node for a learned pair."""
        key = (reading, surface)
        if key not in self._shapes:
            self._shapes[key] = self._find_shape(reading, surface)
        return self._shapes[key]

    def words(self, reading: str, surface: str) -> tuple[tuple[int, int, int, int, str], ...]:
        """The dictionary words a learned pair is made of, as (start, end, lid, rid, surface)
        within its reading; one word (its own node) when the dictionary cannot spell it."""
        self._shape(reading, surface)
        return self._words[(reading, surface)]

    def _find_shape(self, reading: str, surface: str) -> tuple[int, int, int]:
        key = (reading, surface)
        lattice = self._plain.build(reading)
        space = SearchSpace(lattice, self.dictionary, 0, len(reading))
        matrix = self.dictionary.matrix
        best_inner = None
        for cost, path in space.paths(max_expansions=3000):
            lid, rid = int(space.lid[path[0]]), int(space.rid[path[-1]])
            inner = cost - int(matrix[0, lid]) - int(matrix[rid, 0])
            best_inner = inner if best_inner is None else min(best_inner, inner)
            if "".join(lattice.surface(n) for n in path) == surface:
                self._words[key] = tuple((int(space.start[n]), int(space.end[n]), int(space.lid[n]),
                                          int(space.rid[n]), lattice.surface(n)) for n in path)
                return lid, rid, max(0, best_inner - LEARNED_BONUS)
        # a surface the dictionary cannot spell (a script variant, say): treat it as a noun
        noun = self.dictionary.meta["noun_id"]
        self._words[key] = ((0, len(reading), noun, noun, surface),)
        return noun, noun, USER_WORD_COST if best_inner is None else max(0, best_inner - LEARNED_BONUS)

    def words_at(self, text: str, start: int, min_end: int = 0) -> Iterator[ExtraWord]:
        if self._longest[0] != self.store.version:
            self._longest = (self.store.version, self.store.max_reading_length)
        longest = self._longest[1]
        for end in range(max(start + 1, min_end), min(len(text), start + longest) + 1):
            reading = text[start:end]
            for rank, surface in enumerate(self.store.lookup(reading)):   # last used first
                lid, rid, cost = self._shape(reading, surface)
                yield ExtraWord(reading, surface, lid, rid, cost + (OLDER_LEARNED_PENALTY if rank else 0),
                                Source.LEARNING)
