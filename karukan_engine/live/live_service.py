"""Live conversion for many input contexts: the quick answer now, the model's answer later.

The flow is one way. Each event of a context begins one new epoch (`begin`: the only
supersession, which drops the context's older work). The session gets its quick answers at
once (the live text from `key()`, a quick Space from the link) and asks for the better ones
through one path, `request(kind, ...)`: the work is queued on the scheduler, and its answer
travels as one immutable type, a LateUpdate of its kind addressed to the context and the epoch,
to the context's `deliver` callback (never after a newer event has begun, see scheduler.py);
the context host applies it to its session on the session's own executor and emits the view.
"""

from __future__ import annotations

import enum
import logging
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Hashable, Sequence

from karukan_engine.conversion.contracts import DictionaryConverter, LiveConverter
from karukan_engine.conversion.settings import ConversionSettings
from karukan_engine.conversion.suggest import suggestions as completions
from karukan_engine.core.types import Candidate, ConversionRequest, Converter, Segment, settled_first_listed
from karukan_engine.live.rhythm import TypingRhythm
from karukan_engine.scheduling.scheduler import JobContext, Priority, Scheduler

log = logging.getLogger(__name__)

# An input context as the scheduler knows it: a number its host was given (never id() of an
# object, which Python reuses once the object is gone).
ContextId = Hashable


class UpdateKind(enum.Enum):
    LIVE = "live"                  # the model's live text of the reading composed
    SUGGESTIONS = "suggestions"    # completions of the reading an event left composed
    CONVERSION = "conversion"      # the model's conversion for a Space answered at once


@dataclass(frozen=True)
class LateUpdate:
    """A better answer on its way from a scheduler worker to the context that asked for it.

    One type for every kind; the field of its kind carries the answer (text: LIVE;
    suggestions, best first and never empty: SUGGESTIONS; segments: CONVERSION). A session
    applies it only while the event `epoch` is its current one and the reading is still there.
    """

    kind: UpdateKind
    context: ContextId
    epoch: int        # the event (begin) it belongs to
    reading: str
    text: str = ""
    suggestions: tuple[Candidate, ...] = ()
    segments: tuple[Segment, ...] = ()
    changed: bool = True   # False: the model agreed with the quick text (only with deliver_unchanged)

    @classmethod
    def live(cls, context: ContextId, epoch: int, reading: str, text: str, changed: bool = True) -> "LateUpdate":
        return cls(UpdateKind.LIVE, context, epoch, reading, text=text, changed=changed)

    @classmethod
    def of_suggestions(cls, context: ContextId, epoch: int, reading: str,
                       suggestions: Sequence[Candidate]) -> "LateUpdate":
        return cls(UpdateKind.SUGGESTIONS, context, epoch, reading, suggestions=tuple(suggestions))

    @classmethod
    def of_conversion(cls, context: ContextId, epoch: int, reading: str,
                      segments: Sequence[Segment]) -> "LateUpdate":
        return cls(UpdateKind.CONVERSION, context, epoch, reading, segments=tuple(segments))


LiveDelivery = Callable[[LateUpdate], None]

# Suggestion work starts this long after its key: the key's reply (session, event loop, D-Bus)
# is Python too, and a search started at once would hold the GIL while that reply waits for it.
# A key typed meanwhile supersedes the wait, so fast typing costs no search at all.
SUGGESTION_DELAY_S = 0.010

# Space's conversion is prepared once the user paused after a key's reply: a key typed sooner
# supersedes it unrun. Never sooner than PREPARE_DELAY_S: at 60 ms, typing replays started one
# after most keys only to stop it at the next, which took 25-40 ms of CPU per key instead of
# 4-11 and raised live refinement's p95 by 10-30 ms, past its 50 ms budget (docs/benchmarks.md,
# "Space prepared while the user pauses"). Past that, a pause is judged by the context's own
# rhythm (rhythm.TypingRhythm: twice its median gap between keys), up to MAX_PREPARE_DELAY_S: a
# typist at 10 keys/s met a preparation just starting at most of their keys.
PREPARE_DELAY_S = 0.100
MAX_PREPARE_DELAY_S = 0.300

