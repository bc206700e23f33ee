"""The session's side of "answer now, improve later".

Each event begins one epoch of the session's live link; the session asks here for the quick
answers (live text, suggestions, Space's segments) and for the late ones, and asks here whether
a late update is still current: the one check, for every kind. Without a link (`karukan keys`)
every answer is the converter's own, computed at once.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Callable, Sequence

from karukan_engine.conversion.contracts import LiveConverter
from karukan_engine.conversion.plain import PlainConverter
from karukan_engine.core.types import Candidate, ConversionRequest, Converter, Segment, check_segments
from karukan_engine.live.live_service import UpdateKind

if TYPE_CHECKING:
    from karukan_engine.live.live_service import LateUpdate, LiveLink

log = logging.getLogger(__name__)


class BackgroundWork:
    def __init__(self, converter: Converter, completer: LiveConverter | None) -> None:
        self.converter = converter
        self.completer = completer     # None: no suggestions ([suggest] off)
        self.link: LiveLink | None = None
        self.epoch = 0                 # the live epoch of the current event

    def begin(self) -> None:
        if self.link is not None:
            # The event's one supersession: a pending model result would now be stale.
            self.epoch = self.link.begin()

    def current(self, update: LateUpdate) -> bool:
        """The update is for this context and the current event."""
        link = self.link
        return link is not None and update.context == link.context and update.epoch == self.epoch

    def live_text(self, request: ConversionRequest) -> str:
        """The live text to show now (with a link, the model's may follow)."""
        if self.link is not None:
            return self.link.key(self.epoch, request)
        return self.converter.live(request)

    def suggestions(self, request: ConversionRequest, count: int) -> Sequence[Candidate] | None:
        """The completions now, or None when they will arrive later through the link."""
        if self.link is not None:
            self.link.request(UpdateKind.SUGGESTIONS, self.epoch, request, count)
            return None
        assert self.completer is not None, "suggestions asked for with [suggest] off"
        try:
            # No loop to deliver a second list (karukan keys): the model's ranking, if any, at once.
            return (self.completer.refined_suggestions(request, count)
                    or self.completer.suggestions(request, count))
        except Exception as exc:  # a failing converter must not take the keyboard down
            log.warning("suggestions failed: %s", type(exc).__name__)
            return []

    def can_prepare(self) -> bool:
        return self.link is not None and self.link.can_prepare()

    def can_anticipate(self) -> bool:
        """Work can run between keys (a link; without one every answer is computed at once)."""
        return self.link is not None

    def anticipate(self, requests: Callable[[], Sequence[ConversionRequest]]) -> None:
        """Ask for the live text of the readings the next letter can make (needs a link)."""
        if self.link is not None:
            self.link.anticipate(self.epoch, requests)

    def warm_space(self, request: ConversionRequest) -> None:
        """Ask for the dictionary's part of Space's first answer to be worked out right after
        the key (needs a link; without one Space computes it)."""
        if self.link is not None:
            self.link.warm_space(self.epoch, request)

    def prepare(self, request: ConversionRequest) -> None:
        """Ask for Space's conversion of `request` while the user pauses (needs a link)."""
        if self.link is not None:
            self.link.prepare(self.epoch, request)

    def segments(self, request: ConversionRequest, whole: bool = False, quick: bool = False) -> list[Segment]:
        """The converter's segments, checked; plain kana segments if it fails or misbehaves.
        whole: one segment of kana (F6–F10). quick (Space, with a link): segments at once, the
        model's following as a CONVERSION update if they differ (quick Space)."""
        if not whole:
            try:
                link = self.link
                final = True
                if quick and link is not None and not request.fixed_lengths:
                    segments, final = link.convert_quick(request)
                else:
                    segments = self.converter.convert(request)
                check_segments(request.reading, segments, request.fixed_lengths)
                if not final and link is not None:
                    link.request(UpdateKind.CONVERSION, self.epoch, request)
                return segments
            except Exception as exc:
                log.warning("conversion failed: %s", type(exc).__name__)
        return PlainConverter().convert(ConversionRequest(
            request.reading, request.left_context, () if whole else request.fixed_lengths, request.learn))
