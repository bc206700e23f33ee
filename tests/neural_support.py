"""Shared helpers for the neural tests: tiny models generated once per test run, and the slow
reference decoders (karukan_testing.tiny_models: a fresh llama context per evaluation) the
fast paths are checked against."""

from __future__ import annotations

import atexit
import functools
import shutil
import tempfile
from pathlib import Path

from karukan_testing.tiny_models import TinyModelSpec, fresh_logprobs, reference_beam, reference_greedy, write_model_dir

__all__ = ["tiny_model_dir", "fresh_logprobs", "reference_beam", "reference_greedy"]

_ROOT = Path(tempfile.mkdtemp(prefix="karukan-tiny-models-"))
atexit.register(shutil.rmtree, _ROOT, True)

# EOS made likely enough that generations end after a handful of tokens, so finished beams,
# early stops and EOS-first candidates all occur.
EOS_SCALE = 2.2


@functools.lru_cache(maxsize=None)
def tiny_model_dir(arch: str = "llama", tokenizer_json: bool = True, seed: int = 0) -> Path:
    spec = TinyModelSpec(arch=arch, tokenizer_json=tokenizer_json, seed=seed, eos_scale=EOS_SCALE, name=f"tiny-{arch}")
    return write_model_dir(_ROOT / f"{arch}-{int(tokenizer_json)}-{seed}", spec)
