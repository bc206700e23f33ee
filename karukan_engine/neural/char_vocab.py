"""The character vocabulary layout shared by the bundled model and the tests' tiny models.

Id layout: 0 <unk> | 1 <s> | 2 </s> | 3 <pad> | 4..6 U+EE02 U+EE00 U+EE01 | 256 <0xNN> byte
fallback tokens | then characters. Both the exporter (karukan_engine.training) and the test-model
generator (karukan_testing.tiny_models) write it into GGUF through write_gguf_vocabulary, so the
runtime sees one layout.
"""

from __future__ import annotations

from typing import Any, Sequence

from karukan_engine.neural.prompt import MARKS

SPECIAL_TOKENS = ("<unk>", "<s>", "</s>", "<pad>")
UNK_ID, BOS_ID, EOS_ID, PAD_ID = 0, 1, 2, 3
BYTE_BASE = len(SPECIAL_TOKENS) + len(MARKS)

# SentencePiece/GGUF token types.
TOKEN_NORMAL, TOKEN_UNKNOWN, TOKEN_CONTROL, TOKEN_USER_DEFINED, TOKEN_BYTE = 1, 2, 3, 4, 6


def is_byte_token(token: str) -> bool:
    return len(token) == 6 and token.startswith("<0x") and token.endswith(">")


def token_types(tokens: Sequence[str]) -> list[int]:
    types = []
    for i, token in enumerate(tokens):
        if i == UNK_ID:
            types.append(TOKEN_UNKNOWN)
        elif token in SPECIAL_TOKENS:
            types.append(TOKEN_CONTROL)
        elif token in MARKS:
            types.append(TOKEN_USER_DEFINED)
        elif is_byte_token(token):
            types.append(TOKEN_BYTE)
        else:
            types.append(TOKEN_NORMAL)
    return types


def write_gguf_vocabulary(writer: Any, tokens: Sequence[str]) -> None:
    """Add the vocabulary as an SPM-style ("llama") tokenizer that llama.cpp can load."""
    writer.add_tokenizer_model("llama")
    writer.add_tokenizer_pre("default")
    writer.add_token_list(list(tokens))
    writer.add_token_scores([0.0] * len(tokens))
    writer.add_token_types(token_types(tokens))
    writer.add_unk_token_id(UNK_ID)
    writer.add_bos_token_id(BOS_ID)
    writer.add_eos_token_id(EOS_ID)
    writer.add_pad_token_id(PAD_ID)
    writer.add_add_bos_token(False)
    writer.add_add_eos_token(False)
    writer.add_add_space_prefix(False)
