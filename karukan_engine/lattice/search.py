"""Best path (Viterbi) and N-best paths (exact A* backwards) over a lattice span.

A search runs over the words inside [lo, hi) of a lattice, between a virtual start whose right
POS id is bos_rid and a virtual end whose left POS id is eos_lid. With inside_segment=True the
path must stay inside one bunsetsu: transitions the segmenter marks as boundaries are forbidden,
and the segment's first/last words pay Mozc's prefix/suffix boundary penalties.

Path cost = sum of word costs + sum of connection costs matrix[left.rid, right.lid]; a word
language model (lattice/word_lm.py) adds to each word's cost and gives some pairs of words a
bonus (never positive) on the transition between them, so the search stays exact.
"""

from __future__ import annotations

import heapq
from dataclasses import InitVar, dataclass, field
from typing import Iterator

import numpy as np

from karukan_engine.dictionary.system import SystemDictionary
from karukan_engine.lattice.lattice import BOS, EOS, Lattice

INF = 1 << 50
_BOS_ONLY = np.array([BOS])
_ZERO = np.zeros(1, dtype=np.int64)


@dataclass
class SearchSpace:
    lattice: Lattice
    dictionary: SystemDictionary
    lo: int
    hi: int
    bos_rid: int = 0
    eos_lid: int = 0
    inside_segment: bool = False
    # several possible left neighbours (rid, extra cost), e.g. the readings of the context's last
    # word; overrides bos_rid when given
    bos_choices: tuple[tuple[int, int], ...] = ()
    # the word LM's terms: a cost added to each node, and (prev, cur, bonus <= 0) transitions
    extra_cost: np.ndarray | None = None
    pairs: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
    # the same search (0 to its end, same left neighbours and kind of terms) over a lattice this
    # one extends (LatticeBuilder.extend): its nodes keep their forward costs and their sorted
    # predecessors, so only the new nodes and the end are searched again. Not kept (a typing
    # chain of spaces would stay alive).
    base: InitVar[SearchSpace | None] = None
    alpha: np.ndarray = field(init=False)        # best cost from the start through each node
    _preds: dict = field(init=False, default_factory=dict)
    _pred_by_node: dict = field(init=False, default_factory=dict)
    _arrivals: dict = field(init=False, default_factory=dict)

    def __post_init__(self, base: SearchSpace | None) -> None:
        lat = self.lattice
        self.start = lat.start.copy()
        self.end = lat.end.copy()
        self.lid = lat.lid.copy()
        self.rid = lat.rid.copy()
        self.cost = lat.cost.copy() if self.extra_cost is None else lat.cost + self.extra_cost
        self.start[BOS] = self.end[BOS] = self.lo
        self.start[EOS] = self.end[EOS] = self.hi
        self.rid[BOS] = self.bos_rid
        self.lid[EOS] = self.eos_lid
        inside = (self.start >= self.lo) & (self.end <= self.hi)
        inside[[BOS, EOS]] = False
        self.members = np.flatnonzero(inside)
        if self.inside_segment:
            d = self.dictionary
            first = self.members[self.start[self.members] == self.lo]
            last = self.members[self.end[self.members] == self.hi]
            self.cost[first] += d.prefix_penalty[self.lid[first]]
            self.cost[last] += d.suffix_penalty[self.rid[last]]
        choices = self.bos_choices or ((self.bos_rid, 0),)
        self._bos_rids = np.array([r for r, _ in choices], dtype=np.int64)
        self._bos_costs = np.array([c for _, c in choices], dtype=np.int64)
        self._index()
        self._index_pairs()
        self._forward(base)
        if base is not None:
            # what arrives at a position up to base's end is base's nodes, costs unchanged; only
            # the end's own predecessors differ. Copied first (dict() is one step under the
            # GIL): another thread may be reading base's paths and filling its caches.
            self._arrivals = dict(base._arrivals)
            self._preds = {key: found for key, found in dict(base._preds).items() if not key[2]}
            self._pred_by_node = dict(base._pred_by_node)
            self._pred_by_node.pop(EOS, None)

    def _from_start(self, lids: np.ndarray) -> np.ndarray:
        """Cost of entering each lid from the start: the best of the possible left neighbours."""
        matrix = self.dictionary.matrix
        return (matrix[self._bos_rids[:, None], lids[None, :]] + self._bos_costs[:, None]).min(axis=0)

    def _index(self) -> None:
        """Group the member nodes once: by (start, lid) for the nodes leaving a position and by
        (end, rid) for the nodes arriving at one, since a transition depends only on (rid, lid).
        Per-position bounds are kept as Python lists: the forward loop reads them one by one."""
        m = self.members
        positions = np.arange(self.lo, self.hi + 2)
        by_start = m[np.lexsort((self.lid[m], self.start[m]))]
        key = self.start[by_start].astype(np.int64) * 65536 + self.lid[by_start]
        new_group = np.ones(key.size, dtype=bool)
        new_group[1:] = key[1:] != key[:-1]
        start_bounds = np.searchsorted(self.start[by_start], positions)
        groups_before = np.concatenate(([0], np.cumsum(new_group)))
        self._by_start = by_start
        self._start_bounds = start_bounds.tolist()
        self._start_group_bounds = groups_before[start_bounds].tolist()   # lid groups per position
        self._start_group = groups_before[1:] - 1                         # lid group of each node
        self._start_group_lid = self.lid[by_start][new_group]
        self._start_cost = self.cost[by_start]
        by_end = m[np.lexsort((self.rid[m], self.end[m]))]
        key = self.end[by_end].astype(np.int64) * 65536 + self.rid[by_end]
        new_group = np.ones(key.size, dtype=bool)
        new_group[1:] = key[1:] != key[:-1]
        end_bounds = np.searchsorted(self.end[by_end], positions)
        group_starts = np.flatnonzero(new_group)
        self._by_end = by_end
        self._end_bounds = end_bounds.tolist()
        self._end_group_bounds = np.searchsorted(group_starts, end_bounds).tolist()
        # where each rid group starts, relative to the first node arriving at its position
        self._end_group_offsets = group_starts - end_bounds[self.end[by_end[group_starts]] - self.lo]
        self._end_group_rid = self.rid[by_end][new_group]

    def _index_pairs(self) -> None:
        """The bonus transitions grouped by the position where they happen, and by their right node."""
        self._bonus_at: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        self._bonus_of: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        if self.pairs is None or self.pairs[0].size == 0:
            return
        prev, cur, bonus = self.pairs
        slot = np.empty(len(self.lattice), dtype=np.int64)   # a node's place among those starting with it
        slot[self._by_start] = np.arange(self._by_start.size) - np.asarray(self._start_bounds)[
            self.start[self._by_start] - self.lo]
        slot[EOS] = 0
        where = self.start[cur].astype(np.int64) - self.lo
        where[cur == EOS] = self.hi - self.lo
        order = np.lexsort((cur, where))
        prev, cur, bonus, where = prev[order], cur[order], bonus[order], where[order]
        slots = slot[cur]
        bounds = np.flatnonzero(np.diff(where)) + 1
        for a, b in zip([0, *bounds.tolist()], [*bounds.tolist(), where.size]):
            self._bonus_at[int(where[a])] = (prev[a:b], slots[a:b], bonus[a:b])
        bounds = (np.flatnonzero(np.diff(cur)) + 1).tolist()
        cur_list = cur.tolist()
        for a, b in zip([0, *bounds], [*bounds, cur.size]):
            self._bonus_of[cur_list[a]] = (prev[a:b], bonus[a:b])

    def _enter(self, prev: np.ndarray, cur: np.ndarray) -> np.ndarray:
        """Connection cost of each (prev, cur) pair (BOS: the best of the left neighbours)."""
        out = self.dictionary.matrix[self.rid[prev], self.lid[cur]].astype(np.int64)
        first = prev == BOS
        if first.any():
            out[first] = self._from_start(self.lid[cur[first]])
        return out

    def _ending(self, position: int) -> np.ndarray:
        """Nodes ending at position (the start node alone at lo)."""
        if position == self.lo:
            return _BOS_ONLY
        i = position - self.lo
        return self._by_end[self._end_bounds[i]:self._end_bounds[i + 1]]

    def _forward(self, base: SearchSpace | None) -> None:
        alpha = self.alpha = np.full(len(self.lattice), INF, dtype=np.int64)
        positions = range(self.hi - self.lo + 1)
        if base is not None:
            # a node's forward cost depends only on the nodes before it: those of the shorter
            # reading keep theirs; the positions where new nodes start are searched again
            known = base.alpha
            alpha[:known.size] = known
            fresh = self.members[self.members >= known.size]
            positions = [*np.unique(self.start[fresh] - self.lo).tolist(), self.hi - self.lo]
        alpha[BOS] = 0
        alpha[EOS] = INF
        matrix = self.dictionary.matrix
        segmenter = self.dictionary.segmenter if self.inside_segment else None
        start_bounds, start_groups = self._start_bounds, self._start_group_bounds
        end_bounds, end_groups = self._end_bounds, self._end_group_bounds
        eos = np.array([EOS])
        for i in positions:
            if i == self.hi - self.lo:
                nodes, ulid, inverse, cost = eos, self.lid[eos], _ZERO, self.cost[eos]
            else:
                a, b = start_bounds[i], start_bounds[i + 1]
                if a == b:
                    continue
                nodes = self._by_start[a:b]
                g0 = start_groups[i]
                ulid = self._start_group_lid[g0:start_groups[i + 1]]
                inverse = self._start_group[a:b] - g0
                cost = self._start_cost[a:b]
            if i == 0:
                best = self._from_start(ulid)
            else:
                a, b = end_bounds[i], end_bounds[i + 1]
                if a == b:
                    continue
                # cheapest arrival per right POS id, then the cheapest way into each left id
                first, last = end_groups[i], end_groups[i + 1]
                urid = self._end_group_rid[first:last]
                ubest = np.minimum.reduceat(alpha[self._by_end[a:b]], self._end_group_offsets[first:last])
                rows = urid[:, None]
                scores = matrix[rows, ulid] + ubest[:, None]
                if segmenter is not None and nodes is not eos:
                    scores[segmenter[rows, ulid]] = INF
                best = scores.min(axis=0)
            best = best[inverse]
            bonus = self._bonus_at.get(i)
            if bonus is not None:
                prev, slots, value = bonus
                reached = alpha[prev] < INF
                prev, slots, value = prev[reached], slots[reached], value[reached]
                best = best.copy()
                np.minimum.at(best, slots, alpha[prev] + self._enter(prev, nodes[slots]) + value)
            alpha[nodes] = np.minimum(best + cost, INF)

    # -- results -----------------------------------------------------------------------------
    @property
    def reachable(self) -> bool:
        return bool(self.alpha[EOS] < INF)

    def best_path(self) -> list[int]:
        """Nodes of the cheapest path (without BOS/EOS); [] when no path exists."""
        if not self.reachable:
            return []
        path = []
        node = self._predecessors(EOS)[0][0]
        while node != BOS:
            path.append(node)
            node = self._predecessors(node)[0][0]
        return path[::-1]

    def path_cost(self, path: list[int]) -> int:
        nodes = [*path, EOS]
        total = (int(self._from_start(np.array([self.lid[nodes[0]]]))[0]) + int(self.cost[nodes[0]])
                 + self._bonus(BOS, nodes[0]))
        for left, right in zip(nodes, nodes[1:]):
            total += (int(self.dictionary.matrix[self.rid[left], self.lid[right]]) + int(self.cost[right])
                      + self._bonus(left, right))
        return total

    def _bonus(self, left: int, right: int) -> int:
        found = self._bonus_of.get(right)
        if found is None:
            return 0
        hit = np.flatnonzero(found[0] == left)
        return int(found[1][hit[0]]) if hit.size else 0

    def _predecessors(self, node: int) -> tuple[list[int], list[int]]:
        """Nodes that can precede node, sorted by alpha + connection cost (as Python lists: the
        A* loop indexes them one at a time). Cached per node and per (start, lid)."""
        cached = self._pred_by_node.get(node)
        if cached is not None:
            return cached
        bonus = self._bonus_of.get(node)
        if bonus is not None:
            cached = self._pred_by_node[node] = self._predecessors_with(node, *bonus)
            return cached
        position, lid = int(self.start[node]), int(self.lid[node])
        key = (position, lid, node == EOS)
        cached = self._preds.get(key)
        if cached is None:
            if position == self.lo:
                cached = ([BOS], self._from_start(np.array([lid])).tolist())
            else:
                prev, rids, alpha = self._arrivals_at(position)
                score = self.dictionary.matrix[rids, lid] + alpha
                if self.inside_segment and node != EOS:
                    score[self.dictionary.segmenter[rids, lid]] = INF
                order = np.argsort(score, kind="stable")
                score = score[order]
                keep = int(np.searchsorted(score, INF)) if self.inside_segment else score.size
                cached = (prev[order[:keep]].tolist(), score[:keep].tolist())
            self._preds[key] = cached
        self._pred_by_node[node] = cached
        return cached

    def _predecessors_with(self, node: int, bonus_prev: np.ndarray, bonus: np.ndarray) -> tuple[list[int], list[int]]:
        """_predecessors of a node some transitions into which have a bonus (not shared by lid)."""
        position = int(self.start[node]) if node != EOS else self.hi
        if position == self.lo:
            prev, alpha = _BOS_ONLY, np.zeros(1, dtype=np.int64)
        else:
            prev, _, alpha = self._arrivals_at(position)
        score = self._enter(prev, np.full(prev.size, node)) + alpha
        index = {int(p): k for k, p in enumerate(prev.tolist())}
        for p, b in zip(bonus_prev.tolist(), bonus.tolist()):
            k = index.get(p)
            if k is not None:
                score[k] += b
        order = np.argsort(score, kind="stable")
        return prev[order].tolist(), score[order].tolist()

    def _arrivals_at(self, position: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The reachable nodes ending at position, their right ids and costs (cached)."""
        arrivals = self._arrivals.get(position)
        if arrivals is None:
            prev = self._ending(position)
            alpha = self.alpha[prev]
            finite = alpha < INF
            prev, alpha = prev[finite], alpha[finite]
            arrivals = self._arrivals[position] = (prev, self.rid[prev], alpha)
        return arrivals

    def paths(self, max_expansions: int = 20000, distinct: bool = False) -> Iterator[tuple[int, list[int]]]:
        """All paths, cheapest first: (cost, nodes without BOS/EOS).

        Backward A* with the exact forward cost as heuristic; each popped state pushes its own
        best predecessor and its next sibling only, so every path is produced exactly once.
        distinct: a suffix of the reading already expanded with the same text (the same words
        under other POS ids) is not expanded again, so the first distinct surfaces come without
        walking every POS variant of the best one; a surface then comes with the cost of the
        cheapest path that kept its first-expanded suffixes (at most that of its cheapest path
        plus the connection differences: the order of the distinct surfaces is near, not exact).
        """
        if not self.reachable:
            return
        alpha = self.alpha.tolist()
        cost = self.cost.tolist()
        start = self.start.tolist()
        surface = self.lattice.surface
        expanded: set[tuple[int, str]] = set()
        # state: (f, tie, node, base, chain, parent_node, rank, text); base = cost of everything
        # after node up to EOS plus the parent's word cost; chain = the nodes after node, as a
        # linked tuple; text = their surface (distinct only)
        heap: list = [(alpha[EOS], 0, EOS, 0, None, -1, 0, "")]
        tie = 1
        expansions = 0
        while heap and expansions < max_expansions:
            f, _, node, base, chain, parent, rank, text = heapq.heappop(heap)
            expansions += 1
            if parent >= 0:  # the sibling: next predecessor of the same parent
                preds, scores = self._predecessors(parent)
                if rank + 1 < len(preds):
                    heapq.heappush(heap, (scores[rank + 1] + base, tie, preds[rank + 1],
                                          base, chain, parent, rank + 1, text))
                    tie += 1
            if node == BOS:
                path = []
                link = chain
                while link is not None:
                    path.append(link[0])
                    link = link[1]
                yield f, path[:-1]   # the last link is EOS
                continue
            if distinct and node != EOS:
                text = surface(node) + text
                key = (start[node], text)
                if key in expanded:
                    continue
                expanded.add(key)
            preds, scores = self._predecessors(node)
            if preds:
                new_base = f - alpha[node] + cost[node]
                heapq.heappush(heap, (scores[0] + new_base, tie, preds[0], new_base,
                                      (node, chain), node, 0, text))
                tie += 1
