"""Input contexts hosted by a process: one Session each, run off the asyncio event loop.

Conversion may take milliseconds (dictionary) to tens of milliseconds (model), so every session
call runs on a worker thread. Calls on one context run one at a time in arrival order (an
asyncio.Lock is FIFO and the first await of each call is the lock), so no key is lost or reordered.
All contexts share one converter; a single worker thread by default keeps it single-threaded.

Live conversion is asynchronous: a key is answered with the dictionary's text, and the model's
text arrives later from the engine's LiveService (one per process) as an immutable LateUpdate
addressed to the context's id. `ContextHost.deliver` takes it from the scheduler thread to the
event loop, applies it to the session on the session's worker under the same per-context lock
as every other call (so it is ordered with the keys and the session's staleness check sees the
latest event), and hands the view to `on_update`: the one way a late view reaches a frontend.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
import sys
import time
from concurrent.futures import Executor
from typing import Any, Callable, Hashable, Iterable

from dbus_fast.errors import DBusError

from ime_frontend.fair import FairExecutor
from ime_frontend.idle_gc import IdleCollector
from ime_frontend.toolkit import field_privacy, session_key_state
from karukan_engine.config import Config, ConfigError
from karukan_engine.conversion.contracts import EngineConverter
from karukan_engine.live.live_service import (
    SUGGESTION_DELAY_S,
    ContextId,
    LiveLink,
    LiveService,
    LateUpdate,
)
from karukan_engine.session import Session
from karukan_engine.session.view import View

log = logging.getLogger(__name__)

ViewListener = Callable[[View], None]
# How many times deferred work waits again for the session workers to be free (then it runs).
MAX_POSTPONES = 20
# How long a thread may hold the GIL while another waits for it (Python's default: 5 ms). A key
# reaches the engine while live refinement or a preparation runs Python on a worker, and its
# answer crosses threads (the bus loop, a session worker, the loop again): each crossing waited
# for the running work's turn to end. KARUKAN_SWITCH_INTERVAL_MS overrides it (benchmarks).
SWITCH_INTERVAL_S = 0.001
# A commit's choices are learned this long after its reply (0.1-0.2 ms of a Return otherwise; the
# wait lets the reply leave before the session worker takes the interpreter again).
LEARN_AFTER_S = 0.002


class EngineClosing(DBusError):
    """A call that reached a context after its engine began shutting down (the daemon was lost,
    a signal came). A D-Bus error reply and nothing logged: thousands of keys may still be queued
    then, and a traceback for each filled the log (tests/e2e/test_e2e_ibus_flood.py)."""

    def __init__(self) -> None:
        super().__init__("org.freedesktop.DBus.Error.Failed", "the engine is shutting down")


class ContextHost:
    """One input context: a Session plus ordering, off-loop execution and late-view delivery.

    context_id names the context to the live service; with `live`, it must be unique among the
    contexts sharing that service (EngineCore.new_context numbers them).
    """

    def __init__(self, session: Session, executor: Executor, loop: asyncio.AbstractEventLoop,
                 on_update: ViewListener | None = None, live: LiveService | None = None,
                 context_id: ContextId = 0, collector: IdleCollector | None = None) -> None:
        self.context_id = context_id
        self._collector = collector   # told when each call ends: garbage is collected in pauses
        self._session = session
        self._executor = executor
        self._loop = loop
        self._lock = asyncio.Lock()
        self._on_update = on_update
        self._live = live
        self._tasks: set[asyncio.Task] = set()
        # Work the session's live link deferred during a call (suggestion requests, Space's
        # preparation): started from the loop once the call's view is back, so it never competes
        # with the call. (epoch, work, at least this long after the reply)
        self._deferred: list[tuple[int, Callable[[], None], float]] = []
        self.closed = False
        self.last_used = time.monotonic()   # when a call last started or ended (eviction order)
        if live is not None:
            session.attach_live(LiveLink(live, context_id, self.deliver,
                                         lambda epoch, work, after_s: self._deferred.append((epoch, work, after_s))))

    async def call(self, fn: Callable[..., Any], *args: Any) -> View:
        """Run fn(session, *args) on the worker; return the session's view afterwards."""
        self.last_used = time.monotonic()
        try:
            async with self._lock:
                try:
                    work = self._loop.run_in_executor(self._executor, _invoke, self._session, fn, args)
                except RuntimeError:   # the executor was shut down: calls still queued on the bus
                    raise EngineClosing() from None
                view = await work
                self._start_deferred()
                if self._session.learning_pending:
                    # a commit's choices are learned once its reply is out (before the next call)
                    self._loop.call_later(LEARN_AFTER_S, self._learn_pending)
                return view
        finally:
            self.last_used = time.monotonic()
            if self._collector is not None:
                self._collector.activity(self._loop)

    def _learn_pending(self) -> None:
        if not self._session.learning_pending:
            return   # an event learned them first
        try:
            task = self._loop.create_task(self.call(Session.learn_pending))
        except RuntimeError:   # the loop has ended (shutting down)
            return
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _start_deferred(self) -> None:
        # Later than the reply: the frontend sends it as soon as this call returns.
        while self._deferred:
            epoch, work, after_s = self._deferred.pop(0)
            self._loop.call_later(after_s or SUGGESTION_DELAY_S, self._run_deferred, epoch, work, 0)

    def _run_deferred(self, epoch: int, work: Callable[[], None], postponed: int) -> None:
        if self.closed or self._live is None or self._live.scheduler.epoch(self.context_id) != epoch:
            return   # a newer event came: the work is moot
        if postponed < MAX_POSTPONES and self._keys_waiting():
            # Keys of other contexts wait for the session workers: they go first, and a search
            # now would hold the GIL against them.
            self._loop.call_later(SUGGESTION_DELAY_S, self._run_deferred, epoch, work, postponed + 1)
            return
        try:
            work()
        except RuntimeError:   # the scheduler has shut down
            pass

    def _keys_waiting(self) -> bool:
        return isinstance(self._executor, FairExecutor) and self._executor.queued > 0

    @property
    def busy(self) -> bool:
        """A call is running or waiting: the context is in use right now."""
        return self._lock.locked()

    def deliver(self, update: LateUpdate) -> None:
        """Any thread (a scheduler worker): a model update for this context. It travels as a
        value; the session sees it only on its own worker, in order with the keys."""
        if self.closed:
            return
        try:
            self._loop.call_soon_threadsafe(self._start_apply, update)
        except RuntimeError:  # the event loop has ended (shutting down): nobody to show it to
            pass

    def _start_apply(self, update: LateUpdate) -> None:
        task = self._loop.create_task(self._apply(update))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _apply(self, update: LateUpdate) -> None:
        async with self._lock:
            if self.closed:
                return
            # None when the update is stale (a newer event came meanwhile; the session checks).
            try:
                view = await self._loop.run_in_executor(self._executor, self._session.apply_live_update, update)
            except Exception as exc:  # shutting down (executor closed) or a session bug: keep typing
                log.warning("live update failed: %s", type(exc).__name__)
                return
            # Emitted while holding the lock: no later key's answer can overtake this view.
            if view is not None and not self.closed and self._on_update is not None:
                self._on_update(view)
            if self._collector is not None:
                self._collector.activity(self._loop)

    # The operations every frontend needs, named as the session names them.
    async def process_key(self, keysym: int, modifiers: int, release: bool) -> View:
        modifiers, release = session_key_state(modifiers, release)
        return await self.call(lambda s: s.process_key(keysym, modifiers, release))

    async def focus_in(self) -> View:
        return await self.call(lambda s: s.focus_in())

    async def focus_out(self) -> View:
        return await self.call(lambda s: s.focus_out())

    async def reset(self) -> View:
        return await self.call(lambda s: s.reset())

    async def set_surrounding_text(self, text: str, cursor: int, anchor: int | None) -> View:
        return await self.call(lambda s: s.set_surrounding_text(text, cursor, anchor))

    async def set_content_type(self, purpose: int, hints: int) -> View:
        return await self.call(lambda s: s.set_field_privacy(field_privacy(purpose, hints)))

    async def select_candidate(self, index: int) -> View:
        return await self.call(lambda s: s.select_candidate(index))

    async def page_up(self) -> View:
        return await self.call(lambda s: s.page_up())

    async def page_down(self) -> View:
        return await self.call(lambda s: s.page_down())

    async def set_input_mode(self, mode: str) -> View:
        return await self.call(lambda s: s.set_input_mode(mode))

    async def set_enabled(self, on: bool) -> View:
        return await self.call(lambda s: s.set_enabled(on))

    async def return_committed(self, text: str) -> View:
        return await self.call(lambda s: s.return_committed(text))

    async def get_view(self) -> View:
        return await self.call(lambda s: None)

    async def close(self) -> None:
        """Learn what the last commit chose (if the host has not yet), then detach."""
        if not self.closed and self._session.learning_pending:
            await self.call(Session.learn_pending)
        self.detach()

    def detach(self) -> None:
        """The context is gone: drop its pending model work and never deliver another view."""
        if self.closed:
            return
        self._learn_pending()   # what the last commit chose is still learned
        self.closed = True
        if self._live is not None:
            self._live.close_context(self.context_id)


