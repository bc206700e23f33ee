"""A scripted converter for session tests: fixed words and segmentations, every call recorded."""

from __future__ import annotations

from typing import Sequence

from karukan_engine.config import RewriterSettings
from karukan_engine.scheduling.scheduler import JobContext
from karukan_engine.conversion.settings import ConversionSettings
from karukan_engine.core.candidates import unique_surfaces
from karukan_engine.transliteration import script_variants
from karukan_engine.core.types import Candidate, Completion, ConversionRequest, Segment, Source

# For tests of the state machine with scripted words: no rewriter adds to their lists (the
# rewriters' own tests, tests/rewriters, turn them on).
NO_REWRITERS = RewriterSettings(emoji=False, symbols=False, emoticons=False, dates=False, numbers=False,
                                single_kanji=False)


class ScriptedConverter:
    """Implements EngineConverter (the Converter protocol plus save/close) from tables;
    tests/test_contracts.py checks it against the protocols.

    words: reading → surfaces (best first); plain kana variants follow.
    segmentations: reading → how to split it when the user fixed nothing.
    live_text: reading → live conversion; default: the best word of each segment.
    fail: names of methods that raise (to test the session's fallbacks).
    """

    def __init__(self, words: dict[str, list[str]] | None = None,
                 segmentations: dict[str, list[str]] | None = None,
                 live_text: dict[str, str] | None = None, fail: Sequence[str] = ()) -> None:
        self.words = words or {}
        self.segmentations = segmentations or {}
        self.live_text = live_text or {}
        self.fail = set(fail)
        self.requests: list[ConversionRequest] = []
        self.recorded: list[tuple[list[tuple[str, str]], str]] = []

    def _check(self, name: str) -> None:
        if name in self.fail:
            raise RuntimeError(f"scripted failure in {name}")

    def _pieces(self, reading: str, fixed: Sequence[int]) -> list[str]:
        pieces, start = [], 0
        for n in fixed:
            if n <= 0 or start + n > len(reading):
                break
            pieces.append(reading[start : start + n])
            start += n
        rest = reading[start:]
        if rest:
            pieces.extend(self.segmentations.get(rest, [rest]) if not pieces else [rest])
        return pieces

    def surfaces(self, reading: str) -> list[str]:
        out: list[str] = []
        for s in [*self.words.get(reading, []), *(c.surface for c in script_variants(reading))]:
            if s not in out:
                out.append(s)
        return out

    def convert(self, request: ConversionRequest) -> list[Segment]:
        self._check("convert")
        self.requests.append(request)
        return [Segment(p, tuple(Candidate(s, source="dictionary") for s in self.surfaces(p)))
                for p in self._pieces(request.reading, request.fixed_lengths)]

    def candidates(self, request: ConversionRequest, n: int) -> list[Candidate]:
        self._check("candidates")
        return [Candidate(s) for s in self.surfaces(request.reading)][:n]

    def live(self, request: ConversionRequest) -> str:
        self._check("live")
        self.requests.append(request)
        if request.reading in self.live_text:
            return self.live_text[request.reading]
        return "".join(self.surfaces(p)[0] for p in self._pieces(request.reading, ()))

    def record(self, pairs: Sequence[tuple[str, str]], left_context: str = "") -> None:
        self._check("record")
        self.recorded.append((list(pairs), left_context))

    def save(self) -> bool:
        return True

    def close(self) -> None:
        return None


class SuggestingConverter(ScriptedConverter):
    """A ScriptedConverter with completions and no model: implements LiveConverter
    (tests/test_contracts.py checks it). What was recorded is suggested first, like learning."""

    settings = ConversionSettings(workers=1)

    def __init__(self, completions: Sequence[tuple[str, str]] = (), **scripted) -> None:
        super().__init__(**scripted)
        self.completions = list(completions)   # (whole reading, surface), best first
        self.asked: list[str] = []

    def model_ready(self) -> bool:
        return False

    def refines_live(self) -> bool:
        return False

    def live_quick(self, request: ConversionRequest) -> str:
        return self.live(request)

    def live_refined(self, request: ConversionRequest, ctx: JobContext | None = None) -> str | None:
        return None

    def suggestions(self, request: ConversionRequest, n: int = 6) -> list[Candidate]:
        self.asked.append(request.reading)
        learned = [pair for pairs, _ in reversed(self.recorded) for pair in pairs]
        found = [Completion(surface, source=Source.LEARNING, reading=reading) for reading, surface in learned
                 if reading.startswith(request.reading)]
        found += [Completion(surface, source=Source.DICTIONARY, reading=reading)
                  for reading, surface in self.completions if reading.startswith(request.reading)]
        return unique_surfaces(found, limit=n)

    def refined_suggestions(self, request: ConversionRequest, n: int = 6,
                            ctx: JobContext | None = None) -> list[Candidate] | None:
        return None   # no model

    def can_prepare(self) -> bool:
        return False   # no model: Space is as cheap as it gets

    def prepare(self, request: ConversionRequest, ctx: JobContext | None = None) -> bool:
        return False

    def convert_quick(self, request: ConversionRequest) -> tuple[list[Segment], bool]:
        return self.convert(request), True

    def refined_conversion(self, request: ConversionRequest, ctx: JobContext | None = None) -> list[Segment] | None:
        return None

    def warm_space(self, request: ConversionRequest) -> None:
        return None
