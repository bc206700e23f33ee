"""Shared helpers for the neural tests: tiny models generated once per test run, and the slow
reference decoders (karukan_testing.tiny_models: a fresh llama context per evaluation) the
fast paths are checked against."""

from __future__ import annotations

import atexit
import functools
import shutil
import tempfile
from pathlib import Path

import pytest

from karukan_testing.tiny_models import TinyModelSpec, fresh_logprobs, reference_beam, reference_greedy, write_model_dir

__all__ = ["tiny_model_dir", "fresh_logprobs", "reference_beam", "reference_greedy", "fresh_greedy", "same",
           "model", "POOL_SENTENCES"]

_ROOT = Path(tempfile.mkdtemp(prefix="karukan-tiny-models-"))
atexit.register(shutil.rmtree, _ROOT, True)

# EOS made likely enough that generations end after a handful of tokens, so finished beams,
# early stops and EOS-first candidates all occur.
EOS_SCALE = 2.2


@functools.lru_cache(maxsize=None)
def tiny_model_dir(arch: str = "llama", tokenizer_json: bool = True, seed: int = 0) -> Path:
    spec = TinyModelSpec(arch=arch, tokenizer_json=tokenizer_json, seed=seed, eos_scale=EOS_SCALE, name=f"tiny-{arch}")
    return write_model_dir(_ROOT / f"{arch}-{int(tokenizer_json)}-{seed}", spec)


# Readings the batched-greedy tests type, one owner each.
POOL_SENTENCES = ["きょうはいいてんきですね", "かいぎのしりょうをおくります", "わたしはがくせいです",
                  "とうきょうえきでまつ", "こうえんをさんぽする", "あしたはあめらしい"]


@pytest.fixture(scope="module", params=["llama", "gpt2"])
def model(request):
    """A tiny model of each architecture (import it into a module to use it there)."""
    from karukan_engine.neural.model import ModelOptions, load_model

    m = load_model(tiny_model_dir(request.param), ModelOptions(n_threads=1))
    yield m
    m.close()


def fresh_greedy(llama, prompt, max_new, stop_ids):
    """(tokens, summed log p incl. the stop token, stopped), a fresh context for every step."""
    out, total = [], 0.0
    while len(out) < max_new:
        lp = fresh_logprobs(llama, list(prompt) + out)
        token = int(lp.argmax())
        total += float(lp[token])
        if token in stop_ids:
            return out, total, True
        out.append(token)
    return out, total, False


def same(got, expected):
    assert got[0] == expected[0]
    assert got[2] == expected[2]
    assert got[1] == pytest.approx(expected[1], abs=1e-3)
