"""Live conversion for many sessions: the quick answer now, the model's answer later.

`key()` is called on the key-handling path. It supersedes the session's earlier work, returns
the dictionary text at once and, when a model is ready, queues the model's refinement on the
scheduler; the refined text arrives through the session's callback (never after a newer key,
see scheduler.py), which the frontend turns into a preedit update.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any, Callable, Hashable

from karukan_engine.conversion.scheduler import Priority, Scheduler
from karukan_engine.core.types import ConversionRequest, Converter


@dataclass(frozen=True)
class LiveUpdate:
    session: Hashable
    generation: int        # the scheduler generation (key) this text belongs to
    reading: str
    text: str
    changed: bool = True   # False: the model agreed with the quick text (only with deliver_unchanged)


class LiveService:
    def __init__(self, converter: Converter, scheduler: Scheduler | None = None,
                 budget_ms: float | None = None, deliver_unchanged: bool = False) -> None:
        """deliver_unchanged: also call back when the model's text equals the quick text
        (benchmarks time every finished refinement; frontends need only changes)."""
        self.converter = converter
        self.deliver_unchanged = deliver_unchanged
        settings = getattr(converter, "settings", None)
        workers = settings.workers if settings is not None else 1
        self.scheduler = scheduler or Scheduler(workers=workers)
        self._own_scheduler = scheduler is None
        default_budget = settings.live_budget_ms if settings is not None else 50.0
        self.budget_s = (budget_ms if budget_ms is not None else default_budget) / 1000.0

    @property
    def asynchronous(self) -> bool:
        """True when a model can refine the quick text later."""
        ready = getattr(self.converter, "ready_slots", None)
        return ready is not None and bool(ready())

    def key(self, session: Hashable, request: ConversionRequest,
            on_refined: Callable[[LiveUpdate], None]) -> str:
        """The live text to show now; a better one may follow through on_refined."""
        generation = self.scheduler.begin_key(session)
        quick = getattr(self.converter, "live_quick", None)
        if quick is None:
            return self.converter.live(request)
        text = quick(request)
        if request.reading and self.asynchronous:
            def work(ctx):
                refined = self.converter.live_refined(request, ctx)
                if not refined or (refined == text and not self.deliver_unchanged):
                    return None
                return refined

            def deliver(refined: str) -> None:
                on_refined(LiveUpdate(session, generation, request.reading, refined, refined != text))

            self.scheduler.submit(session, Priority.LIVE, work, deliver, budget_s=self.budget_s)
        return text

    def suggest(self, session: Hashable, request: ConversionRequest,
                on_suggestions: Callable[[list], None], n: int = 6) -> None:
        """Queue completions for the current key at the lowest priority (no-op without them)."""
        find = getattr(self.converter, "suggestions", None)
        if find is None or not request.reading:
            return
        self.scheduler.submit(session, Priority.SUGGESTION, lambda ctx: find(request, n) or None,
                              on_suggestions)

    def supersede(self, session: Hashable) -> None:
        """A key that needs no live text (commit, cancel, conversion): drop pending updates."""
        self.scheduler.begin_key(session)

    def call(self, session: Hashable, work: Callable[[], Any], priority: Priority = Priority.EXPLICIT) -> Any:
        """Run `work` on a worker, ahead of lower-priority work of every session, and wait.

        Newer keys do not cancel it (the caller is waiting for it); its exception is re-raised here.
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

        self.scheduler.submit(session, priority, job, lambda _: None, supersedable=False)
        while not done.wait(0.5):
            if self.scheduler.closed:
                raise RuntimeError("scheduler shut down before the conversion ran")
        ok, value = box[0]
        if not ok:
            raise value
        return value

    def close_session(self, session: Hashable) -> None:
        self.scheduler.close_session(session)

    def shutdown(self) -> None:
        if self._own_scheduler:
            self.scheduler.shutdown()
