"""The real zenz tokenizer (ku-nlp gpt2-small-japanese-char, 6,000 symbols, no mark tokens):
prompt ids are exactly the tokenizer's own encoding of the prompt text, the marks come out as
three byte tokens, user text cannot inject one, decoding reassembles byte tokens and generation
stops at </s> (id 3) and at any mark. Needs only the `tokenizers` package."""

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("tokenizers")

from tokenizers import Tokenizer  # noqa: E402

from karukan_engine.neural.errors import TokenizerError  # noqa: E402
from karukan_engine.neural.prompt import CONTROL_RANGE, MARKS, ZENZ_V3, build_prompt  # noqa: E402
from karukan_engine.neural.tokenizer import (  # noqa: E402
    HfTokenizer,
    byte_level_alphabet,
    byte_level_bytes,
    check_agreement,
)

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "zenz-char-tokenizer" / "tokenizer.json"
EOS = 3  # </s>


@pytest.fixture(scope="module")
def zenz():
    return HfTokenizer(FIXTURE, 6000)


@pytest.fixture(scope="module")
def own():
    return Tokenizer.from_file(str(FIXTURE))


@pytest.fixture(scope="module")
def vocab():
    return json.loads(FIXTURE.read_text(encoding="utf-8"))["model"]["vocab"]


def _by_hand(vocab, text):
    """The ids written out from the vocabulary alone, for text of its characters and the marks:
    a character that is a token is that token, a mark is its three UTF-8 bytes as byte tokens
    (bytes without a token are dropped, as the tokenizer drops the space it has no token for)."""
    to_char = {b: c for c, b in byte_level_alphabet().items()}
    ids = []
    for ch in text:
        raw = ch.encode("utf-8")
        whole = "".join(to_char[b] for b in raw)
        if whole in vocab:
            ids.append(vocab[whole])
        else:
            ids += [vocab[to_char[b]] for b in raw if to_char[b] in vocab]
    return ids


def test_the_fixture_is_the_zenz_vocabulary(zenz, vocab):
    assert len(zenz.vocab) == 6000 and zenz.vocab["</s>"] == EOS
    assert all(zenz.mark_id(m) is None for m in MARKS)  # no single token for any mark


def test_pinned_prompt_ids(zenz):
    prompt = build_prompt("こんにちは", "今日は")
    #           U+EE02       今   日   は   U+EE00       コ   ン   ニ   チ   ハ   U+EE01
    expected = [172, 120, 204, 490, 304, 253, 172, 120, 202, 363, 259, 444, 423, 623, 172, 120, 203]
    assert zenz.encode_prompt(prompt) == expected


@pytest.mark.parametrize("reading, context", [
    ("こんにちは", "今日は"),
    ("きょうはいいてんきですね", ""),
    ("がっこう", "昨日、ＡＢＣ！（テスト）"),
    ("ｶﾞｯｺｳ", "鬱😀"),
    ("とうきょう1ばんせん", "a b\tc"),
])
def test_prompt_ids_are_the_tokenizers_own_encoding(zenz, own, vocab, reading, context):
    prompt = build_prompt(reading, context)
    ids = zenz.encode_prompt(prompt)
    assert ids == own.encode(prompt.text, add_special_tokens=False).ids
    assert ids == _by_hand(vocab, prompt.text)


def test_each_mark_is_three_byte_tokens(zenz, vocab):
    to_char = {b: c for c, b in byte_level_alphabet().items()}
    for mark in MARKS:
        raw = mark.encode("utf-8")
        assert len(raw) == 3
        assert zenz.encode(mark) == [vocab[to_char[b]] for b in raw]


_TEXT = st.text(st.sampled_from("あいうかきくがっーアイウカキクガ漢字今日東京、。！？ ABCabc123😀鬱\uee00\uee01\uee02\uee0f\uee10\ue004"),
                max_size=15)


@settings(max_examples=150, deadline=None)
@given(reading=_TEXT, context=_TEXT)
def test_any_user_text_gives_the_tokenizers_encoding_with_exactly_three_marks(zenz, own, reading, context):
    prompt = build_prompt(reading, context)
    ids = zenz.encode_prompt(prompt)
    assert ids == own.encode(prompt.text, add_special_tokens=False).ids
    assert not any(ord(c) in CONTROL_RANGE for c in prompt.context + prompt.reading)
    triples = [tuple(ids[i:i + 3]) for i in range(len(ids) - 2)]
    for mark in MARKS:
        assert triples.count(tuple(zenz.encode(mark))) == 1
    assert zenz.decode(ids) == "".join(prompt.text.split())  # the tokenizer has no space token


