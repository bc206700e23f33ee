"""build_fused_converter: the fused pipeline the factory builds, with its model loading."""

from __future__ import annotations

import logging
import math
import threading
from dataclasses import replace
from typing import TYPE_CHECKING

from karukan_engine.conversion.contracts import DictionaryConverter, EngineConverter
from karukan_engine.conversion.fused.converter import FusedConverter
from karukan_engine.conversion.model_slot import ModelSlot
from karukan_engine.conversion.settings import ConversionSettings

if TYPE_CHECKING:
    from karukan_engine.conversion.factory import ConverterOptions

log = logging.getLogger(__name__)


def build_fused_converter(base: DictionaryConverter, options: ConverterOptions) -> EngineConverter:
    """The fused pipeline over `base`, with the configured model loading in the background.

    options: factory.ConverterOptions. Without `require_model`, a missing model leaves the
    dictionary converter and a model that fails to load leaves a FusedConverter that answers like
    `base`. With it (the user named the model), either raises a NeuralError instead.
    """
    required = options.require_model
    try:
        from karukan_engine.neural.background import load_in_background
        from karukan_engine.neural.errors import NeuralError
        from karukan_engine.neural.registry import resolve_model
    except ImportError as exc:
        if required:
            raise NeuralError(f"the neural backend is not installed ({exc.name})") from exc
        log.warning("neural backend not installed; dictionary only")
        return base
    try:
        resolved = resolve_model(options.model_id)  # fails fast (no thread) when not installed
    except NeuralError as exc:
        if required:
            raise
        # NeuralError messages name files and ids, never user text: the user sees what to fix.
        log.warning("no model for the fused converter (%s: %s); dictionary only", type(exc).__name__, exc)
        return base
    model_id = resolved.entry.id if resolved.entry is not None else (options.model_id or "default")
    settings = options.conversion or ConversionSettings.from_config()
    settings = settings.for_model(model_id)
    if options.batch:
        settings = replace(settings, space_budget_ms=math.inf)
    handle = load_in_background(options.model_id) if options.model_id else _load_default()
    if required:
        handle.wait()   # raises the load error itself, before a slot would log a fall back
    slots = [ModelSlot(handle, model_id)]
    if settings.light_model:
        # A light model is optional: if it fails to load, its slot simply stays empty.
        slots.append(ModelSlot(load_in_background(settings.light_model), settings.light_model))
    ngram = bundled_ngram() if settings.weights.ngram else None   # loaded only when it counts
    converter = FusedConverter(base, slots, settings, lexicon=base.lexicon, ngram=ngram)
    if not options.load_in_background:
        converter.wait_for_model()
        if converter.ngram is not None:
            converter.ngram.settle()
    elif not math.isinf(settings.space_budget_ms):
        threading.Thread(target=converter.warm_up, name="karukan-space-warm-up", daemon=True).start()
    return converter


def bundled_ngram():
    """A LoadHandle of the bundled character n-gram, loading on a thread of its own."""
    from karukan_engine.lm.bundled import shared_ngram

    return shared_ngram()


def _load_default():
    from karukan_engine.neural.background import LoadHandle
    from karukan_engine.neural.registry import load_model_by_id_or_path

    return LoadHandle(lambda: load_model_by_id_or_path(None))
