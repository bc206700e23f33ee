"""The three tokenizer kinds the model families use, as committed fixtures: the real zenz
character BPE (marks as three byte tokens), a jinen-v1-like byte-level BPE whose marks are
single tokens, and a SentencePiece Metaspace BPE (jinen v2's kind). The prompt ids are pinned
for an empty and a non-empty context, a context with U+3000 and full-width punctuation, each
through its family's policy; a tokenizer.json that enables padding and truncation gives the same
ids; a surface is tokenized together with its prompt. Needs only the `tokenizers` package."""

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("tokenizers")

from karukan_engine.neural.prompt import JINEN, ZENZ_V3  # noqa: E402
from karukan_engine.neural.tokenizer import HfTokenizer, split_by_start  # noqa: E402

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
KINDS = {
    "zenz": (FIXTURES / "zenz-char-tokenizer" / "tokenizer.json", 6000, ZENZ_V3),
    "jinen-v1-like": (FIXTURES / "jinen-v1-like-tokenizer" / "tokenizer.json", 1500, JINEN),
    "jinen-v2-metaspace": (FIXTURES / "jinen-v2-metaspace-tokenizer" / "tokenizer.json", 1200, JINEN),
}
CASES = {
    "empty context": ("きょう", ""),
    "context": ("きょう", "今日は"),
    "ideographic space": ("はれ", "今日は\u3000晴れ"),
    "full-width punctuation": ("かんじ", "（東京）！～…"),
}
# (ids, what each token writes; "" for a byte token that is part of a character)
PINNED = {
    ("zenz", "empty context"): [172, 120, 202, 436, 504, 400, 172, 120, 203],
    ("zenz", "context"): [172, 120, 204, 490, 304, 253, 172, 120, 202, 436, 504, 400, 172, 120, 203],
    ("zenz", "ideographic space"): [172, 120, 204, 490, 304, 253, 567, 1609, 262, 172, 120, 202, 623, 321, 172, 120, 203],
    ("zenz", "full-width punctuation"): [172, 120, 204, 322, 622, 738, 323, 469, 888, 694, 172, 120, 202, 350, 259, 354,
                                         172, 120, 203],
    ("jinen-v1-like", "empty context"): [6, 4, 507, 565, 500, 5],
    ("jinen-v1-like", "context"): [6, 297, 283, 454, 4, 507, 565, 500, 5],
    ("jinen-v1-like", "ideographic space"): [6, 297, 283, 454, 39, 374, 187, 484, 4, 541, 570, 5],
    ("jinen-v1-like", "full-width punctuation"): [6, 47, 304, 306, 48, 40, 133, 53, 53, 53, 4, 505, 577, 518, 5],
    ("jinen-v2-metaspace", "empty context"): [1199, 1197, 538, 596, 531, 1198],
    ("jinen-v2-metaspace", "context"): [1199, 282, 275, 486, 1197, 538, 596, 531, 1198],
    ("jinen-v2-metaspace", "ideographic space"): [1199, 282, 275, 486, 259, 233, 156, 183, 515, 1197, 572, 601, 1198],
    ("jinen-v2-metaspace", "full-width punctuation"): [1199, 353, 286, 287, 354, 346, 439, 359, 359, 359, 1197, 536,
                                                       608, 549, 1198],
}
PIECES = {
    # what the tokens write, "·" for a byte token inside a character
    ("zenz", "empty context"): "···キョウ···",
    ("zenz", "context"): "···今日は···キョウ···",
    ("zenz", "ideographic space"): "···今日は\u3000晴れ···ハレ···",
    ("zenz", "full-width punctuation"): "···（東京）！～…···カンジ···",
    ("jinen-v1-like", "ideographic space"): "\uee02今日は ··れ\uee00ハレ\uee01",
    ("jinen-v2-metaspace", "ideographic space"): "\uee02今日は ···れ\uee00ハレ\uee01",
    ("jinen-v2-metaspace", "full-width punctuation"): "\uee02(東京)!~...\uee00カンジ\uee01",
}


def _tokenizer(kind):
    path, n_vocab, _family = KINDS[kind]
    return HfTokenizer(path, n_vocab)


@pytest.fixture(scope="module")
def tokenizers():
    return {kind: _tokenizer(kind) for kind in KINDS}


def _written(tok, ids):
    out = []
    for i in ids:
        raw = tok.token_bytes(i)
        try:
            out.append(raw.decode("utf-8"))
        except UnicodeDecodeError:
            out.append("·")
    return "".join(out)


