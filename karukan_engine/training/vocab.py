"""The character vocabulary, written both as tokenizer.json and as the GGUF token list.

Id layout (the runtime's convention, see karukan_engine.neural.char_vocab):
    0 <unk> | 1 <s> | 2 </s> | 3 <pad> | 4..6 U+EE02 U+EE00 U+EE01 | 256 <0xNN> | ▁ |
    printable ASCII | hiragana | katakana | the other characters of the training text by frequency
Every character outside the vocabulary falls back to its UTF-8 bytes.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Iterable

from karukan_engine.neural.char_vocab import (  # noqa: F401  (EOS/PAD re-exported for the pipeline)
    BYTE_BASE,
    EOS_ID,
    PAD_ID,
    SPECIAL_TOKENS,
)
from karukan_engine.neural.prompt import MARKS

SPACE_PIECE = "\u2581"


def base_tokens() -> list[str]:
    tokens = list(SPECIAL_TOKENS) + list(MARKS) + [f"<0x{b:02X}>" for b in range(256)] + [SPACE_PIECE]
    tokens += [chr(c) for c in range(0x21, 0x7F)]
    tokens += [chr(c) for c in range(0x3041, 0x3097)]
    tokens += [chr(c) for c in range(0x30A1, 0x30FB)] + ["ー"]
    return tokens


def build_vocabulary(texts: Iterable[str], size: int, min_count: int = 2) -> list[str]:
    """Base tokens, then the most frequent other characters (seen min_count times) up to size."""
    tokens = base_tokens()
    seen = set(tokens)
    counts = Counter(ch for text in texts for ch in text if ch != " ")
    for ch, count in counts.most_common():
        if len(tokens) >= size or count < min_count:
            break
        if ch not in seen and ch.isprintable() and not ord(ch) in range(0xEE00, 0xEE10):
            seen.add(ch)
            tokens.append(ch)
    return tokens


def write_tokenizer_json(path: Path, tokens: list[str]) -> Path:
    """A `tokenizers` BPE without merges (one token per character) with byte fallback."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, normalizers

    model = models.BPE(vocab={t: i for i, t in enumerate(tokens)}, merges=[], unk_token="<unk>",
                       byte_fallback=True)
    tokenizer = Tokenizer(model)
    tokenizer.normalizer = normalizers.Replace(" ", SPACE_PIECE)
    tokenizer.decoder = decoders.Sequence(
        [decoders.Replace(SPACE_PIECE, " "), decoders.ByteFallback(), decoders.Fuse()])
    tokenizer.add_special_tokens(
        [AddedToken(t, special=True, normalized=False) for t in (*SPECIAL_TOKENS, *MARKS)])
    tokenizer.save(str(path))
    return path


class CharTokenizer:
    """Pure-Python encoder with the same ids as tokenizer.json (fast enough for training data)."""

    def __init__(self, tokens: list[str]) -> None:
        self.tokens = tokens
        self._ids = {t: i for i, t in enumerate(tokens)}

    def __len__(self) -> int:
        return len(self.tokens)

    def encode(self, text: str) -> list[int]:
        ids: list[int] = []
        for ch in text:
            if ch == " ":
                ch = SPACE_PIECE
            token_id = self._ids.get(ch)
            if token_id is None:
                ids.extend(BYTE_BASE + b for b in ch.encode("utf-8"))
            else:
                ids.append(token_id)
        return ids

    def mark_id(self, mark: str) -> int:
        return self._ids[mark]

    def save(self, path: Path) -> None:
        path.write_text(json.dumps(self.tokens, ensure_ascii=False), encoding="utf-8")

    @staticmethod
    def load(path: Path) -> "CharTokenizer":
        return CharTokenizer(json.loads(path.read_text(encoding="utf-8")))
