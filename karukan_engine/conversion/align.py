"""Align a surface (e.g. the model's output) back to dictionary words and reading spans.

A constrained lattice: the usual Viterbi over dictionary words of the reading, but a word may
only be used where its surface is exactly the next piece of the target surface. Kana, digits and
Latin that equal the reading character for character are always allowed (at an unknown-word
cost), so text the dictionary lacks still aligns when it is spelled like its reading. The best
path gives the words; the segmenter groups them into bunsetsu, which become the conversion's
segments. No path: the caller makes the whole text one segment.

The path cost is the same quantity the lattice minimises, so it also serves as the "lattice
cost" of a candidate the lattice itself did not propose.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from functools import lru_cache
from typing import Protocol, Sequence

import numpy as np

from karukan_engine.kana import to_hiragana

# Cost of a character that no dictionary word covers but matches the reading as typed.
UNKNOWN_CHAR_COST = 4000
# Words tried per reading once the surface is free (entries come cheapest first).
FREE_WORDS = 40


class Lexicon(Protocol):
    """What alignment needs from the system dictionary (karukan_engine.dictionary.system)."""

    matrix: np.ndarray
    meta: dict

    @property
    def segmenter(self) -> np.ndarray: ...
    def prefixes(self, text: str) -> list[str]: ...
    def lookup(self, reading: str) -> list: ...


@dataclass(frozen=True)
class AlignedWord:
    reading: str
    surface: str
    lid: int
    rid: int
    known: bool = True      # False: no dictionary word, the text as typed


@dataclass(frozen=True)
class Alignment:
    words: tuple[AlignedWord, ...]
    cost: int

    def segments(self, segmenter: np.ndarray | None = None) -> list[tuple[str, str]]:
        """(reading, surface) per bunsetsu: words joined unless the segmenter puts a boundary."""
        groups: list[list[AlignedWord]] = []
        for word in self.words:
            if groups and not _boundary(groups[-1][-1], word, segmenter):
                groups[-1].append(word)
            else:
                groups.append([word])
        return [("".join(w.reading for w in g), "".join(w.surface for w in g)) for g in groups]


def _boundary(left: AlignedWord, right: AlignedWord, segmenter: np.ndarray | None) -> bool:
    if segmenter is None:
        return True
    return bool(segmenter[left.rid, right.lid])


def _same_char(reading_char: str, surface_char: str) -> bool:
    if reading_char == surface_char:
        return True
    if to_hiragana(surface_char) == reading_char:
        return True
    return unicodedata.normalize("NFKC", surface_char) == unicodedata.normalize("NFKC", reading_char)


class Aligner:
    def __init__(self, lexicon: Lexicon, max_words_per_reading: int = 400) -> None:
        self.lexicon = lexicon
        self.matrix = lexicon.matrix
        self.unknown_pos = int(lexicon.meta.get("noun_id", 0))
        self.max_words = max_words_per_reading
        self._words = lru_cache(maxsize=20000)(self._words_uncached)
        self._index = lru_cache(maxsize=64)(self._index_uncached)

    def _words_uncached(self, reading: str) -> tuple[dict[str, list[tuple]], tuple[tuple, ...]]:
        """The words of one reading as the index holds them: grouped by the first character of
        their surface (in entry order), and the cheapest few. Readings recur at every position
        of every reading, so grouping them once keeps the per-reading index cheap."""
        by_first: dict[str, list[tuple]] = {}
        words = [(reading, e.surface, e.lid, e.rid, e.cost) for e in self.lexicon.lookup(reading)[: self.max_words]]
        for word in words:
            if word[1]:
                by_first.setdefault(word[1][0], []).append(word)
        return by_first, tuple(words[:FREE_WORDS])

    def _index_uncached(self, reading: str) -> tuple[tuple[dict, list], ...]:
        """Per reading position: words starting there, by the first character of their surface
        (a constrained step only looks at words that can continue the surface), and the
        cheapest few of each reading (for the free part after a prefix)."""
        index = []
        for i in range(len(reading)):
            by_first: dict[str, list[tuple]] = {}
            cheapest: list[tuple] = []
            for word_reading in self.lexicon.prefixes(reading[i:]):
                grouped, few = self._words(word_reading)
                for first, words in grouped.items():
                    found = by_first.get(first)
                    if found is None:
                        by_first[first] = list(words)
                    else:
                        found.extend(words)
                cheapest.extend(few)
            index.append((by_first, cheapest))
        return tuple(index)

    def align(self, reading: str, surface: str) -> Alignment | None:
        """The cheapest dictionary path that reads `reading` and writes exactly `surface`."""
        return self.align_many(reading, [surface])[0]

    def align_many(self, reading: str, surfaces: Sequence[str]) -> list[Alignment | None]:
        """align() of each surface, in one search: the N-best spellings of a reading mostly
        share their beginnings, and a shared beginning is searched once (a surface's result is
        exactly its own search's, ties included)."""
        found: list[Alignment | None] = [None] * len(surfaces)
        wanted = [k for k, surface in enumerate(surfaces) if surface]
        if reading and wanted:
            results = self._search(reading, [surfaces[k] for k in wanted], prefix_only=False)
            for k, result in zip(wanted, results):
                found[k] = result
        return found

    def best_with_prefix(self, reading: str, prefix: str) -> Alignment | None:
        """The cheapest path whose surface starts with `prefix` (free after it)."""
        if not reading:
            return None
        return self._search(reading, [prefix], prefix_only=True)[0]

    def _search(self, reading: str, surfaces: Sequence[str], prefix_only: bool) -> list[Alignment | None]:
        """Viterbi over (reading position, node of the surfaces' prefix trie). In prefix mode
        (one surface, the prefix) the node of the whole prefix is free: any word may follow."""
        trie = _PrefixTrie(surfaces)
        n = len(reading)
        free_node = trie.node_of[surfaces[0]] if prefix_only else -1
        # best[(i, node)][rid] = (cost, previous (i, node, rid), word as AlignedWord's fields)
        best: dict[tuple[int, int], dict[int, tuple[int, tuple | None, tuple | None]]] = {
            (0, 0): {0: (0, None, None)}
        }
        index = self._index(reading)
        pos = self.unknown_pos
        for i in range(n):
            by_first, cheapest = index[i]
            # nodes in number order: each surface's prefixes shortest first, as one surface's
            # search visits them, so a tie keeps the same (first) path as there
            for node, prefix in enumerate(trie.prefixes):
                states = best.get((i, node))
                if not states:
                    continue
                if node == free_node:
                    steps = [((w_reading, w_surface, lid, rid, True), (i + len(w_reading), node), lid, rid, cost)
                             for w_reading, w_surface, lid, rid, cost in cheapest]
                    steps.append(((reading[i], reading[i], pos, pos, False), (i + 1, node), pos, pos,
                                  UNKNOWN_CHAR_COST))
                else:
                    steps = self._constrained_steps(trie, node, prefix, by_first, reading, i, free_node)
                if not steps:
                    continue
                # the words that may follow depend on (i, node), not on a state's POS: matched
                # once, then relaxed from every state (in the index's order: a tie keeps the first)
                lids = np.array([step[2] for step in steps], dtype=np.intp)
                for rid, (cost, _, _) in list(states.items()):
                    back = (i, node, rid)
                    for (word, at, _lid, w_rid, w_cost), connection in zip(steps, self.matrix[rid][lids].tolist()):
                        new = cost + connection + w_cost
                        targets = best.get(at)
                        if targets is None:
                            targets = best[at] = {}
                        old = targets.get(w_rid)
                        if old is None or new < old[0]:
                            targets[w_rid] = (new, back, word)
        return [self._path(best, n, trie.node_of[surface]) for surface in surfaces]

    def _constrained_steps(self, trie: "_PrefixTrie", node: int, prefix: str, by_first: dict,
                           reading: str, i: int, free_node: int) -> list[tuple]:
        """((reading, surface, lid, rid, known), where it leads, lid, rid, cost) of each word
        that continues some surface from `node` at reading position i: per next character,
        the dictionary's words in the index's order, then the character as typed (unknown).
        free_node: the prefix's node in prefix mode (-1 otherwise)."""
        steps = []
        pos = self.unknown_pos
        for char, child in trie.children[node]:
            for word_reading, w_surface, lid, w_rid, w_cost in by_first.get(char, ()):
                target = trie.node_of.get(prefix + w_surface)
                if target is None:
                    if free_node < 0 or not w_surface.startswith(trie.prefixes[free_node][len(prefix):]):
                        continue
                    target = free_node   # the word finishes the prefix and goes on
                steps.append(((word_reading, w_surface, lid, w_rid, True), (i + len(word_reading), target),
                              lid, w_rid, w_cost))
            if _same_char(reading[i], char):
                steps.append(((reading[i], char, pos, pos, False), (i + 1, child), pos, pos, UNKNOWN_CHAR_COST))
        return steps

    def _path(self, best: dict, n: int, node: int) -> Alignment | None:
        """The cheapest finished path into (n, node), with its connection to the end."""
        final = best.get((n, node))
        if not final:
            return None
        rid, (cost, back, word) = min(
            ((r, v) for r, v in final.items()), key=lambda item: item[1][0] + int(self.matrix[item[0], 0])
        )
        total = cost + int(self.matrix[rid, 0])
        words = []
        while word is not None and back is not None:
            words.append(AlignedWord(*word))
            i, j, r = back
            _, back, word = best[(i, j)][r]
        words.reverse()
        return Alignment(_merge_unknown(words), total)


class _PrefixTrie:
    """The prefixes of some surfaces, one node each, numbered after their parent's."""

    def __init__(self, surfaces: Sequence[str]) -> None:
        self.prefixes = [""]
        self.node_of = {"": 0}
        self.children: list[list[tuple[str, int]]] = [[]]   # (next character, its node), first seen first
        for surface in surfaces:
            node = 0
            for end in range(1, len(surface) + 1):
                child = self.node_of.get(surface[:end])
                if child is None:
                    child = self.node_of[surface[:end]] = len(self.prefixes)
                    self.prefixes.append(surface[:end])
                    self.children.append([])
                    self.children[node].append((surface[end - 1], child))
                node = child


def _merge_unknown(words: Sequence[AlignedWord]) -> tuple[AlignedWord, ...]:
    """Consecutive unknown characters form one word (one segment, not one per character)."""
    out: list[AlignedWord] = []
    for word in words:
        prev = out[-1] if out else None
        if prev is not None and not prev.known and not word.known:
            out[-1] = AlignedWord(prev.reading + word.reading, prev.surface + word.surface,
                                  prev.lid, word.rid, known=False)
        else:
            out.append(word)
    return tuple(out)
