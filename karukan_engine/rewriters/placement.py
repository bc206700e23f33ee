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



def keep_on_first_page(before: Sequence[Candidate], after: list[Candidate], surfaces: Iterable[str],
                       page: int) -> list[Candidate]:
    """after, with each of `surfaces` that stood on before's first page and that additions
    pushed past it moved back to the end of that page (with any of them the move would push
    off); everything else keeps its order."""
    wanted = set(surfaces)
    was = {c.surface for c in before[:page] if c.surface in wanted}
    if all(i < page for i, c in enumerate(after) if c.surface in was):
        return after
    block = [c for c in after[page:] if c.surface in was]
    while True:   # the block goes at the page's end; pinned ones it would push join it
        cut = page - len(block)
        rest = [c for c in after if c not in block]
        joined = [c for c in rest[cut:page] if c.surface in was]
        if not joined:
            return rest[:cut] + block + rest[cut:]
        block = [c for c in after if c in block or c in joined]