# The dictionary's part of Space's first answer (its segments and the first one's list, about
# 0.5-1 ms of the interpreter) is worked out this soon after a key's reply: before a Space typed
# right after the key, and after the reply has left (docs/benchmarks.md, "Space after a burst").
WARM_SPACE_DELAY_S = 0.002

# A quick Space's model conversion replaces the one shown only this soon after Space: later the
# user is reading the candidates (and a human reacts in about 0.2-0.3 s), so a change would be a
# surprise. With the bundled model it arrives 30-80 ms after Space at the median on a quiet
# 2-core machine, up to ~180 at p95 (docs/benchmarks.md, "Quick Space").
QUICK_SPACE_LIMIT_S = 0.300

# The model's ranking of a suggestion list gives up past this (the list shown meanwhile is the
# dictionary's; the bundled model scores the pool in about 10–80 ms on a loaded 2-core machine).
SUGGESTION_MODEL_BUDGET_S = 0.25

# Where a link hands work to be started later, off the key's thread: the context host collects
# it and starts it from its event loop once the key's reply is out (waking a scheduler worker
# from the session's thread alone cost the key about 0.5 ms, GIL hand-overs). Called with the
# event's epoch (the work is moot once a newer event began), the work, and how long after the
# reply (0: the host's own delay, SUGGESTION_DELAY_S, as for suggestions).
Deferral = Callable[[int, Callable[[], None], float], None]


class DictionaryOnly:
    """A LiveConverter over a converter without a model: the quick text is its live(), and
    nothing is ever refined. LiveService wraps such converters once, so it never probes."""

    def __init__(self, converter: Converter) -> None:
        self.converter = converter
        self.settings = ConversionSettings(workers=1)   # nothing runs in the background but calls
        # checked once: isinstance against a runtime Protocol costs ~0.2 ms, every key otherwise
        self._dictionary_layer = converter if isinstance(converter, DictionaryConverter) else None

    def model_ready(self) -> bool:
        return False

    def refines_live(self) -> bool:
        return False

    def live_quick(self, request: ConversionRequest) -> str:
        return self.converter.live(request)

    def live_refined(self, request: ConversionRequest, ctx: JobContext | None = None) -> str | None:
        return None

    def suggestions(self, request: ConversionRequest, n: int = 6) -> list[Candidate]:
        """Learned and dictionary completions when the converter has a dictionary layer."""
        base = self._dictionary_layer
        if base is None:
            return []
        return completions(request.reading, base.learning, base.lexicon, limit=n)

    def refined_suggestions(self, request: ConversionRequest, n: int = 6,
                            ctx: JobContext | None = None) -> list[Candidate] | None:
        return None   # no model

    def can_prepare(self) -> bool:
        return False   # the dictionary's Space costs a few ms: nothing worth a worker

    def prepare(self, request: ConversionRequest, ctx: JobContext | None = None) -> bool:
        return False

    def convert_quick(self, request: ConversionRequest) -> tuple[list[Segment], bool]:
        return self.converter.convert(request), True   # nothing refines it

    def refined_conversion(self, request: ConversionRequest, ctx: JobContext | None = None) -> list[Segment] | None:
        return None

    def warm_space(self, request: ConversionRequest) -> None:
        settled_first_listed(self.converter.convert(request))   # what convert_quick answers

    # The rest of the contract, handed on.
    def convert(self, request: ConversionRequest) -> list[Segment]:
        return self.converter.convert(request)

    def candidates(self, request: ConversionRequest, n: int) -> list[Candidate]:
        return self.converter.candidates(request, n)

    def live(self, request: ConversionRequest) -> str:
        return self.converter.live(request)

    def record(self, pairs: Sequence[tuple[str, str]], left_context: str = "") -> None:
        self.converter.record(pairs, left_context)

    def save(self) -> bool:
        return True   # the owner of `converter` saves it

    def close(self) -> None:
        return None


