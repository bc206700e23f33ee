"""Single kanji of the reading (Mozc's single-kanji table, most usual first) that the list does
not hold yet, at its end; a variant form carries Mozc's note (「高の異体字」)."""

from __future__ import annotations

from karukan_engine.core.types import Candidate, Source
from karukan_engine.rewriters.placement import Addition
from karukan_engine.rewriters.request import RewriteRequest


def additions(request: RewriteRequest) -> list[Addition]:
    notes = request.tables.kanji_notes
    kanji = request.tables.single_kanji.get(request.reading, "")
    return [Addition(tuple(Candidate(k, notes.get(k, ""), Source.VARIANT) for k in kanji))]
