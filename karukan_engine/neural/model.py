"""A loaded kana-kanji model: prompt building, greedy, beam and NLL scoring on llama.cpp.

The prompt follows the model's family (prompt.PromptFamily: marks, normalisation, context
length, output budget). Wherever a surface is scored or checked, prompt and surface are
tokenized together and the surface's tokens taken from that joint encoding, as the model saw
them in training (a surface encoded alone can start differently, e.g. with a SentencePiece `▁`).

The llama model (weights) is shared; every thread gets its own GreedyDecoder, BeamSearcher and
NllScorer (llama contexts are not thread-safe), created on first use and freed by close(),
which waits for the decodings and scorings still running on other threads (freeing a context
under one crashes the process).
"""

from __future__ import annotations

import logging
import threading
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import Callable, Iterator, Mapping, Sequence

from karukan_engine.neural.beam import BeamSearcher, Hypothesis, clamp_beam
from karukan_engine.neural.errors import ModelLoadError, ModelNotFoundError, NeuralError, PromptTooLongError
from karukan_engine.neural.generation import Generation
from karukan_engine.neural.greedy import GreedyDecoder
from karukan_engine.neural.nll import NllScorer
from karukan_engine.neural.prompt import JINEN, ZENZ_V3, Prompt, PromptFamily, clean_output, family_named
from karukan_engine.neural.runtime import PRE_TOKENIZER_ALIASES, GgufInfo, LlamaModel
from karukan_engine.neural.threads import AUTO_THREADS
from karukan_engine.neural.tokenizer import GgufTokenizer, HfTokenizer, Tokenizer, check_agreement, gguf_token_texts

log = logging.getLogger(__name__)

TOKENIZER_FILE = "tokenizer.json"
# How long close() waits for decodings still running on other threads (a beam search of the
# warm-up, say) before it leaves the memory to the process's exit instead of freeing it under them.
CLOSE_WAIT_S = 10.0
DEFAULT_MAX_NEW = JINEN.max_new_tokens
# Room kept beyond a surface's own token count when fitting the prompt for a joint encoding
# (tokenized with the prompt, a surface may take a token more or less than alone).
JOINT_SLACK = 2


@dataclass(frozen=True)
class ModelOptions:
    """None means "the model's own" (models.toml), else the default; load_model fills them in."""

    n_threads: int | None = None          # llama.cpp threads; default AUTO_THREADS (the free cores)
    max_context_chars: int | None = None  # left context characters; default the family's
    # GGUF metadata overrides, e.g. {"tokenizer.ggml.eos_token_id": 3}.
    kv_overrides: Mapping[str, object] = field(default_factory=dict)
    # "auto": tokenizer.json beside the GGUF if present, else the GGUF vocabulary; or "gguf".
    tokenizer: str = "auto"
    # The prompt family ("jinen" | "zenz-v3"); default: zenz-v3 for a GGUF with zenz metadata.
    prompt: str | None = None
    gpu_layers: int | None = None         # layers offloaded to a GPU backend; default 0


def detected_family(info: GgufInfo) -> PromptFamily:
    """zenz-v3 for a GGUF that declares the zenz pre-tokenizer, else jinen."""
    return ZENZ_V3 if info.tokenizer_pre in PRE_TOKENIZER_ALIASES else JINEN