def live_converter(converter: Converter) -> LiveConverter:
    """The converter itself when a model can refine its live text, else DictionaryOnly."""
    return converter if isinstance(converter, LiveConverter) else DictionaryOnly(converter)


class LiveService:
    def __init__(self, converter: Converter, scheduler: Scheduler | None = None,
                 budget_ms: float | None = None, deliver_unchanged: bool = False,
                 suggestion_delay_s: float = SUGGESTION_DELAY_S,
                 prepare_delay_s: float = PREPARE_DELAY_S,
                 quick_space_limit_s: float = QUICK_SPACE_LIMIT_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
        """deliver_unchanged: also deliver when the model's text equals the quick text
        (benchmarks time every finished refinement; frontends need only changes).
        suggestion_delay_s: how long after its key suggestion work starts. prepare_delay_s: the
        shortest pause after which Space's conversion is prepared (longer where the context's
        keys come further apart, up to MAX_PREPARE_DELAY_S). quick_space_limit_s: how late a
        quick Space's model conversion may come. clock: when events happen (seconds)."""
        self.converter = live_converter(converter)
        self.deliver_unchanged = deliver_unchanged
        settings = self.converter.settings
        self.scheduler = scheduler or Scheduler(workers=settings.workers)
        self._own_scheduler = scheduler is None
        self.budget_s = (budget_ms if budget_ms is not None else settings.live_budget_ms) / 1000.0
        self.suggestion_delay_s = suggestion_delay_s
        self.prepare_delay_s = prepare_delay_s
        self.rhythm = TypingRhythm(0.0, MAX_PREPARE_DELAY_S)
        self._clock = clock
        self.quick_space_limit_s = quick_space_limit_s

    @property
    def asynchronous(self) -> bool:
        """True when a model can refine the quick text later."""
        return self.converter.refines_live()

    def begin(self, context: ContextId) -> int:
        """A new event in `context`: its earlier work is superseded. Returns the event's
        epoch, which key() and the updates it causes carry."""
        self.rhythm.event(context, self._clock())
        return self.scheduler.begin_key(context)

    def prepare_delay(self, context: ContextId) -> float:
        """How long after an event of `context` its Space is prepared: once the user paused
        (prepare_delay_s at least)."""
        return max(self.prepare_delay_s, self.rhythm.pause_s(context))

    def key(self, context: ContextId, epoch: int, request: ConversionRequest,
            deliver: LiveDelivery) -> str:
        """The live text to show now for the event `epoch`; a better one may follow as a LIVE
        LateUpdate passed to `deliver` (on a scheduler worker)."""
        text = self.converter.live_quick(request)
        if request.reading and self.asynchronous:
            self.request(UpdateKind.LIVE, context, epoch, request, deliver, shown=text)
        return text

    def request(self, kind: UpdateKind, context: ContextId, epoch: int, request: ConversionRequest,
                deliver: LiveDelivery, *, shown: Any = None, n: int = 6, delay_s: float | None = None,
                refined: bool = False) -> None:
        """The one path for every late answer: queue the work of `kind` for the event `epoch`;
        its answer reaches `deliver` as a LateUpdate when it adds to `shown` (what the context
        shows now), and never once a newer event began (already superseded: not even a worker
        is woken). LIVE: the model's live text (shown: the quick text). CONVERSION: the model's
        conversion of a quick Space, first among the queued work (the user waits for it), within
        quick_space_limit_s. SUGGESTIONS: the completions, searched after `delay_s` (default
        suggestion_delay_s; a newer event ends the wait); with a model ready, delivering them
        asks again with refined=True for the model's ranking, its own job within
        SUGGESTION_MODEL_BUDGET_S, so the dictionary's list never waits for the model."""
        if not request.reading or self.scheduler.epoch(context) != epoch:
            return
        converter = self.converter
        if kind is UpdateKind.LIVE:
            priority, budget_s, delay = Priority.LIVE, self.budget_s, 0.0
        elif kind is UpdateKind.CONVERSION:
            priority, budget_s, delay = Priority.EXPLICIT, self.quick_space_limit_s, 0.0
        else:
            priority, budget_s = Priority.SUGGESTION, SUGGESTION_MODEL_BUDGET_S if refined else None
            delay = 0.0 if refined else self.suggestion_delay_s if delay_s is None else delay_s

        def work(ctx: JobContext) -> LateUpdate | None:
            if delay and ctx.wait_cancelled(delay):
                return None   # a newer key came first
            if kind is UpdateKind.LIVE:
                text = converter.live_refined(request, ctx)
                if not text or (text == shown and not self.deliver_unchanged):
                    return None
                return LateUpdate.live(context, epoch, request.reading, text, text != shown)
            if kind is UpdateKind.CONVERSION:
                segments = converter.refined_conversion(request, ctx)
                if not segments or ctx.cancelled() or ctx.remaining() <= 0:
                    return None   # superseded, failed or too late: the quick answer stays
                return LateUpdate.of_conversion(context, epoch, request.reading, segments)
            found = converter.refined_suggestions(request, n, ctx) if refined else converter.suggestions(request, n)
            if not found or (refined and (tuple(found) == shown or ctx.cancelled())):
                return None
            return LateUpdate.of_suggestions(context, epoch, request.reading, found)

        def hand_over(update: LateUpdate) -> None:
            deliver(update)
            if kind is UpdateKind.SUGGESTIONS and not refined and converter.model_ready():
                self.request(kind, context, epoch, request, deliver, shown=update.suggestions, n=n, refined=True)

        self.scheduler.submit(context, priority, work, hand_over, budget_s=budget_s, epoch=epoch)

    def prepare_for(self, context: ContextId, epoch: int, request: ConversionRequest,
                    delay_s: float | None = None) -> None:
        """Prepare Space's conversion of `request` for the event `epoch` at the lowest
        priority, after `delay_s` (default prepare_delay(context)) of pause; dropped unrun, or stopped
        between stages, once a newer event began. Nothing is delivered: the converter keeps the
        result for its convert()."""
        if (not request.reading or request.fixed_lengths or self.scheduler.epoch(context) != epoch
                or not self.converter.can_prepare()):
            return
        prepare = self.converter.prepare
        delay = self.prepare_delay(context) if delay_s is None else delay_s

        def work(ctx) -> None:
            if delay and ctx.wait_cancelled(delay):
                return None   # the user typed on
            prepare(request, ctx)
            return None

        self.scheduler.submit(context, Priority.PREPARE, work, lambda _: None, epoch=epoch)

    def warm_space_for(self, context: ContextId, epoch: int, request: ConversionRequest) -> None:
        """Have the converter work out what it keeps of Space's first answer for `request`
        (LiveConverter.warm_space) for the event `epoch`; dropped unrun once a newer event
        began. Nothing is delivered: a Space finds it in the converter's caches."""
        if not request.reading or self.scheduler.epoch(context) != epoch:
            return
        warm = self.converter.warm_space

        def work(ctx: JobContext) -> None:
            if not ctx.cancelled():
                try:
                    warm(request)
                except Exception as exc:   # Space itself will say so; no traceback quoting a reading
                    log.debug("warming Space stopped: %s", type(exc).__name__)
            return None

        self.scheduler.submit(context, Priority.ANTICIPATE, work, lambda _: None, epoch=epoch)

    def anticipate(self, context: ContextId, epoch: int,
                   requests: Callable[[], Sequence[ConversionRequest]]) -> None:
        """Work out the quick live text of each of `requests()` (the readings the next letter
        can make) for the event `epoch`, so that letter's key finds it in the converter's
        caches. Stops between readings once a newer event began; nothing is delivered."""
        if self.scheduler.epoch(context) != epoch:
            return
        quick = self.converter.live_quick

        def work(ctx: JobContext) -> None:
            for request in requests():
                if ctx.cancelled():
                    return None
                try:
                    quick(request)
                except Exception as exc:   # the key itself will say so; no traceback quoting a reading
                    log.debug("anticipation stopped: %s", type(exc).__name__)
                    return None
            return None

        self.scheduler.submit(context, Priority.ANTICIPATE, work, lambda _: None, epoch=epoch)

    def call(self, context: ContextId, work: Callable[[], Any], priority: Priority = Priority.EXPLICIT) -> Any:
        """Run `work` on a worker, ahead of lower-priority work of every context, and wait.

        Newer events do not cancel it (the caller is waiting for it); its exception is re-raised here.
        """
        done = threading.Event()
        box: list[tuple[bool, Any]] = []

        def job(ctx) -> None:
            try:
                box.append((True, work()))
            except BaseException as exc:  # handed to the waiting caller
                box.append((False, exc))
            finally:
                done.set()

        self.scheduler.submit(context, priority, job, lambda _: None, supersedable=False)
        while not done.wait(0.5):
            if self.scheduler.closed:
                raise RuntimeError("scheduler shut down before the conversion ran")
        ok, value = box[0]
        if not ok:
            raise value
        return value

    def close_context(self, context: ContextId) -> None:
        self.rhythm.forget(context)
        self.scheduler.close_context(context)

    def shutdown(self) -> None:
        if self._own_scheduler:
            self.scheduler.shutdown()


@dataclass(frozen=True)
class LiveLink:
    """One input context's end of the live service, given to its session: the session begins
    each event through it and asks for the event's live text; updates go to `deliver` (the
    context host), never back into the session from a worker thread."""

    service: LiveService
    context: ContextId
    deliver: LiveDelivery
    defer: Deferral | None = None   # None: suggestion jobs are queued at once and wait in the job

    def begin(self) -> int:
        return self.service.begin(self.context)

    def key(self, epoch: int, request: ConversionRequest) -> str:
        return self.service.key(self.context, epoch, request, self.deliver)

    def request(self, kind: UpdateKind, epoch: int, request: ConversionRequest, n: int = 6) -> None:
        """Ask for the late answer of `kind` (SUGGESTIONS, or CONVERSION after a quick Space
        that was not final); it arrives through `deliver`. With a host, the request starts
        once the event's own reply is out."""
        self._start(epoch, lambda delay_s: self.service.request(kind, self.context, epoch, request, self.deliver,
                                                                n=n, delay_s=delay_s))

    def convert_quick(self, request: ConversionRequest) -> tuple[list[Segment], bool]:
        """Space's segments now, and whether they are final (else: request CONVERSION)."""
        return self.service.converter.convert_quick(request)

    def anticipate(self, epoch: int, requests: Callable[[], Sequence[ConversionRequest]]) -> None:
        """Ask for the live text of the readings the next letter can make (worked out by
        `requests` off the key path) while the user is between keys."""
        self._start(epoch, lambda _delay_s: self.service.anticipate(self.context, epoch, requests))

    def can_prepare(self) -> bool:
        """Whether asking for a preparation can do anything (a model ready, preparing on), so
        the session skips working out the request when it cannot."""
        return self.service.converter.can_prepare()

    def prepare(self, epoch: int, request: ConversionRequest) -> None:
        """Ask for Space's conversion of `request` to be computed while the user pauses."""
        self._start(epoch, lambda delay_s: self.service.prepare_for(self.context, epoch, request, delay_s=delay_s),
                    self.service.prepare_delay(self.context))

    def warm_space(self, epoch: int, request: ConversionRequest) -> None:
        """Ask for the dictionary's part of Space's first answer for `request` to be worked out
        right after the key (LiveService.warm_space_for)."""
        self._start(epoch, lambda _delay_s: self.service.warm_space_for(self.context, epoch, request),
                    WARM_SPACE_DELAY_S)

    def _start(self, epoch: int, start: Callable[[float | None], None], after_s: float = 0.0) -> None:
        """start(delay_s) now, the job waiting the service's own delay (None), or with a host
        from its loop once the reply is out and `after_s` passed (the wait done there: 0)."""
        if self.defer is None:
            start(None)
        else:
            self.defer(epoch, lambda: start(0.0), after_s)
