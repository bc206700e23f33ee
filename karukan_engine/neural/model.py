"""A loaded kana-kanji model: prompt building, greedy, beam and NLL scoring on llama.cpp.

The llama model (weights) is shared; every thread gets its own GreedyDecoder, BeamSearcher and
NllScorer (llama contexts are not thread-safe), created on first use and freed by close().
"""

from __future__ import annotations

import os
import threading
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping, Sequence

from karukan_engine.neural.beam import BeamSearcher, Hypothesis, clamp_beam
from karukan_engine.neural.errors import ModelLoadError, ModelNotFoundError, NeuralError, PromptTooLongError
from karukan_engine.neural.generation import Generation
from karukan_engine.neural.greedy import GreedyDecoder
from karukan_engine.neural.nll import NllScorer
from karukan_engine.neural.prompt import DEFAULT_MAX_CONTEXT_CHARS, Prompt, build_prompt, clean_output, clean_text
from karukan_engine.neural.runtime import LlamaModel
from karukan_engine.neural.tokenizer import GgufTokenizer, HfTokenizer, Tokenizer, check_agreement, gguf_token_texts

TOKENIZER_FILE = "tokenizer.json"
DEFAULT_MAX_NEW = 50


def default_threads() -> int:
    return max(1, min(4, os.cpu_count() or 1))


@dataclass(frozen=True)
class ModelOptions:
    n_threads: int = field(default_factory=default_threads)
    max_context_chars: int = DEFAULT_MAX_CONTEXT_CHARS
    # GGUF metadata overrides, e.g. {"tokenizer.ggml.eos_token_id": 3}.
    kv_overrides: Mapping[str, object] = field(default_factory=dict)
    # "auto": tokenizer.json beside the GGUF if present, else the GGUF vocabulary; or "gguf".
    tokenizer: str = "auto"


def find_gguf(source: str | Path) -> Path:
    """A GGUF path, or the single (first by name) `*.gguf` inside a model directory."""
    path = Path(source).expanduser()
    if path.is_dir():
        candidates = sorted(path.glob("*.gguf"))
        if not candidates:
            raise ModelNotFoundError(f"no .gguf file in {path}")
        return candidates[0]
    if not path.exists():
        raise ModelNotFoundError(f"model file not found: {path}")
    return path


