"""Neural kana-kanji backend: jinen / zenz-format GGUF models run by llama.cpp.

Importing this package is cheap and never imports llama.cpp; the submodules that need it
(`model`, `greedy`, `greedy_pool`, `beam`, `nll`, `runtime`) import it themselves.

Public API (stable; used by the fusion layer):

    from karukan_engine.neural.model import load_model, NeuralModel, Generation
    from karukan_engine.neural.background import load_in_background
    from karukan_engine.neural.registry import resolve_model, load_registry
    from karukan_engine.neural.errors import NeuralError   # base of every error raised here

    model = load_model(path_or_dir)            # a `<name>.gguf` file or a directory holding one
                                               # (tokenizer.json beside it is used when present)
    model.greedy(reading, context="", max_new=None) -> Generation   # None: the family's 50 tokens
        # persistent per-thread GreedyDecoder: re-decodes only what follows the longest common
        # prefix with that thread's previous prompt, and checks the previous output as a draft
        # in one batched pass when the prompt is a near continuation (same result as plain greedy)
    model.beam(reading, context="", beam=5, max_new=None) -> list[Generation]   # best first
        # shared-prompt beam search; beam clamped to 1..128; [] for empty reading / max_new 0
    model.scorer() -> this thread's scorer (or model.score / model.score_many, same thing)
        scorer.score(reading, context, surface) -> float            # NLL per surface character
        scorer.score_many(reading, context, surfaces) -> list[float]  # one prompt prefill
        # NLL = -(sum log p(surface tokens) + log p(EOS)) / len(clean(surface)); lower is better;
        # the surface's tokens come from prompt and surface tokenized together
    model.prompt_ids(reading, context) -> list[int];  model.stop_ids;  model.eos_id
    model.family -> prompt.PromptFamily (models.toml `prompt`; marks, normalisation, context, budget)
    model.fit_prompt(reading, context) -> (Prompt, ids);  model.joint_ids(reading, context, surfaces)
    model.greedy_decoder() -> this thread's GreedyDecoder (greedy.py)
    model.close()

    Generation(text: str, token_ids: tuple[int, ...], logprob: float, finished: bool)
        text: decoded surface (stop token removed, stripped);  token_ids: generated ids without
        the stop token;  logprob: summed log-softmax of every generated token incl. the stop
        token;  finished: True when the model emitted a stop token (EOS/EOG, a mark or its first byte).

    handle = load_in_background(path_or_dir_or_model_id)
        handle.ready() -> bool;  handle.wait(timeout=None) -> NeuralModel (raises its error);
        handle.error -> NeuralError | None;  handle.model -> NeuralModel | None

Lower level, for decoders built elsewhere: runtime.LlamaModel / LlamaContext(model.llama,
ContextSize(n_ctx, n_batch, n_seq_max), n_threads) with checked decode / decode_run / seq_cp /
seq_rm / clear; runtime.GrowingContext keeps one context between calls and re-creates it only when a
call needs more; logprob.argmax_logprob / top_k_rows; karukan_testing.tiny_models.write_model_dir for tiny models;
greedy_pool.GreedyPool(model.llama, n_threads, slots).generate_many([GreedyJob(owner, prompt,
max_new, stop_ids, draft=None), ...]) decodes many owners' greedy jobs in shared batches (one
sequence id per owner; GreedyDecoder is its one-sequence form).

Readings may be hiragana or katakana; the prompt is [U+EE02 + left context] + U+EE00 + reading
in katakana + U+EE01 as the model's family was trained (prompt.py: jinen writes U+EE02 always,
NFKC, the last 10 context characters; zenz-v3 writes U+EE02 only before a context, no NFKC,
spaces as U+3000, the last 40), with U+EE00-U+EE0F stripped from the user's text first.
tokenizer.json is used with padding and truncation off. The prompt is tokenized as each family was
trained (tokenizer.py): the whole prompt text through tokenizer.json — single mark tokens where
the vocabulary has them (jinen v2), the zenz tokenizer's byte tokens where it has none — and
generation stops at the family's EOS and at the first byte of any mark. Known quirks of
published GGUFs (zenz: an unknown pre-tokenizer name, off-by-one special ids) are repaired at
load (runtime.fixups); a GGUF of another architecture or vocabulary size than models.toml says,
or a tokenizer.json of another model, is refused with one line. karukan_testing.mimic.build writes
random-weight stand-ins of the published models (tools/build_mimic_models.py).
Errors: ModelNotFoundError, ModelFormatError (not GGUF / corrupt), ModelLoadError,
TokenizerError, PromptTooLongError, InferenceError, UnknownModelError, DownloadError — all
subclasses of NeuralError. llama.cpp is never allowed to abort the process: every sequence id,
batch size and context size is validated in Python first.
"""
