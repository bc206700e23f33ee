"""The neural model as the conversion pipeline sees it: maybe still loading, maybe absent.

The slot wraps a background load handle (karukan_engine.neural.background) or a loaded model.
Until the model is ready, and for good if it failed to load, `get()` returns None and the
pipeline works on the dictionary alone. Greedy conversions of every worker thread go through one
GreedyBatcher (karukan_engine.scheduling.greedy_batcher): one GreedyPool per model that keeps
each session's tokens under its own sequence id (beyond SESSION_SEQUENCES, the least recently
used session's state is saved and restored later), so a key re-decodes only what changed, its
last output is the draft for its next key (see karukan_engine.neural.greedy_pool), and
sessions whose jobs are ready together are decoded in one batch.
"""

from __future__ import annotations

import logging
import threading
from typing import Any, Callable, Hashable, Sequence

from karukan_engine.conversion.contracts import ModelSource
from karukan_engine.core.lru import Lru
from karukan_engine.scheduling.greedy_batcher import GreedyBatcher
from karukan_engine.neural.generation import Generation
from karukan_engine.neural.greedy_pool import GreedyJob, GreedyPool
from karukan_engine.neural.prompt import clean_output

log = logging.getLogger(__name__)

DEFAULT_MAX_NEW = None   # the model family's output budget (prompt.PromptFamily.max_new_tokens)
# Greedy outputs remembered by prompt: Space asks for the text live conversion just decoded.
GREEDY_MEMO = 64
SESSION_SEQUENCES = 16  # sessions whose KV stays live in the shared context (also the batch cap)
_VERIFY = object()  # the sequence that draft checks use


class _LastCall(threading.local):
    atypical = True   # per thread: was the last greedy call's time not the model's service time?


class Loaded:
    """A ModelSource whose model is already loaded (or absent for good: None)."""

    def __init__(self, model: Any) -> None:
        self.model = model
        self.error: Exception | None = None

    def ready(self) -> bool:
        return self.model is not None

    def done(self) -> bool:
        return True

    def wait(self, timeout: float | None = None) -> Any:
        return self.model


