"""What every rewriter is asked with: the segment's reading, the list so far, the tables, the
clock (read only by a rewriter that needs the time, when the conversion runs) and the kind of
candidate the user chose before for this reading, if any."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Callable, Sequence

from karukan_engine.core.types import Candidate
from karukan_engine.rewriters.tables import Tables


@dataclass(frozen=True)
class RewriteRequest:
    reading: str
    listed: Sequence[Candidate]
    tables: Tables
    clock: Callable[[], datetime]
    remembered: str | None = None

    def index_of(self, surface: str) -> int | None:
        return next((i for i, c in enumerate(self.listed) if c.surface == surface), None)