def resolved_options(options: ModelOptions, info: GgufInfo) -> ModelOptions:
    """Every None filled with its default."""
    return replace(options,
                   n_threads=options.n_threads if options.n_threads is not None else AUTO_THREADS,
                   gpu_layers=options.gpu_layers if options.gpu_layers is not None else 0,
                   prompt=options.prompt if options.prompt is not None else detected_family(info).name)


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
        self._idle = threading.Condition(self._lock)
        self._closed = False
        self._users = 0   # decodings and scorings running now (close waits for them)

    # --- prompt ----------------------------------------------------------------------------

    @cached_property
    def family(self) -> PromptFamily:
        """The prompt and text policy of this model (its options' prompt and context length)."""
        return family_named(self.options.prompt or JINEN.name).with_context_chars(self.options.max_context_chars)

    @property
    def n_ctx_train(self) -> int:
        return self.llama.n_ctx_train

    def build_prompt(self, reading: str, context: str = "") -> Prompt:
        """The prompt text this model gets (its family's policy), before fitting to n_ctx."""
        return self.family.build(reading, context)

    def fit_prompt(self, reading: str, context: str = "", reserve: int = 1) -> tuple[Prompt, list[int]]:
        """The prompt and its token ids, dropping left context (oldest characters first) until
        prompt + reserve tokens fit the model's context; PromptTooLongError if the reading alone
        does not. Every candidate is the tokenizer's own encoding of a whole prompt (tokenizer.py)."""
        prompt = self.build_prompt(reading, context)
        limit = self.n_ctx_train - max(1, reserve)
        ids = self.tokenizer.encode_prompt(prompt)
        if len(ids) <= limit:
            return prompt, ids
        fitted = prompt.with_context("")
        best = self.tokenizer.encode_prompt(fitted)
        if len(best) > limit:
            raise PromptTooLongError(f"reading of {len(prompt.reading)} characters does not fit the model context ({self.n_ctx_train} tokens)")
        lo, hi = 0, len(prompt.context) - 1  # context characters kept: lo fits, all do not
        while lo < hi:
            mid = (lo + hi + 1) // 2
            shorter = prompt.with_context(prompt.context[len(prompt.context) - mid :])
            candidate = self.tokenizer.encode_prompt(shorter)
            if len(candidate) <= limit:
                lo, best, fitted = mid, candidate, shorter
            else:
                hi = mid - 1
        return fitted, best

    def prompt_ids(self, reading: str, context: str = "", reserve: int = 1) -> list[int]:
        """Token ids of the fitted prompt (see fit_prompt)."""
        return self.fit_prompt(reading, context, reserve)[1]

    def joint_ids(self, reading: str, context: str, surfaces: Sequence[str]) -> list["JointIds"]:
        """For each surface: the prompt's and the surface's tokens from encoding both together,
        and the surface's length in characters, with the prompt fitted so that the longest
        surface and an EOS fit too."""
        texts = [self.family.clean(s) for s in surfaces]
        if not texts:
            return []
        longest = max(len(self.tokenizer.encode(t)) if t else 0 for t in texts)
        prompt, _ids = self.fit_prompt(reading, context, reserve=longest + JOINT_SLACK)
        out = []
        for text in texts:
            prompt_ids, surface_ids = self.tokenizer.encode_joint(prompt, text)
            out.append(JointIds(prompt_ids, surface_ids, len(text)))
        return out

    def _room(self, prompt: Sequence[int], max_new: int | None) -> int:
        wanted = self.family.max_new_tokens if max_new is None else max_new
        return max(0, min(wanted, self.n_ctx_train - len(prompt)))

    def _generation(self, tokens: Sequence[int], logprob: float, finished: bool) -> Generation:
        """tokens: the generated ids without the stop token."""
        return Generation(clean_output(self.tokenizer.decode(tokens)), tuple(tokens), logprob, finished)

    # --- per-thread workers -----------------------------------------------------------------

    @contextmanager
    def in_use(self) -> Iterator[None]:
        """Around every use of a context: close() waits until none is running."""
        with self._lock:
            if self._closed:
                raise NeuralError("model is closed")
            self._users += 1
        try:
            yield
        finally:
            with self._lock:
                self._users -= 1
                if self._users == 0:
                    self._idle.notify_all()

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

    def has_reading(self, reading: str) -> bool:
        """Whether anything of the reading is left for the prompt (not only spaces or marks)."""
        return bool(self.family.clean(reading).strip())

    def greedy(self, reading: str, context: str = "", max_new: int | None = None) -> Generation:
        """max_new: None = the family's output budget."""
        if not self.has_reading(reading) or (max_new is not None and max_new <= 0):
            return Generation("", (), 0.0, False)
        prompt = self.prompt_ids(reading, context)
        with self.in_use():
            out, logprob, finished = self.greedy_decoder().generate(prompt, self._room(prompt, max_new), self.stop_ids)
        return self._generation(out, logprob, finished)

    def beam(self, reading: str, context: str = "", beam: int = 5, max_new: int | None = None,
             should_stop: Callable[[], bool] | None = None) -> list[Generation]:
        """Best first, at most clamp(beam, 1, 128) generations; [] for an empty reading,
        max_new <= 0 or beam <= 0. should_stop: checked before each step; True cuts the search
        short (the caller asked, so it knows the result is incomplete)."""
        if not self.has_reading(reading) or (max_new is not None and max_new <= 0) or beam <= 0:
            return []
        prompt = self.prompt_ids(reading, context)
        with self.in_use():
            hyps: list[Hypothesis] = self._beam_searcher().search(prompt, self._room(prompt, max_new),
                                                                  clamp_beam(beam), self.stop_ids, should_stop)
        return [self._generation(h.tokens[:-1] if h.finished else h.tokens, h.score, h.finished) for h in hyps]

    def score(self, reading: str, context: str, surface: str) -> float:
        return self.scorer().score(reading, context, surface)

    def score_many(self, reading: str, context: str, surfaces: Sequence[str]) -> list[float]:
        return self.scorer().score_many(reading, context, surfaces)

    def close(self) -> None:
        """Free every context and the model once the uses running on other threads end (new
        ones raise NeuralError); past CLOSE_WAIT_S it frees nothing rather than crash them."""
        with self._lock:
            self._closed = True
            if not self._idle.wait_for(lambda: self._users == 0, timeout=CLOSE_WAIT_S):
                log.warning("model still in use at close: left to the process's exit")
                return
            workers, self._workers = self._workers, []
        for worker in workers:
            worker.close()
        self.llama.free()

    def __enter__(self) -> "NeuralModel":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


