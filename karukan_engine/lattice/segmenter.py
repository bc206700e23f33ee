"""Bunsetsu segmentation of a best path, honouring the boundaries the user fixed."""

from __future__ import annotations

import numpy as np


def fixed_cuts(reading_length: int, fixed_lengths: tuple[int, ...]) -> list[int]:
    """Cumulative end positions of the leading segments the user fixed (ignored if they
    overrun the reading)."""
    cuts, position = [], 0
    for length in fixed_lengths:
        if length <= 0:
            break
        position += length
        if position > reading_length:
            return []
        cuts.append(position)
    return cuts


def segment_spans(starts: list[int], ends: list[int], lids: list[int], rids: list[int],
                  boundary: np.ndarray, reading_length: int, cuts: list[int]) -> list[tuple[int, int]]:
    """Spans (start, end) of the segments of a path given by its nodes' positions and POS ids.

    Inside the fixed region every cut is a boundary and nothing else is; after it the
    segmenter decides between each pair of adjacent words.
    """
    fixed_end = cuts[-1] if cuts else 0
    positions = set(cuts)
    for k in range(1, len(starts)):
        p = starts[k]
        if p > fixed_end and boundary[rids[k - 1], lids[k]]:
            positions.add(p)
    positions.discard(0)
    positions.add(reading_length)
    spans, previous = [], 0
    for p in sorted(positions):
        if p > previous:
            spans.append((previous, p))
            previous = p
    return spans
