"""Loading, tokenizers, errors and the checked llama.cpp wrapper."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("llama_cpp")

from karukan_engine.neural.background import load_in_background
from karukan_engine.neural.errors import (
    InferenceError,
    ModelFormatError,
    ModelLoadError,
    ModelNotFoundError,
    NeuralError,
    TokenizerError,
)
from karukan_engine.neural.model import ModelOptions, load_model
from karukan_engine.neural import runtime
from karukan_engine.neural.runtime import ContextSize, LlamaContext
from karukan_engine.neural.tokenizer import GgufTokenizer, HfTokenizer
from neural_support import tiny_model_dir

TEXT = "今日は ABC、かんじ。鬱\u3000ｶﾅ"  # ASCII, kana, kanji, a byte-fallback char, spaces


@pytest.fixture(scope="module")
def model():
    m = load_model(tiny_model_dir("llama"), ModelOptions(n_threads=1))
    yield m
    m.close()


def test_tokenizer_json_is_used_when_present(model):
    assert isinstance(model.tokenizer, HfTokenizer)
    bare = load_model(tiny_model_dir("llama", tokenizer_json=False), ModelOptions(n_threads=1))
    try:
        assert isinstance(bare.tokenizer, GgufTokenizer)
        # both vocabularies are the same: the two tokenizers must agree token for token
        assert bare.tokenizer.encode(TEXT) == model.tokenizer.encode(TEXT)
        assert bare.prompt_ids("かんじ", "漢字") == model.prompt_ids("かんじ", "漢字")
        assert bare.stop_ids == model.stop_ids
    finally:
        bare.close()


@pytest.mark.parametrize("tokenizer_json", [True, False])
def test_decode_reassembles_byte_fallback(tokenizer_json):
    m = load_model(tiny_model_dir("llama", tokenizer_json=tokenizer_json), ModelOptions(n_threads=1))
    try:
        ids = m.tokenizer.encode("鬱と漢字")
        assert len(ids) == 3 + 3  # 鬱 is three <0xNN> byte tokens
        assert m.tokenizer.decode(ids) == "鬱と漢字"
        eos = m.eos_id
        assert m.tokenizer.decode(ids + [eos]) == "鬱と漢字"  # special ids are dropped
    finally:
        m.close()


def test_stop_ids_cover_eos_and_control_marks(model):
    assert model.eos_id in model.stop_ids
    for mark in ("\uee00", "\uee01", "\uee02"):
        assert model.tokenizer.mark_id(mark) in model.stop_ids


def test_missing_and_corrupt_files_raise_our_errors(tmp_path):
    with pytest.raises(ModelNotFoundError):
        load_model(tmp_path / "nope.gguf")
    with pytest.raises(ModelNotFoundError):
        load_model(tmp_path)  # a directory without a GGUF
    (tmp_path / "text.gguf").write_text("hello, not a model")
    with pytest.raises(ModelFormatError):
        load_model(tmp_path / "text.gguf")
    good = next(tiny_model_dir("llama").glob("*.gguf")).read_bytes()
    (tmp_path / "cut.gguf").write_bytes(good[: len(good) // 2])
    with pytest.raises(ModelFormatError):
        load_model(tmp_path / "cut.gguf")
    (tmp_path / "header.gguf").write_bytes(good[:64])
    with pytest.raises(ModelFormatError):
        load_model(tmp_path / "header.gguf")


def test_corrupt_tokenizer_json(tmp_path):
    import shutil

    src = tiny_model_dir("llama")
    shutil.copy(next(src.glob("*.gguf")), tmp_path / "m.gguf")
    (tmp_path / "tokenizer.json").write_text("{broken")
    with pytest.raises(TokenizerError):
        load_model(tmp_path)


def test_kv_overrides_reach_llama_cpp():
    m = load_model(tiny_model_dir("llama"), ModelOptions(n_threads=1, kv_overrides={"tokenizer.ggml.eos_token_id": 3}))
    try:
        assert m.llama.eos_id == 3
    finally:
        m.close()
    # a string override reaches the loader too: a BPE tokenizer without merges cannot load
    with pytest.raises(ModelLoadError):
        load_model(tiny_model_dir("llama"), ModelOptions(n_threads=1, kv_overrides={"tokenizer.ggml.model": "gpt2"}))


def test_background_loading_success_and_failure(tmp_path):
    handle = load_in_background(str(tiny_model_dir("llama")))
    m = handle.wait(timeout=60)
    try:
        assert handle.ready() and handle.error is None
        assert m.greedy("かんじ", max_new=2).logprob <= 0
    finally:
        m.close()
    bad = load_in_background(str(tmp_path / "missing.gguf"))
    with pytest.raises(ModelNotFoundError):
        bad.wait(timeout=60)
    assert not bad.ready() and isinstance(bad.error, NeuralError)


def test_long_context_is_trimmed_to_fit(model):
    wide = load_model(tiny_model_dir("llama"), ModelOptions(n_threads=1, max_context_chars=10_000))
    try:
        ids = wide.prompt_ids("かんじ", "漢" * 1000)
        assert len(ids) == wide.n_ctx_train - 1
        assert ids[-5:] == wide.prompt_ids("かんじ", "")[-5:]
        assert wide.beam("かんじ", "漢" * 1000, beam=2, max_new=5) is not None
    finally:
        wide.close()


def test_context_wrapper_validates_before_calling_llama(model):
    ctx = LlamaContext(model.llama, ContextSize(n_ctx=64, n_batch=8, n_seq_max=4), n_threads=1)
    try:
        with pytest.raises(InferenceError):
            ctx.seq_cp(0, 4)  # would abort llama.cpp without the check
        with pytest.raises(InferenceError):
            ctx.seq_rm(300)
        with pytest.raises(InferenceError):
            ctx.decode([5] * 9, range(9), [0] * 9, [False] * 9)  # > n_batch
        with pytest.raises(InferenceError):
            ctx.decode([5], [0], [7], [True])  # seq id out of range
        with pytest.raises(InferenceError):
            ctx.decode([5], [model.n_ctx_train], [0], [True])  # position beyond the model
        with pytest.raises(InferenceError):
            ctx.decode([model.llama.n_vocab], [0], [0], [True])  # token id beyond the vocab
    finally:
        ctx.free()


def test_logit_rows_follow_batch_order_across_sequences(model):
    ctx = LlamaContext(model.llama, ContextSize(n_ctx=64, n_batch=16, n_seq_max=4), n_threads=1)
    try:
        prompt = model.prompt_ids("かんじ")
        ctx.decode_run(prompt, 0, seq=0)
        for s in (1, 2, 3):
            ctx.seq_cp(0, s)
        tokens = [10, 20, 30, 40]
        rows = ctx.decode(tokens, [len(prompt)] * 4, [3, 1, 0, 2], [True] * 4)
        for row, token in zip(rows, tokens):
            alone = LlamaContext(model.llama, ContextSize(64, 16, 1), n_threads=1)
            try:
                expected = alone.decode_run(prompt + [token], 0)
            finally:
                alone.free()
            assert np.allclose(row, expected, atol=1e-3)
    finally:
        ctx.free()


_KEYS = st.text(st.characters(min_codepoint=0x61, max_codepoint=0x7A) | st.sampled_from("._"), min_size=1, max_size=40)
# Strings that fit llama.cpp's 128-byte NUL-terminated field: no NUL, under 128 bytes of UTF-8
# (40 characters of 4 bytes each do not fit: they are refused, see the test below).
_FITTING_TEXT = st.text(st.characters(blacklist_characters="\0", blacklist_categories=("Cs",)), max_size=40).filter(lambda t: len(t.encode()) < 128)
_VALUES = st.booleans() | st.integers(-2**63, 2**63 - 1) | st.floats(allow_nan=False) | _FITTING_TEXT


@settings(max_examples=50, deadline=None)
@given(overrides=st.dictionaries(_KEYS, _VALUES, max_size=5))
def test_kv_override_array_carries_each_value_with_its_type(overrides):
    lib = runtime.llama()
    array = runtime._kv_override_array(overrides)
    assert len(array) == len(overrides) + 1 and array[-1].key == b""
    tags = {bool: lib.LLAMA_KV_OVERRIDE_TYPE_BOOL, int: lib.LLAMA_KV_OVERRIDE_TYPE_INT,
            float: lib.LLAMA_KV_OVERRIDE_TYPE_FLOAT, str: lib.LLAMA_KV_OVERRIDE_TYPE_STR}
    for item, (key, value) in zip(array, overrides.items()):
        assert item.key == key.encode() and item.tag == tags[type(value)]
        if isinstance(value, str):
            assert bytes(item.value.val_str).rstrip(b"\0").decode() == value
        elif isinstance(value, bool):
            assert item.value.val_bool == value
        elif isinstance(value, int):
            assert item.value.val_i64 == value
        else:
            assert item.value.val_f64 == value


@settings(max_examples=50, deadline=None)
@given(text=st.text(max_size=60))
def test_a_string_override_is_carried_whole_or_refused(text):
    """Never cut: a NUL, 128+ UTF-8 bytes (or an empty key, which would end the array) is
    refused; anything else arrives byte for byte, as a value and as a key."""
    raw = text.encode()
    fits = "\0" not in text and len(raw) < 128
    for overrides, as_key in (({"key": text}, False), ({text: 1}, True)):
        if not fits or (as_key and not text):
            with pytest.raises(ModelLoadError):
                runtime._kv_override_array(overrides)
            continue
        item = runtime._kv_override_array(overrides)[0]
        assert (item.key if as_key else bytes(item.value.val_str).rstrip(b"\0")) == raw


@pytest.mark.parametrize("overrides", [{"k" * 128: 1}, {"key": "v" * 128}, {"key": None}, {"key": [1]}, {"key": "a\0b"},
                                       {"key": "\U0001F600" * 32}, {"a\0b": 1}, {"": 1}, {"key": "\ud800"}])
def test_kv_overrides_that_do_not_fit_are_refused(overrides):
    with pytest.raises(ModelLoadError):
        runtime._kv_override_array(overrides)


def test_close_waits_for_a_decoding_on_another_thread_then_refuses_new_ones():
    """The service closes the model while the warm-up's beam search may still run: freeing the
    contexts under it crashed the process (SIGSEGV in the context it was creating)."""
    import threading

    m = load_model(tiny_model_dir("llama"), ModelOptions(n_threads=1))
    inside, release, closed = threading.Event(), threading.Event(), threading.Event()
    results = []

    def hold() -> bool:          # the beam's should_stop: keeps the search running until released
        inside.set()
        release.wait()
        return False

    beam = threading.Thread(target=lambda: results.append(m.beam("かんじ", beam=2, max_new=2, should_stop=hold)))
    beam.start()
    assert inside.wait(30)
    closer = threading.Thread(target=lambda: (m.close(), closed.set()))
    closer.start()
    assert not closed.wait(0.3)          # close waits: the search is still using its context
    with pytest.raises(NeuralError):
        m.greedy("かな")                  # no new use once closing began
    release.set()
    beam.join(30)
    closer.join(30)
    assert closed.is_set() and results and all(isinstance(g.text, str) for g in results[0])
    assert m.llama.ptr is None           # freed once the search ended
