"""The declared contracts of the conversion layer, beyond the session's `Converter` (types.py).

Callers type against these protocols and call their members directly; nothing probes a converter
with getattr/hasattr. tests/test_contracts.py checks that every concrete class and every test
fake named there implements its protocols with the same signatures, so drift fails a test.

    Converter            what a Session calls: convert, candidates, live, record (types.py)
    Persistent           save() now, close() at exit: user data reaches the disk
    EngineConverter      a converter a process owns: Converter + Persistent
    DictionaryConverter  the dictionary layer under the fusion: + learning, dictionary
    LiveConverter        the fused pipeline: + live_quick / live_refined / model_ready, suggestions,
                         can_prepare / prepare (Space's conversion computed while the user pauses),
                         convert_quick / refined_conversion (Space answered at once, refined after)
    ModelSource          what a ModelSlot waits on: a model loading in the background
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from karukan_engine.core.types import Candidate, ConversionRequest, Converter, Segment

if TYPE_CHECKING:
    from karukan_engine.scheduling.scheduler import JobContext
    from karukan_engine.conversion.settings import ConversionSettings
    from karukan_engine.dictionary.learning import LearningStore
    from karukan_engine.dictionary.system import SystemDictionary


@runtime_checkable
class Persistent(Protocol):
    """Holds user data (learning) that must reach the disk."""

    def save(self) -> bool:
        """Write pending data now; True when everything is on disk."""
        ...

    def close(self) -> None:
        """Write what is pending and release files and models; the last call."""
        ...


@runtime_checkable
class EngineConverter(Converter, Persistent, Protocol):
    """The converter a process (CLI, engine service) builds once, shares and shuts down."""


@runtime_checkable
class DictionaryConverter(EngineConverter, Protocol):
    """The dictionary converter the fused pipeline stands on (LatticeConverter; PlainConverter
    when no dictionary is built): its learning history and system dictionary feed suggestions,
    alignment and the "chosen before" rule."""

    learning: LearningStore | None
    dictionary: SystemDictionary | None
    # what alignment reads: the system dictionary with any words the converter adds to it
    lexicon: object | None

    def data_version(self) -> tuple[int, ...]:
        """Changes whenever the user's data changed (learning, user dictionary, also on disk):
        a conversion kept from before is then out of date."""
        ...


@runtime_checkable
class LiveConverter(EngineConverter, Protocol):
    """A converter whose live text a model refines off the key path (FusedConverter).

    live_quick answers the key at once; live_refined runs on a scheduler worker and may take
    the key's whole time budget (ctx.remaining()); LiveService drives both.
    """

    settings: ConversionSettings

    def model_ready(self) -> bool:
        """True when a loaded model has a say (False while it loads, and when the weights give
        it none): it may refine the suggestions."""
        ...

    def refines_live(self) -> bool:
        """True when live_refined can change live_quick's text (a model is ready and the
        weights let its text come first); LiveService queues no live refinement otherwise."""
        ...

    def live_quick(self, request: ConversionRequest) -> str:
        """The live text a key gets at once (dictionary, plus chunks a model already refined)."""
        ...

    def live_refined(self, request: ConversionRequest, ctx: JobContext | None = None) -> str | None:
        """The model's live text, or None (no model, over budget, or ctx cancelled)."""
        ...

    def suggestions(self, request: ConversionRequest, n: int = 6) -> list[Candidate]:
        """Up to n completions of what was typed, best first."""
        ...

    def refined_suggestions(self, request: ConversionRequest, n: int = 6,
                            ctx: JobContext | None = None) -> list[Candidate] | None:
        """The completions with a model's view of them, or None (no model, nothing it would
        change, over budget, or ctx cancelled); runs after suggestions, on a scheduler worker."""
        ...

    def can_prepare(self) -> bool:
        """True when prepare() would compute something Space can use (a model is ready and
        preparing is on); LiveService schedules no preparation otherwise."""
        ...

    def prepare(self, request: ConversionRequest, ctx: JobContext | None = None) -> bool:
        """Compute what convert(request) will return and keep it for that call; runs on a
        scheduler worker and stops between stages when ctx is superseded or outranked. True
        when the conversion is ready."""
        ...

    def convert_quick(self, request: ConversionRequest) -> tuple[list[Segment], bool]:
        """Space's segments without waiting for a model, and whether they are final. False: a
        model's conversion may differ, and refined_conversion(request) computes it."""
        ...

    def refined_conversion(self, request: ConversionRequest, ctx: JobContext | None = None) -> list[Segment] | None:
        """The model's full conversion after convert_quick said it was not final; runs on a
        scheduler worker. None: nothing to add, ctx superseded, or the model failed."""
        ...

    def warm_space(self, request: ConversionRequest) -> None:
        """Work out, on a scheduler worker, the part of convert_quick(request)'s answer that no
        model work changes and its caches keep (the dictionary's segments and the first one's
        candidate list), so a Space typed right after a key finds it; nothing where that answer
        needs the model."""
        ...


@runtime_checkable
class ModelSource(Protocol):
    """A model that may still be loading (neural.background.LoadHandle)."""

    model: Any
    error: Exception | None

    def ready(self) -> bool:
        """True once loading succeeded."""
        ...

    def done(self) -> bool:
        """True once loading ended, either way."""
        ...

    def wait(self, timeout: float | None = None) -> Any:
        """The model; raises the load error, or TimeoutError while still loading."""
        ...