@pytest.mark.parametrize("kind, case", list(PINNED))
def test_prompt_ids_are_pinned(tokenizers, kind, case):
    tok, family = tokenizers[kind], KINDS[kind][2]
    reading, context = CASES[case]
    ids = tok.encode_prompt(family.build(reading, context))
    assert ids == PINNED[kind, case]
    if (kind, case) in PIECES:
        assert _written(tok, ids) == PIECES[kind, case]


def test_the_zenz_prompt_has_the_ideographic_space_token(tokenizers):
    # id 567 is U+3000 in the zenz vocabulary; NFKC would have made it a space it has no token for
    tok = tokenizers["zenz"]
    assert tok.encode("\u3000") == [567]
    assert 567 in tok.encode_prompt(ZENZ_V3.build("はれ", "今日は 晴れ"))
    assert 567 not in tok.encode_prompt(JINEN.build("はれ", "今日は\u3000晴れ"))


def test_marks_are_single_tokens_where_the_vocabulary_has_them(tokenizers):
    assert [tokenizers["jinen-v1-like"].mark_id(m) for m in "\uee00\uee01\uee02"] == [4, 5, 6]
    assert [tokenizers["jinen-v2-metaspace"].mark_id(m) for m in "\uee00\uee01\uee02"] == [1197, 1198, 1199]
    assert [tokenizers["zenz"].mark_id(m) for m in "\uee00\uee01\uee02"] == [None, None, None]


@pytest.mark.parametrize("kind", list(KINDS))
def test_padding_and_truncation_in_the_file_are_switched_off(tmp_path, tokenizers, kind):
    from tokenizers import Tokenizer

    path, n_vocab, family = KINDS[kind]
    own = Tokenizer.from_file(str(path))
    own.enable_padding(length=64, pad_id=1, pad_token=own.id_to_token(1))
    own.enable_truncation(max_length=4)
    padded = tmp_path / "tokenizer.json"
    own.save(str(padded))
    spec = json.loads(padded.read_text(encoding="utf-8"))
    assert spec["padding"] and spec["truncation"]  # the file really asks for both
    assert len(own.encode("きょう" * 10, add_special_tokens=False).ids) == 64  # and the library obeys it
    loaded = HfTokenizer(padded, n_vocab)
    for reading, context in CASES.values():
        prompt = family.build(reading, context)
        assert loaded.encode_prompt(prompt) == tokenizers[kind].encode_prompt(prompt)
        assert loaded.encode_joint(prompt, "今日") == tokenizers[kind].encode_joint(prompt, "今日")


def test_a_metaspace_surface_alone_starts_with_a_space_piece_the_joint_encoding_lacks(tokenizers):
    tok = tokenizers["jinen-v2-metaspace"]
    prompt = JINEN.build("きょう")
    space = tok.vocab["\u2581"]
    assert tok.encode("今日")[0] == space  # what scoring the surface alone used to feed the model
    prompt_part, surface_part = tok.encode_joint(prompt, "今日")
    assert prompt_part == tok.encode_prompt(prompt)
    assert surface_part == tok.encode("今日")[1:] and space not in surface_part


_SURFACE = st.text(st.sampled_from("今日は東京漢字かなカナ（）！～…、。 　abc😀"), max_size=12)


@settings(max_examples=60, deadline=None)
@given(kind=st.sampled_from(list(KINDS)), reading=st.text(st.sampled_from("きょうかんじアイ"), min_size=1, max_size=6),
       context=st.text(st.sampled_from("今日は、東京　 😀abc（）"), max_size=12), surface=_SURFACE)
def test_the_joint_encoding_is_one_encoding_split_after_the_prompt(tokenizers, kind, reading, context, surface):
    tok, family = tokenizers[kind], KINDS[kind][2]
    prompt = family.build(reading, context)
    text = family.clean(surface)
    prompt_part, surface_part = tok.encode_joint(prompt, text)
    assert prompt_part + surface_part == tok.encode(prompt.text + text)
    # the marks separate prompt and surface: the prompt part is the prompt's own encoding
    assert prompt_part == tok.encode_prompt(prompt)


@given(st.lists(st.integers(0, 50), max_size=20), st.integers(-5, 60))
def test_split_by_start_keeps_the_tokens_that_start_before_the_boundary(starts, boundary):
    starts = sorted(starts)
    ids = list(range(len(starts)))
    head, tail = split_by_start(ids, starts, boundary)
    assert head + tail == ids
    assert all(starts[i] < boundary for i in head) and all(starts[i] >= boundary for i in tail)
