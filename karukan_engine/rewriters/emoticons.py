"""顔文字 by reading (Mozc's emoticon tables): かおもじ lists them all right after its first
candidate; other readings (にこにこ, ぺこり …) get a few after their top words, the rest at the
end. Annotated 「顔文字」."""

from __future__ import annotations

from karukan_engine.core.types import Candidate, Source
from karukan_engine.rewriters.placement import Addition
from karukan_engine.rewriters.request import RewriteRequest

ANNOTATION = "顔文字"
ALL_READING = "かおもじ"
EARLY_COUNT = 2
EARLY_AT = 3


def additions(request: RewriteRequest) -> list[Addition]:
    found = tuple(Candidate(e, ANNOTATION, Source.VARIANT) for e in request.tables.emoticons.get(request.reading, ()))
    if request.reading == ALL_READING:
        return [Addition(found, 1)]
    return [Addition(found[:EARLY_COUNT], EARLY_AT), Addition(found[EARLY_COUNT:])]
