"""Where a rewriter's candidates go in a list: at an offset or at the end, each surface once.

The first candidate stays where it is (it is what the converter found for the reading), unless
an addition may take the first place: a `:name` query over its own text, or a kind of date
the user chose before for this reading.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Sequence

from karukan_engine.core.candidates import unique_surfaces
from karukan_engine.core.types import Candidate


@dataclass(frozen=True)
class Addition:
    candidates: tuple[Candidate, ...]
    at: int | None = None          # index of the first one; None: the end of the list
    may_lead: bool = False         # True: `at` may be 0 (the list's first candidate moves down)


def add(listed: Sequence[Candidate], additions: Iterable[Addition]) -> list[Candidate]:
    """listed with the additions placed in order. A surface already listed before the place an
    addition wants it at stays; listed after it (the converter's tail), it moves up to there;
    either way it takes the addition's annotation if it had none."""
    out = unique_surfaces(listed)
    present = {c.surface for c in out}
    for addition in additions:
        if not addition.candidates:
            continue
        low = 0 if addition.may_lead or not out else 1
        pos = len(out) if addition.at is None else max(low, min(addition.at, len(out)))
        at_end = addition.at is None
        for cand in addition.candidates:
            if not cand.surface:
                continue
            if cand.surface in present:
                index = next(i for i, c in enumerate(out) if c.surface == cand.surface)
                old = out[index]
                if not old.annotation and cand.annotation:   # say what a listed form is (１００: [全]数字)
                    old = out[index] = Candidate(old.surface, cand.annotation, old.source)
                if at_end or index < pos:
                    continue
                cand = out.pop(index)
            present.add(cand.surface)
            out.insert(pos, cand)
            pos += 1
    return out