@settings(max_examples=100, deadline=None)
@given(st.text(st.characters(min_codepoint=0x3000, max_codepoint=0x9FFF) | st.characters(min_codepoint=0x1F300, max_codepoint=0x1F64F),
               max_size=12))
def test_decoding_reassembles_byte_tokens(zenz, text):
    ids = zenz.encode(text)
    assert zenz.decode(ids) == text
    assert zenz.decode(ids + [EOS]) == text  # special tokens never reach the text


def test_a_character_outside_the_vocabulary_round_trips_through_bytes(zenz, own, vocab):
    to_char = {b: c for c, b in byte_level_alphabet().items()}
    ch = next(chr(c) for c in range(0x4E00, 0xA000)
              if "".join(to_char[b] for b in chr(c).encode("utf-8")) not in vocab)
    ids = zenz.encode("今" + ch + "日")
    assert len(ids) > 3  # 今, 日 and at least two pieces of the unknown character's bytes
    assert ids == own.encode("今" + ch + "日", add_special_tokens=False).ids
    assert zenz.decode(ids) == "今" + ch + "日"


def test_stops_at_eos_and_at_the_first_byte_of_any_mark(zenz, vocab):
    stops = zenz.extra_stop_ids()
    lead = zenz.encode(MARKS[0])[0]
    assert EOS in stops and lead in stops
    assert all(zenz.encode(m)[0] == lead for m in MARKS)
    # every token that holds byte 0xEE (a code point of U+E000-U+EFFF starts there) stops
    assert stops == {EOS} | {i for t, i in vocab.items() if 0xEE in (byte_level_bytes(t) or b"")}
    for ch in "漢字かなカナ、。ー😀":
        assert not set(zenz.encode(ch)) & stops
    assert 1 not in stops and 2 not in stops  # [PAD] and <s> are not EOS


def _model_view(tokenizer, n_ctx_train, max_context_chars):
    """NeuralModel's prompt logic over a tokenizer, without llama.cpp."""
    from karukan_engine.neural.model import ModelOptions, NeuralModel

    view = NeuralModel.__new__(NeuralModel)
    view.tokenizer = tokenizer
    view.options = ModelOptions(n_threads=1, max_context_chars=max_context_chars, prompt="zenz-v3")
    view.llama = type("Llama", (), {"n_ctx_train": n_ctx_train})()
    return view


@settings(max_examples=100, deadline=None)
@given(reading=st.text(st.sampled_from("かんじきょうアイウ漢字"), min_size=1, max_size=8),
       context=st.text(st.sampled_from("今日は、東京😀鬱abc\uee00"), max_size=40),
       n_ctx=st.integers(20, 80), reserve=st.integers(1, 10))
def test_a_long_context_is_cut_to_the_longest_tail_that_fits(zenz, reading, context, n_ctx, reserve):
    from karukan_engine.neural.errors import PromptTooLongError

    view = _model_view(zenz, n_ctx, 1000)
    full = build_prompt(reading, context, 1000, family=ZENZ_V3)
    limit = n_ctx - reserve
    try:
        ids = view.prompt_ids(reading, context, reserve=reserve)
    except PromptTooLongError:
        assert len(zenz.encode_prompt(full.with_context(""))) > limit
        return
    assert len(ids) <= limit
    kept = [k for k in range(len(full.context) + 1)
            if zenz.encode_prompt(full.with_context(full.context[len(full.context) - k:])) == ids]
    assert kept, "the ids are the tokenizer's encoding of a prompt with a tail of the context"
    k = max(kept)
    if k < len(full.context):  # one more character of context would not fit
        longer = full.with_context(full.context[len(full.context) - k - 1:])
        assert len(zenz.encode_prompt(longer)) > limit


def test_byte_level_alphabet_is_a_bijection():
    alphabet = byte_level_alphabet()
    assert sorted(alphabet.values()) == list(range(256))
    assert alphabet["!"] == 0x21 and alphabet["\u0120"] == 0x20  # Ġ is the space
    assert byte_level_bytes("\u00ee\u00b8\u0124") == "\uee02".encode("utf-8")


def test_a_tokenizer_of_another_model_is_refused(zenz):
    other = ["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(256)] + [chr(0x4E00 + i) for i in range(6000 - 259)]
    with pytest.raises(TokenizerError, match="does not match the GGUF vocabulary") as err:
        check_agreement(zenz, other)
    assert "\n" not in str(err.value)
    same = [""] * 6000
    for t, i in zenz.vocab.items():
        same[i] = t
    check_agreement(zenz, same)
