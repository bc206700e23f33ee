"""The one rule for candidate lists: each surface once, first occurrence wins."""

from __future__ import annotations

from typing import Iterable

from karukan_engine.core.types import Candidate


def unique_surfaces(*groups: Iterable[Candidate], limit: int | None = None) -> list[Candidate]:
    """The candidates of every group in order, keeping the first of each surface and dropping
    empty ones; at most `limit` of them."""
    seen: set[str] = set()
    out: list[Candidate] = []
    for group in groups:
        for cand in group:
            if cand.surface and cand.surface not in seen:
                seen.add(cand.surface)
                out.append(cand)
                if limit is not None and len(out) >= limit:
                    return out
    return out
