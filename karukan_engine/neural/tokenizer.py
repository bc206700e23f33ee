"""Text <-> token ids for a model: tokenizer.json (HF `tokenizers`) when present beside the GGUF,
otherwise the GGUF's own vocabulary through llama.cpp.

Prompt marks are inserted as their token ids, never parsed out of text, so user text cannot
inject them and models whose marks are CONTROL tokens work too.
"""

from __future__ import annotations

import ctypes
import re
from pathlib import Path
from typing import Protocol, Sequence

from karukan_engine.neural.errors import TokenizerError
from karukan_engine.neural.prompt import CONTROL_RANGE, MARKS, Prompt

_BYTE_TOKEN = re.compile(r"^<0x[0-9A-Fa-f]{2}>$")
# Token strings that end generation in the model families we run.
_EOS_NAMES = frozenset({"</s>", "<|endoftext|>", "<eos>", "<|im_end|>", "<|end_of_text|>", "[SEP]"})


def is_byte_fallback_token(text: str) -> bool:
    return bool(_BYTE_TOKEN.match(text))


def has_control_mark(text: str) -> bool:
    return any(ord(ch) in CONTROL_RANGE for ch in text)


class Tokenizer(Protocol):
    """What the decoders need from a tokenizer."""

    def encode(self, text: str) -> list[int]: ...

    def decode(self, ids: Sequence[int]) -> str: ...

    def mark_id(self, mark: str) -> int: ...

    def extra_stop_ids(self) -> set[int]:
        """Ids that end generation besides the GGUF's EOG tokens (EOS names, control marks)."""
        ...


def encode_prompt(tokenizer: Tokenizer, prompt: Prompt) -> list[int]:
    ctx_mark, in_mark, out_mark = (tokenizer.mark_id(m) for m in MARKS)
    ids = [ctx_mark]
    if prompt.context:
        ids += tokenizer.encode(prompt.context)
    ids.append(in_mark)
    if prompt.reading:
        ids += tokenizer.encode(prompt.reading)
    ids.append(out_mark)
    return ids


class HfTokenizer:
    """tokenizer.json through the `tokenizers` package (as Karukan does for jinen models)."""

    def __init__(self, path: Path, n_vocab: int) -> None:
        try:
            from tokenizers import Tokenizer as _HfTokenizer
        except ImportError as exc:  # the neural extra is missing
            raise TokenizerError("the 'tokenizers' package is not installed") from exc
        try:
            self._tok = _HfTokenizer.from_file(str(path))
        except Exception as exc:  # tokenizers raises a bare Exception on bad JSON
            raise TokenizerError(f"cannot read {path.name}: {exc}") from exc
        self._n_vocab = n_vocab
        added = self._tok.get_added_tokens_decoder()
        # Decode drops special tokens itself, but keeps byte-fallback ones so UTF-8 reassembles
        # (the tokenizer's own skip flag would drop them before the ByteFallback decoder runs).
        self._special = frozenset(i for i, t in added.items() if t.special and not is_byte_fallback_token(t.content))
        vocab = self._tok.get_vocab(with_added_tokens=True)
        if max(vocab.values(), default=-1) >= n_vocab:
            raise TokenizerError(f"{path.name} has ids beyond the model's vocabulary ({n_vocab})")
        self._stop = {i for t, i in vocab.items() if t in _EOS_NAMES or has_control_mark(t)}
        self._marks = {}
        for mark in MARKS:
            mark_id = self._tok.token_to_id(mark)
            if mark_id is None:
                raise TokenizerError(f"{path.name} has no token for prompt mark U+{ord(mark):04X}")
            self._marks[mark] = mark_id

    def encode(self, text: str) -> list[int]:
        return list(self._tok.encode(text, add_special_tokens=False).ids)

    def decode(self, ids: Sequence[int]) -> str:
        kept = [i for i in ids if i not in self._special]
        return self._tok.decode(kept, skip_special_tokens=False)

    def mark_id(self, mark: str) -> int:
        return self._marks[mark]

    def extra_stop_ids(self) -> set[int]:
        return set(self._stop)


class GgufTokenizer:
    """The GGUF's own vocabulary through llama.cpp's tokenizer."""

    def __init__(self, vocab: int) -> None:
        import llama_cpp

        self._llama = llama_cpp
        self._vocab = vocab
        self.n_vocab = llama_cpp.llama_vocab_n_tokens(vocab)
        self._marks = {}
        for mark in MARKS:
            ids = self._tokenize(mark, parse_special=True)
            if len(ids) != 1:
                raise TokenizerError(f"the GGUF vocabulary has no single token for U+{ord(mark):04X}")
            self._marks[mark] = ids[0]

    def _tokenize(self, text: str, parse_special: bool) -> list[int]:
        data = text.encode("utf-8")
        capacity = len(data) + 8  # never more tokens than bytes (+ room for BOS/EOS)
        buf = (ctypes.c_int32 * capacity)()
        n = self._llama.llama_tokenize(self._vocab, data, len(data), buf, capacity, False, parse_special)
        if n < 0:
            raise TokenizerError("llama.cpp tokenizer overflow")
        return list(buf[:n])

    def encode(self, text: str) -> list[int]:
        return self._tokenize(text, parse_special=False)

    def piece(self, token: int, special: bool = False) -> bytes:
        buf = ctypes.create_string_buffer(64)
        n = self._llama.llama_token_to_piece(self._vocab, token, buf, len(buf), 0, special)
        if n < 0:  # piece longer than the buffer: -n is the size needed
            buf = ctypes.create_string_buffer(-n)
            n = self._llama.llama_token_to_piece(self._vocab, token, buf, len(buf), 0, special)
        return buf.raw[: max(n, 0)]

    def decode(self, ids: Sequence[int]) -> str:
        # Concatenate bytes first so byte-fallback tokens reassemble into UTF-8.
        return b"".join(self.piece(i) for i in ids).decode("utf-8", errors="replace")

    def mark_id(self, mark: str) -> int:
        return self._marks[mark]

    def extra_stop_ids(self) -> set[int]:
        stops = set()
        for token in range(self.n_vocab):
            text = self.piece(token, special=True).decode("utf-8", errors="ignore")
            if text in _EOS_NAMES or has_control_mark(text):
                stops.add(token)
        return stops
