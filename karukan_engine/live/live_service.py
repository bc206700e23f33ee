"""Live conversion for many input contexts: the quick answer now, the model's answer later.

The flow is one way. Each event of a context begins one new epoch (`begin`: the only
supersession, which drops the context's older work). `key()` answers that event with the
dictionary text at once and, when a model is ready, queues the model's refinement on the
scheduler. The scheduler hands the refined text, as an immutable LiveUpdate addressed to the
context and the epoch, to the context's `deliver` callback (never after a newer event has
begun, see scheduler.py); the context host applies it to its session on the session's own
executor and emits the view.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any, Callable, Hashable, Sequence

from karukan_engine.conversion.contracts import DictionaryConverter, LiveConverter
from karukan_engine.conversion.scheduler import JobContext, Priority, Scheduler
from karukan_engine.conversion.settings import ConversionSettings
from karukan_engine.conversion.suggest import suggestions as completions
from karukan_engine.core.types import Candidate, ConversionRequest, Converter, Segment

# An input context as the scheduler knows it: a number its host was given (never id() of an
# object, which Python reuses once the object is gone).
ContextId = Hashable


@dataclass(frozen=True)
class LiveUpdate:
    """A model refinement on its way from a scheduler worker to the context that asked for it."""

    context: ContextId
    epoch: int        # the event (begin) this text belongs to
    reading: str
    text: str
    changed: bool = True   # False: the model agreed with the quick text (only with deliver_unchanged)


@dataclass(frozen=True)
class SuggestionUpdate:
    """Completions of the reading an event left composed, on their way to that context."""

    context: ContextId
    epoch: int        # the event they were asked for
    reading: str
    suggestions: tuple[Candidate, ...]   # best first, never empty


@dataclass(frozen=True)
class ConversionUpdate:
    """The model's conversion for a Space that was answered at once (quick Space), on its way
    to that context; it replaces what is shown only if no event came since."""

    context: ContextId
    epoch: int        # the Space's event
    reading: str
    segments: tuple[Segment, ...]


LiveDelivery = Callable[["LiveUpdate | SuggestionUpdate | ConversionUpdate"], None]

# Suggestion work starts this long after its key: the key's reply (session, event loop, D-Bus)
# is Python too, and a search started at once would hold the GIL while that reply waits for it.
# A key typed meanwhile supersedes the wait, so fast typing costs no search at all.
SUGGESTION_DELAY_S = 0.010

# Space's conversion is prepared once the user paused this long after a key's reply: a key
# typed sooner supersedes it unrun. At 10 keys/s (100 ms between keys) this starts almost none;
# at 60 ms, typing replays started one after most keys only to stop it at the next, which took
# 25-40 ms of CPU per key instead of 4-11 and raised live refinement's p95 by 10-30 ms, past its
# 50 ms budget (docs/benchmarks.md, "Space prepared while the user pauses").
PREPARE_DELAY_S = 0.100

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
# reply at least (0: the host's own short delay, as for suggestions).
Deferral = Callable[[int, Callable[[], None], float], None]


class DictionaryOnly:
    """A LiveConverter over a converter without a model: the quick text is its live(), and
    nothing is ever refined. LiveService wraps such converters once, so it never probes."""

    def __init__(self, converter: Converter) -> None:
        self.converter = converter
        self.settings = ConversionSettings(workers=1)   # nothing runs in the background but calls

    def model_ready(self) -> bool:
        return False

    def live_quick(self, request: ConversionRequest) -> str:
        return self.converter.live(request)

    def live_refined(self, request: ConversionRequest, ctx: JobContext | None = None) -> str | None:
        return None

    def suggestions(self, request: ConversionRequest, n: int = 6) -> list[Candidate]:
        """Learned and dictionary completions when the converter has a dictionary layer."""
        base = self.converter
        if not isinstance(base, DictionaryConverter):
            return []
        return completions(request.reading, base.learning, base.dictionary, limit=n)

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
                 prepare_delay_s: float = PREPARE_DELAY_S) -> None:
        """deliver_unchanged: also deliver when the model's text equals the quick text
        (benchmarks time every finished refinement; frontends need only changes).
        suggestion_delay_s / prepare_delay_s: how long after its key suggestion work / the
        preparation of Space's conversion starts."""
        self.converter = live_converter(converter)
        self.deliver_unchanged = deliver_unchanged
        settings = self.converter.settings
        self.scheduler = scheduler or Scheduler(workers=settings.workers)
        self._own_scheduler = scheduler is None
        self.budget_s = (budget_ms if budget_ms is not None else settings.live_budget_ms) / 1000.0
        self.suggestion_delay_s = suggestion_delay_s
        self.prepare_delay_s = prepare_delay_s

    @property
    def asynchronous(self) -> bool:
        """True when a model can refine the quick text later."""
        return self.converter.model_ready()

    def begin(self, context: ContextId) -> int:
        """A new event in `context`: its earlier work is superseded. Returns the event's
        epoch, which key() and the updates it causes carry."""
        return self.scheduler.begin_key(context)

    def key(self, context: ContextId, epoch: int, request: ConversionRequest,
            deliver: LiveDelivery) -> str:
        """The live text to show now for the event `epoch`; a better one may follow as a
        LiveUpdate passed to `deliver` (on a scheduler worker)."""
        text = self.converter.live_quick(request)
        if request.reading and self.asynchronous:
            def work(ctx):
                refined = self.converter.live_refined(request, ctx)
                if not refined or (refined == text and not self.deliver_unchanged):
                    return None
                return refined

            def hand_over(refined: str) -> None:
                deliver(LiveUpdate(context, epoch, request.reading, refined, refined != text))

            self.scheduler.submit(context, Priority.LIVE, work, hand_over, budget_s=self.budget_s,
                                  epoch=epoch)
        return text

    def suggest(self, context: ContextId, request: ConversionRequest,
                on_suggestions: Callable[[list], None], n: int = 6) -> None:
        """Queue completions for the current event at the lowest priority; `on_suggestions`
        gets the list when there is one."""
        if not request.reading:
            return
        find = self.converter.suggestions
        self.scheduler.submit(context, Priority.SUGGESTION, lambda ctx: find(request, n) or None,
                              on_suggestions)

    def suggest_for(self, context: ContextId, epoch: int, request: ConversionRequest,
                    deliver: LiveDelivery, n: int = 6, delay_s: float | None = None) -> None:
        """Completions for the event `epoch`, delivered as a SuggestionUpdate when there are
        any; dropped unrun once a newer event began. The job waits `delay_s` (default
        suggestion_delay_s) before it searches; a newer event ends the wait."""
        if not request.reading or self.scheduler.epoch(context) != epoch:
            return   # already superseded: not even a worker is woken
        find = self.converter.suggestions
        delay = self.suggestion_delay_s if delay_s is None else delay_s

        def work(ctx) -> SuggestionUpdate | None:
            if delay and ctx.wait_cancelled(delay):
                return None   # a newer key came first
            found = tuple(find(request, n))
            return SuggestionUpdate(context, epoch, request.reading, found) if found else None

        def hand_over(update: SuggestionUpdate) -> None:
            deliver(update)
            if self.converter.model_ready():
                self._refine_suggestions(context, epoch, request, update.suggestions, deliver, n)

        self.scheduler.submit(context, Priority.SUGGESTION, work, hand_over, epoch=epoch)

    def _refine_suggestions(self, context: ContextId, epoch: int, request: ConversionRequest,
                            shown: tuple[Candidate, ...], deliver: LiveDelivery, n: int) -> None:
        """The model's ranking of the list just delivered, as a second update when it differs;
        its own job, so the dictionary's list never waits for the model, and a newer key
        cancels it (the scorer checks between completions) as does the budget."""
        refine = self.converter.refined_suggestions

        def work(ctx) -> SuggestionUpdate | None:
            found = refine(request, n, ctx)
            if not found or tuple(found) == shown or ctx.cancelled():
                return None
            return SuggestionUpdate(context, epoch, request.reading, tuple(found))

        self.scheduler.submit(context, Priority.SUGGESTION, work, deliver, epoch=epoch,
                              budget_s=SUGGESTION_MODEL_BUDGET_S)

    def prepare_for(self, context: ContextId, epoch: int, request: ConversionRequest,
                    delay_s: float | None = None) -> None:
        """Prepare Space's conversion of `request` for the event `epoch` at the lowest
        priority, after `delay_s` (default prepare_delay_s) of pause; dropped unrun, or stopped
        between stages, once a newer event began. Nothing is delivered: the converter keeps the
        result for its convert()."""
        if (not request.reading or request.fixed_lengths or self.scheduler.epoch(context) != epoch
                or not self.converter.can_prepare()):
            return
        prepare = self.converter.prepare
        delay = self.prepare_delay_s if delay_s is None else delay_s

        def work(ctx) -> None:
            if delay and ctx.wait_cancelled(delay):
                return None   # the user typed on
            prepare(request, ctx)
            return None

        self.scheduler.submit(context, Priority.PREPARE, work, lambda _: None, epoch=epoch)

    def refine_conversion_for(self, context: ContextId, epoch: int, request: ConversionRequest,
                              deliver: LiveDelivery, limit_s: float = QUICK_SPACE_LIMIT_S) -> None:
        """The model's conversion for the quick Space of event `epoch`, delivered as a
        ConversionUpdate if it is ready within limit_s; first among the queued work (the user
        waits for it), dropped or stopped once a newer event began."""
        if not request.reading or self.scheduler.epoch(context) != epoch:
            return
        refine = self.converter.refined_conversion

        def work(ctx) -> ConversionUpdate | None:
            segments = refine(request, ctx)
            if not segments or ctx.cancelled() or ctx.remaining() <= 0:
                return None   # superseded, failed or too late: the quick answer stays
            return ConversionUpdate(context, epoch, request.reading, tuple(segments))

        self.scheduler.submit(context, Priority.EXPLICIT, work, deliver, budget_s=limit_s, epoch=epoch)

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

    def suggest(self, epoch: int, request: ConversionRequest, n: int) -> None:
        """Ask for completions of the event's reading; they arrive through `deliver`."""
        if self.defer is None:
            self.service.suggest_for(self.context, epoch, request, self.deliver, n)
            return
        self.defer(epoch, lambda: self.service.suggest_for(self.context, epoch, request, self.deliver, n,
                                                           delay_s=0.0), 0.0)

    def convert_quick(self, request: ConversionRequest) -> tuple[list[Segment], bool]:
        """Space's segments now, and whether they are final (else: refine_conversion)."""
        return self.service.converter.convert_quick(request)

    def refine_conversion(self, epoch: int, request: ConversionRequest) -> None:
        """Ask for the model's conversion of a quick Space; it arrives through `deliver`."""
        def work() -> None:
            self.service.refine_conversion_for(self.context, epoch, request, self.deliver)
        if self.defer is None:
            work()
        else:
            self.defer(epoch, work, 0.0)   # once the Space's own reply is out

    def can_prepare(self) -> bool:
        """Whether asking for a preparation can do anything (a model ready, preparing on), so
        the session skips working out the request when it cannot."""
        return self.service.converter.can_prepare()

    def prepare(self, epoch: int, request: ConversionRequest) -> None:
        """Ask for Space's conversion of `request` to be computed while the user pauses."""
        if self.defer is None:
            self.service.prepare_for(self.context, epoch, request)
            return
        self.defer(epoch, lambda: self.service.prepare_for(self.context, epoch, request, delay_s=0.0),
                   self.service.prepare_delay_s)
