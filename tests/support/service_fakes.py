"""Converters the service and live-conversion tests share: one that records saves, and one
whose deliberately slow "model" waits for a gate, so a test forces the order of events."""

from __future__ import annotations

import threading

from karukan_engine.conversion.plain import PlainConverter
from karukan_engine.scheduling.scheduler import JobContext
from karukan_engine.conversion.settings import ConversionSettings
from karukan_engine.core.types import Candidate, ConversionRequest, Segment

TIMEOUT_S = 30


class SavingConverter(PlainConverter):
    """The plain converter, recording that shutdown asked it to save its learning data."""

    saved = 0

    def save(self) -> bool:
        SavingConverter.saved += 1
        return True


class GatedModelConverter(PlainConverter):
    """A LiveConverter: the plain converter plus a deliberately slow "model" whose live text
    waits for `gate` (tests/test_contracts.py checks it against the protocol).

    The quick (dictionary) text is the kana; the model's text is the reading in brackets, so a
    test can tell which one a view shows. `started` records each reading the model began on.
    """

    settings = ConversionSettings()

    def __init__(self) -> None:
        self.gate = threading.Event()
        self.started: dict[str, threading.Event] = {}
        self.closed = 0

    def model_ready(self) -> bool:
        return True

    def refines_live(self) -> bool:
        return True

    def live_quick(self, request: ConversionRequest) -> str:
        return request.reading

    def live_refined(self, request: ConversionRequest, ctx: JobContext | None = None) -> str | None:
        self.started.setdefault(request.reading, threading.Event()).set()
        self.gate.wait(TIMEOUT_S)
        return f"[{request.reading}]"

    def suggestions(self, request: ConversionRequest, n: int = 6) -> list[Candidate]:
        return []

    def refined_suggestions(self, request: ConversionRequest, n: int = 6,
                            ctx: JobContext | None = None) -> list[Candidate] | None:
        return None

    def can_prepare(self) -> bool:
        return False

    def prepare(self, request: ConversionRequest, ctx: JobContext | None = None) -> bool:
        return False

    def convert_quick(self, request: ConversionRequest) -> tuple[list[Segment], bool]:
        return self.convert(request), True

    def refined_conversion(self, request: ConversionRequest, ctx: JobContext | None = None) -> list[Segment] | None:
        return None

    def warm_space(self, request: ConversionRequest) -> None:
        return None

    def model_started(self, reading: str) -> bool:
        return self.started.setdefault(reading, threading.Event()).wait(TIMEOUT_S)

    def close(self) -> None:
        self.closed += 1


def live_config():
    from dataclasses import replace

    from karukan_engine.config import Config

    config = Config()
    return replace(config, session=replace(config.session, live_conversion=True))
