"""Build the converter the CLI and the engine service use, from what is installed and configured.

Order of preference: the fused pipeline (dictionary + model) > the dictionary lattice alone >
the plain kana converter. Each layer is optional at import time so a missing piece degrades the
engine instead of breaking it.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING

from karukan_engine.conversion.contracts import DictionaryConverter, EngineConverter

if TYPE_CHECKING:
    from karukan_engine.conversion.settings import ConversionSettings

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ConverterOptions:
    use_model: bool = True          # False: dictionary (or plain kana) only, never load a model
    model_id: str | None = None     # a models.toml id or a path to a GGUF; None = the default
    # True: the user named the model (--model), so a model that is unknown, not downloaded or
    # failing to load is an error (NeuralError) instead of a silent fall back to the dictionary.
    require_model: bool = False
    # True (the engine service): answer from the dictionary while the model loads on a thread.
    # False (one-shot CLI commands): wait for the model before the first conversion.
    load_in_background: bool = False
    conversion: "ConversionSettings | None" = None  # the config's [conversion] table; None = defaults
    # True (`karukan convert`, `karukan eval`): every conversion gets all of the model's work,
    # whatever the Space budget; the budget is for typing, where the next key is waiting.
    batch: bool = False


def build_converter(options: ConverterOptions = ConverterOptions()) -> EngineConverter:
    base = _dictionary_converter(options.load_in_background)
    if base is None:
        from karukan_engine.conversion.plain import PlainConverter

        base = PlainConverter()
    if not options.use_model:
        return base
    try:
        from karukan_engine.conversion.fused import build_fused_converter
    except ImportError:
        return base
    return build_fused_converter(base, options)


def _dictionary_converter(load_in_background: bool) -> DictionaryConverter | None:
    """The lattice over the system dictionary, its paths judged with the bundled n-gram (which
    loads on a thread; one-shot commands wait for it, the engine answers without it meanwhile)."""
    try:
        from karukan_engine.lattice.converter import LatticeConverter
        from karukan_engine.lm.bundled import LoadedNgram, shared_ngram
    except ImportError:
        return None
    from karukan_engine.dictionary.format import DictionaryFormatError

    lm = LoadedNgram(shared_ngram())
    try:
        converter = LatticeConverter.load_default(lm=lm, words=True)
    except (FileNotFoundError, DictionaryFormatError) as exc:
        # Typing must keep working: kana only, with the reason in the log (no user text in it).
        log.warning("system dictionary unavailable (%s); using kana only", exc)
        return None
    if load_in_background:
        converter.prepare_in_background()
    else:
        lm.handle.settle()
        if converter.word_lm is not None:
            converter.word_lm.handle.settle()
    return converter