class ModelSlot:
    def __init__(self, source: Any, model_id: str, fixed_tokens: int | None = None,
                 greedy_memo: int = GREEDY_MEMO,
                 draft_for: Callable[[Sequence[int], int], Sequence[int] | None] | None = None) -> None:
        """source: a ModelSource (a model loading in the background) or a loaded NeuralModel.

        fixed_tokens: benchmarks with random-weight models only: every greedy conversion
        generates exactly this many tokens (stop tokens ignored), so timings mean something.
        greedy_memo: how many greedy outputs to remember by prompt (0: decode every call).
        draft_for: benchmarks only: (prompt ids, room) -> the draft that greedy job checks
        (None: the automatic one), to simulate how often a trained model accepts its drafts.
        """
        self.draft_for = draft_for
        self.greedy_memo = greedy_memo
        self.model_id = model_id
        self.fixed_tokens = fixed_tokens
        # Decided once here: every later call talks to a ModelSource.
        self._source: ModelSource = source if isinstance(source, ModelSource) else Loaded(source)
        self._local = _LastCall()
        self._batcher: GreedyBatcher | None = None
        self._lock = threading.Lock()
        self._failure_logged = False
        self._memo: Lru[tuple, Generation] = Lru(greedy_memo)

    def get(self):
        """The loaded model, or None while loading or after a failed load."""
        source = self._source
        if source.ready():
            return source.model
        if source.done() and source.error is not None and not self._failure_logged:
            self._failure_logged = True
            log.warning("model %s unavailable, dictionary only: %s", self.model_id, source.error)
        return None

    def wait(self, timeout: float | None = None):
        """Block until loading ends; the model or None when it failed."""
        try:
            return self._source.wait(timeout)
        except TimeoutError:
            return None
        except Exception:  # the load error is reported once by get()
            return self.get()

    def greedy(self, reading: str, context: str = "", max_new: int | None = DEFAULT_MAX_NEW,
               owner: Hashable | None = None,
               should_stop: Callable[[], bool] | None = None) -> Generation | None:
        """Greedy conversion reusing the owner's (session's) KV state, with its last output as
        the draft, decoded together with other threads' ready conversions; None without a
        model. Raises scheduler.Cancelled when should_stop() turned true before it finished."""
        model = self.get()
        if model is None:
            return None
        if not model.has_reading(reading):
            return Generation("", (), 0.0, False)
        prompt, room, stop_ids = self._job_shape(model, reading, context, max_new)
        key = (tuple(prompt), room)
        remembered = self._remembered(key)
        if remembered is not None:
            self._local.atypical = True   # no decode: not a service-time sample
            return remembered
        draft = self.draft_for(prompt, room) if self.draft_for is not None else None
        job = GreedyJob(owner, prompt, room, stop_ids, draft=draft, should_stop=should_stop)
        served = self._batcher_for(model).generate(job)
        self._local.atypical = served.cold or served.waited
        out, logprob, finished = served.result
        generation = Generation(clean_output(model.tokenizer.decode(out)), tuple(out), logprob, finished)
        with self._lock:
            self._memo.put(key, generation)
        return generation

    def remembered_greedy(self, reading: str, context: str = "",
                          max_new: int | None = DEFAULT_MAX_NEW) -> Generation | None:
        """The greedy output for exactly this call if one was decoded lately, else None (no
        decode): greedy decoding is deterministic, so it is the same text."""
        model = self.get()
        if model is None or not model.has_reading(reading):
            return None
        prompt, room, _stops = self._job_shape(model, reading, context, max_new)
        return self._remembered((tuple(prompt), room))

    def _job_shape(self, model, reading: str, context: str, max_new: int | None):
        prompt = model.prompt_ids(reading, context)
        # Never more than the family's budget (upstream's 50 tokens).
        budget = model.family.max_new_tokens
        wanted = budget if max_new is None else min(max_new, budget)
        room = max(0, min(wanted, model.n_ctx_train - len(prompt)))
        stop_ids = model.stop_ids
        if self.fixed_tokens is not None:
            room, stop_ids = min(self.fixed_tokens, model.n_ctx_train - len(prompt)), frozenset()
        return prompt, room, stop_ids

    def _remembered(self, key: tuple) -> Generation | None:
        if self.fixed_tokens is not None:
            return None   # benchmarks of random-weight models time every decode
        with self._lock:
            return self._memo.get(key)

    def last_call_atypical(self) -> bool:
        """True when this thread's last greedy call's time was not the model's service time (the
        deadline predictor's sample): it had to create the llama context, or it queued behind
        another thread's batch (queueing, like time in the scheduler's queue, is not service)."""
        return self._local.atypical

    def batching(self) -> tuple[int, int]:
        """(generate_many batches, greedy jobs they decoded) so far, for benchmarks."""
        with self._lock:
            batcher = self._batcher
        return (batcher.batches, batcher.jobs) if batcher is not None else (0, 0)

    def check_draft(self, reading: str, context: str, surface: str) -> str | None:
        """Zenzai-style check of a whole conversion in one teacher-forced pass.

        None when the model's argmax agrees with every token of `surface` (or no model); else the
        prefix the model prefers: the agreed text plus the model's own next token.
        """
        model = self.get()
        if model is None:
            return None
        # The surface's tokens as the model sees them after this prompt: one joint encoding.
        joint = model.joint_ids(reading, context, [surface])[0]
        prompt, ids = joint.prompt, joint.surface
        with self._batcher_for(model).exclusive() as pool:
            agreed, token = pool.first_disagreement(_VERIFY, prompt, ids)
        if token in model.stop_ids:
            return None  # agrees to the end, or would stop early: keep the draft
        return clean_output(model.tokenizer.decode(ids[:agreed] + [token]))

    def _batcher_for(self, model) -> GreedyBatcher:
        with self._lock:
            if self._batcher is None:
                pool = GreedyPool(model.llama, model.options.n_threads, slots=SESSION_SEQUENCES)
                self._batcher = GreedyBatcher(pool)
            return self._batcher

    def release(self) -> None:
        """Free the decoding contexts and remembered outputs; the model stays loaded."""
        with self._lock:
            batcher, self._batcher = self._batcher, None
            self._memo.clear()
        if batcher is not None:
            batcher.close()

    def close(self) -> None:
        self.release()
        model = self.get()
        if model is not None:
            model.close()