def eviction_victim(contexts: Iterable[tuple[Hashable, str, float, bool]]) -> Hashable | None:
    """Which context to close when the process holds as many as it may: the least recently used
    idle context of the client holding the most contexts (between clients holding as many, the
    one whose idle context waited longest). contexts: (key, owner, last_used, busy). None when
    every context is busy.

    One client opening thousands of contexts then only ever displaces its own, and a new
    application always gets one.
    """
    held: dict[str, int] = {}
    oldest: dict[str, tuple[float, Hashable]] = {}
    for key, owner, last_used, busy in contexts:
        held[owner] = held.get(owner, 0) + 1
        if not busy and (owner not in oldest or last_used < oldest[owner][0]):
            oldest[owner] = (last_used, key)
    if not oldest:
        return None
    owner = max(oldest, key=lambda o: (held[o], -oldest[o][0]))
    return oldest[owner][1]


def _invoke(session: Session, fn: Callable[..., Any], args: tuple) -> View:
    result = fn(session, *args)
    # Some session calls return None (surrounding text, content type): answer with the current view.
    return result if isinstance(result, View) else session.view


class EngineCore:
    """The converter, worker threads and live-conversion scheduler shared by all contexts."""

    def __init__(self, converter: EngineConverter, workers: int = 1, config: Config | None = None) -> None:
        favour_waiting_threads()
        self.collector = IdleCollector()
        self.collector.start()
        self.converter = converter
        self.config = config
        # Clients take turns on the workers (ime_frontend.fair): a flood from one cannot starve others.
        self.executor = FairExecutor(workers, thread_name_prefix="karukan-session")
        self.live = LiveService(converter)   # one scheduler for every context of the process
        self._context_ids = itertools.count(1)   # the live service's names for the contexts

    def new_context(self, loop: asyncio.AbstractEventLoop, on_update: ViewListener | None = None) -> ContextHost:
        return ContextHost(Session(self.converter, self.config), self.executor, loop, on_update, self.live,
                           next(self._context_ids), self.collector)

    def close(self) -> None:
        """Finish queued work, stop live refinement, then let the converter save and close."""
        self.executor.shutdown(wait=True)
        self.live.shutdown()
        for name, step in (("save", self.converter.save), ("close", self.converter.close)):
            try:
                step()
            except Exception:  # shutting down: report, never crash on the way out
                log.exception("converter %s() failed during shutdown", name)


def favour_waiting_threads() -> None:
    """Hand the GIL to a waiting thread after SWITCH_INTERVAL_S (or the override) of running."""
    try:
        interval = float(os.environ["KARUKAN_SWITCH_INTERVAL_MS"]) / 1000.0
    except (KeyError, ValueError):
        interval = SWITCH_INTERVAL_S
    if interval > 0:
        sys.setswitchinterval(interval)


def build_core(use_model: bool = True, model_id: str | None = None, workers: int = 1) -> EngineCore:
    from karukan_engine.conversion.factory import ConverterOptions, build_converter

    # The model loads on a thread: the dictionary answers until it is ready, so startup never waits.
    options = ConverterOptions(use_model=use_model, model_id=model_id, load_in_background=True)
    return EngineCore(build_converter(options), workers, _user_config())


def _user_config() -> Config:
    """The user's config file; each bad value falls back on its own (typing must keep working)."""
    try:
        config = Config.load()
    except ConfigError as exc:
        log.warning("config ignored: %s", exc)
        return Config()
    for problem in config.problems:
        log.warning("config: %s", problem)
    return config