@dataclass(frozen=True)
class JointIds:
    """A surface tokenized together with its prompt: the two parts of that one encoding."""

    prompt: list[int]
    surface: list[int]
    n_chars: int  # the cleaned surface's length


class ModelScorer:
    """NllScorer with text in; prompt and surface tokenized together (NeuralModel.joint_ids)."""

    def __init__(self, model: NeuralModel, raw: NllScorer) -> None:
        self._model = model
        self._raw = raw

    def score(self, reading: str, context: str, surface: str, with_eos: bool = True) -> float:
        joint = self._model.joint_ids(reading, context, [surface])[0]
        with self._model.in_use():
            return self._raw.score_ids(joint.prompt, joint.surface, joint.n_chars, with_eos)

    def score_many(self, reading: str, context: str, surfaces: Sequence[str], with_eos: bool = True) -> list[float]:
        joints = self._model.joint_ids(reading, context, surfaces)
        # One shared prefill per distinct prompt encoding (almost always one: marks split them).
        groups: dict[tuple[int, ...], list[int]] = {}
        for i, joint in enumerate(joints):
            groups.setdefault(tuple(joint.prompt), []).append(i)
        scores = [0.0] * len(joints)
        with self._model.in_use():
            for prompt, members in groups.items():
                got = self._raw.score_many_ids(list(prompt), [joints[i].surface for i in members],
                                               [joints[i].n_chars for i in members], with_eos)
                for i, score in zip(members, got):
                    scores[i] = score
        return scores


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
    gpu_layers = options.gpu_layers if options.gpu_layers is not None else 0
    llama = LlamaModel(gguf_path, dict(options.kv_overrides), gpu_layers=gpu_layers)
    try:
        options = resolved_options(options, llama.info)
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