class NeuralModel:
    def __init__(self, llama: LlamaModel, tokenizer: Tokenizer, options: ModelOptions, name: str) -> None:
        self.llama = llama
        self.tokenizer = tokenizer
        self.options = options
        self.name = name
        self.stop_ids = frozenset(llama.eog_ids | tokenizer.extra_stop_ids())
        eos = llama.eos_id
        self.eos_id = eos if eos in self.stop_ids else min(self.stop_ids, default=eos)
        self._local = threading.local()
        self._workers: list[GreedyDecoder | BeamSearcher | NllScorer] = []
        self._lock = threading.Lock()
        self._closed = False

    # --- prompt ----------------------------------------------------------------------------

    @property
    def n_ctx_train(self) -> int:
        return self.llama.n_ctx_train

    def prompt_ids(self, reading: str, context: str = "", reserve: int = 1) -> list[int]:
        """Token ids of the prompt, dropping left context (oldest characters first) until prompt +
        reserve tokens fit the model's context; PromptTooLongError if the reading alone does not.
        Every candidate is the tokenizer's own encoding of a whole prompt (see tokenizer.py)."""
        prompt = build_prompt(reading, context, self.options.max_context_chars)
        limit = self.n_ctx_train - max(1, reserve)
        ids = self.tokenizer.encode_prompt(prompt)
        if len(ids) <= limit:
            return ids
        best = self.tokenizer.encode_prompt(Prompt("", prompt.reading))
        if len(best) > limit:
            raise PromptTooLongError(f"reading of {len(prompt.reading)} characters does not fit the model context ({self.n_ctx_train} tokens)")
        lo, hi = 0, len(prompt.context) - 1  # context characters kept: lo fits, all do not
        while lo < hi:
            mid = (lo + hi + 1) // 2
            candidate = self.tokenizer.encode_prompt(Prompt(prompt.context[len(prompt.context) - mid :], prompt.reading))
            if len(candidate) <= limit:
                lo, best = mid, candidate
            else:
                hi = mid - 1
        return best

    def _room(self, prompt: Sequence[int], max_new: int) -> int:
        return max(0, min(max_new, self.n_ctx_train - len(prompt)))

    def _generation(self, tokens: Sequence[int], logprob: float, finished: bool) -> Generation:
        """tokens: the generated ids without the stop token."""
        return Generation(clean_output(self.tokenizer.decode(tokens)), tuple(tokens), logprob, finished)

    # --- per-thread workers -----------------------------------------------------------------

    def _worker(self, attr: str, factory):
        worker = getattr(self._local, attr, None)
        if worker is None:
            with self._lock:
                if self._closed:
                    raise NeuralError("model is closed")
                worker = factory()
                self._workers.append(worker)
            setattr(self._local, attr, worker)
        return worker

    def greedy_decoder(self) -> GreedyDecoder:
        """This thread's persistent greedy decoder."""
        return self._worker("greedy", lambda: GreedyDecoder(self.llama, self.options.n_threads))

    def _beam_searcher(self) -> BeamSearcher:
        return self._worker("beam", lambda: BeamSearcher(self.llama, self.options.n_threads))

    def scorer(self) -> "ModelScorer":
        """This thread's NLL scorer."""
        raw = self._worker("scorer", lambda: NllScorer(self.llama, self.options.n_threads, self.eos_id))
        return ModelScorer(self, raw)

    # --- decoding ---------------------------------------------------------------------------

    def greedy(self, reading: str, context: str = "", max_new: int = DEFAULT_MAX_NEW) -> Generation:
        if not clean_text(reading).strip() or max_new <= 0:
            return Generation("", (), 0.0, False)
        prompt = self.prompt_ids(reading, context)
        out, logprob, finished = self.greedy_decoder().generate(prompt, self._room(prompt, max_new), self.stop_ids)
        return self._generation(out, logprob, finished)

    def beam(self, reading: str, context: str = "", beam: int = 5, max_new: int = DEFAULT_MAX_NEW,
             should_stop: Callable[[], bool] | None = None) -> list[Generation]:
        """Best first, at most clamp(beam, 1, 128) generations; [] for an empty reading,
        max_new <= 0 or beam <= 0. should_stop: checked before each step; True cuts the search
        short (the caller asked, so it knows the result is incomplete)."""
        if not clean_text(reading).strip() or max_new <= 0 or beam <= 0:
            return []
        prompt = self.prompt_ids(reading, context)
        hyps: list[Hypothesis] = self._beam_searcher().search(prompt, self._room(prompt, max_new), clamp_beam(beam),
                                                              self.stop_ids, should_stop)
        return [self._generation(h.tokens[:-1] if h.finished else h.tokens, h.score, h.finished) for h in hyps]

    def score(self, reading: str, context: str, surface: str) -> float:
        return self.scorer().score(reading, context, surface)

    def score_many(self, reading: str, context: str, surfaces: Sequence[str]) -> list[float]:
        return self.scorer().score_many(reading, context, surfaces)

    def close(self) -> None:
        """Free every context and the model. Call when no other thread is using the model."""
        with self._lock:
            self._closed = True
            workers, self._workers = self._workers, []
        for worker in workers:
            worker.close()
        self.llama.free()

    def __enter__(self) -> "NeuralModel":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class ModelScorer:
    """NllScorer with text in and prompts built by the model."""

    def __init__(self, model: NeuralModel, raw: NllScorer) -> None:
        self._model = model
        self._raw = raw

    def _surface(self, surface: str) -> tuple[list[int], int]:
        text = unicodedata.normalize("NFKC", surface)
        return (self._model.tokenizer.encode(text) if text else []), len(text)

    def score(self, reading: str, context: str, surface: str, with_eos: bool = True) -> float:
        ids, n_chars = self._surface(surface)
        prompt = self._model.prompt_ids(reading, context, reserve=len(ids) + 1)
        return self._raw.score_ids(prompt, ids, n_chars, with_eos)

    def score_many(self, reading: str, context: str, surfaces: Sequence[str], with_eos: bool = True) -> list[float]:
        encoded = [self._surface(s) for s in surfaces]
        if not encoded:
            return []
        longest = max(len(ids) for ids, _ in encoded)
        prompt = self._model.prompt_ids(reading, context, reserve=longest + 1)
        return self._raw.score_many_ids(prompt, [ids for ids, _ in encoded], [n for _, n in encoded], with_eos)


@dataclass(frozen=True)
class Expected:
    """What models.toml says a model is; a GGUF that differs is refused before use."""

    architecture: str | None = None
    n_vocab: int | None = None


def check_expected(llama: LlamaModel, expected: Expected, label: str) -> None:
    arch = llama.info.architecture
    if expected.architecture and arch != expected.architecture:
        raise ModelLoadError(f"{label}: the GGUF is a {arch!r} model, models.toml says {expected.architecture!r}")
    if expected.n_vocab and llama.n_vocab != expected.n_vocab:
        raise ModelLoadError(f"{label}: the GGUF has {llama.n_vocab} tokens, models.toml says {expected.n_vocab}")


def load_model(source: str | Path, options: ModelOptions = ModelOptions(), tokenizer_path: str | Path | None = None,
               expected: Expected = Expected()) -> NeuralModel:
    """Load `<dir>/<name>.gguf` (or a GGUF path) with tokenizer.json beside it when present.

    Refused with one line (a NeuralError): a GGUF whose architecture or vocabulary size is not
    the expected one, and a tokenizer.json whose token strings are not the GGUF's."""
    gguf_path = find_gguf(source)
    llama = LlamaModel(gguf_path, dict(options.kv_overrides))
    try:
        check_expected(llama, expected, gguf_path.name)
        tok_path = Path(tokenizer_path) if tokenizer_path else gguf_path.parent / TOKENIZER_FILE
        if options.tokenizer != "gguf" and (tokenizer_path or tok_path.is_file()):
            if not tok_path.is_file():
                raise ModelNotFoundError(f"tokenizer not found: {tok_path}")
            hf = HfTokenizer(tok_path, llama.n_vocab)
            stored = llama.info.tokens
            check_agreement(hf, stored if stored and len(stored) == llama.n_vocab else gguf_token_texts(llama.vocab, llama.n_vocab))
            tokenizer: Tokenizer = hf
        else:
            tokenizer = GgufTokenizer(llama.vocab)
        return NeuralModel(llama, tokenizer, options, gguf_path.stem)
    except BaseException:
        llama.free()
        raise
