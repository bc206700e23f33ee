"""Text <-> token ids for a model: tokenizer.json (HF `tokenizers`) when present beside the GGUF,
otherwise the GGUF's own vocabulary through llama.cpp.

The prompt is tokenized the way each model family was trained:

- tokenizer.json: the whole prompt text (marks included) goes through the tokenizer, as Karukan
  and the zenz training scripts do. A vocabulary with a token for each mark (jinen v2: added
  tokens 32000-32002) yields those single tokens; one without (the zenz 6,000-symbol byte-level
  BPE) yields whatever the tokenizer writes for them, three byte tokens each.
- the GGUF vocabulary: where each mark is one token (USER_DEFINED or CONTROL) it is inserted by
  id between the separately encoded parts (what llama.cpp's own special-token split gives, and
  CONTROL marks work too); otherwise the whole text is encoded, special-token parsing off.

User text can never inject a mark: the family's clean() strips U+EE00-U+EE0F from context and
reading before the marks are added, so the prompt text holds only its own marks.

tokenizer.json is used with padding and truncation off whatever the file says: padding tokens
would corrupt the model input and truncation would cut the prompt. A surface that is scored or
checked is tokenized together with its prompt (`encode_joint`), and its tokens are the part of
that one encoding after the prompt, as in training: encoded alone it may start differently (a
SentencePiece Metaspace tokenizer writes a leading `▁` at the start of a text).

Generation stops at the family's EOS (by name: `</s>`, `<|endoftext|>`, ...) and at any mark:
a token whose text holds a mark, or (where marks are spelled in bytes) any token whose bytes
hold 0xEE, the lead byte of every code point in U+E000-U+EFFF, so a mark ends output at its
first byte. That block is private use and never part of a surface.
"""

from __future__ import annotations

import ctypes
import json
import re
from functools import lru_cache
from pathlib import Path
from typing import Mapping, Protocol, Sequence

from karukan_engine.neural.errors import TokenizerError
from karukan_engine.neural.prompt import CONTROL_RANGE, MARKS, Prompt

_BYTE_TOKEN = re.compile(r"^<0x([0-9A-Fa-f]{2})>$")
# Token strings that end generation in the model families we run.
EOS_NAMES = frozenset({"</s>", "<|endoftext|>", "<eos>", "<|im_end|>", "<|end_of_text|>", "[SEP]"})
# UTF-8 lead byte of U+E000..U+EFFF, the private-use block that holds the prompt marks.
MARK_LEAD_BYTE = 0xEE
SPACE_PIECE = "\u2581"
# More than this share of differing token strings means tokenizer.json belongs to another model.
MAX_VOCAB_DISAGREEMENT = 0.01


def is_byte_fallback_token(text: str) -> bool:
    return bool(_BYTE_TOKEN.match(text))


def has_control_mark(text: str) -> bool:
    return any(ord(ch) in CONTROL_RANGE for ch in text)


def is_stop_piece(text: str, raw: bytes) -> bool:
    """A token that ends generation: an EOS name, a mark in its text, or a byte of U+E000-EFFF."""
    return text in EOS_NAMES or has_control_mark(text) or MARK_LEAD_BYTE in raw


@lru_cache(maxsize=1)
def byte_level_alphabet() -> dict[str, int]:
    """GPT-2 byte-level BPE: the printable character that stands for each byte, inverted.
    Printable Latin-1 bytes stand for themselves; the other 68 bytes map, in byte order, to
    U+0100 upwards."""
    printable = [*range(0x21, 0x7F), *range(0xA1, 0xAD), *range(0xAE, 0x100)]
    table = {b: b for b in printable}
    extra = 0
    for b in range(256):
        if b not in table:
            table[b] = 0x100 + extra
            extra += 1
    return {chr(c): b for b, c in table.items()}


def byte_level_bytes(token: str) -> bytes | None:
    """The bytes a byte-level token stands for; None when it is not written in that alphabet."""
    alphabet = byte_level_alphabet()
    try:
        return bytes(alphabet[ch] for ch in token)
    except KeyError:
        return None


class Tokenizer(Protocol):
    """What the decoders need from a tokenizer."""

    def encode(self, text: str) -> list[int]: ...

    def encode_prompt(self, prompt: Prompt) -> list[int]:
        """The prompt's ids, as the family was trained (see module docstring)."""
        ...

    def encode_joint(self, prompt: Prompt, surface: str) -> tuple[list[int], list[int]]:
        """prompt.text + surface encoded as one text, split into (prompt part, surface part)."""
        ...

    def decode(self, ids: Sequence[int]) -> str: ...

    def token_string(self, token_id: int) -> str:
        """The token as the vocabulary stores it (byte-level or ▁ spelling)."""
        ...

    def token_bytes(self, token_id: int) -> bytes:
        """What the token writes into the text."""
        ...

    def mark_id(self, mark: str) -> int | None:
        """The single token of a mark; None where the vocabulary spells it in several."""
        ...

    def extra_stop_ids(self) -> set[int]:
        """Ids that end generation besides the GGUF's EOG tokens (EOS names, control marks)."""
        ...


def encode_prompt(tokenizer: Tokenizer, prompt: Prompt) -> list[int]:
    return tokenizer.encode_prompt(prompt)


def _spliced(tokenizer: Tokenizer, marks: Mapping[str, int], prompt: Prompt) -> list[int]:
    """Marks by id around the separately encoded context and reading."""
    ids: list[int] = []
    for is_mark, text in prompt.segments():
        ids += [marks[text]] if is_mark else tokenizer.encode(text)
    return ids


def split_by_start(ids: Sequence[int], starts: Sequence[int], boundary: int) -> tuple[list[int], list[int]]:
    """Tokens that start before `boundary` (a character or byte offset) and the rest: the prompt
    part and the surface part of one encoding. A token that starts before the boundary and
    ends after it (a merge across it; marks make this impossible in practice) stays a prompt
    token: the prompt is then exactly what the model sees before the surface."""
    k = 0
    while k < len(ids) and starts[k] < boundary:
        k += 1
    return list(ids[:k]), list(ids[k:])


def _byte_level(spec: object) -> bool:
    """Whether a tokenizer.json component (decoder / pre_tokenizer) is or holds ByteLevel."""
    if isinstance(spec, dict):
        if spec.get("type") == "ByteLevel":
            return True
        return any(_byte_level(part) for key in ("decoders", "pretokenizers") for part in spec.get(key) or [])
    return False


class HfTokenizer:
    """tokenizer.json through the `tokenizers` package (as Karukan does for jinen models)."""

    def __init__(self, path: Path, n_vocab: int) -> None:
        try:
            from tokenizers import Tokenizer as _HfTokenizer
        except ImportError as exc:  # the neural extra is missing
            raise TokenizerError("the 'tokenizers' package is not installed") from exc
        try:
            self._tok = _HfTokenizer.from_file(str(path))
            spec = json.loads(Path(path).read_text(encoding="utf-8"))
        except Exception as exc:  # tokenizers raises a bare Exception on bad JSON
            raise TokenizerError(f"cannot read {path.name}: {exc}") from exc
        # Whatever the file asks for: a padded or cut prompt is not what the model was trained on.
        self._tok.no_padding()
        self._tok.no_truncation()
        self.name = path.name
        self._n_vocab = n_vocab
        self.byte_level = _byte_level(spec.get("decoder")) or _byte_level(spec.get("pre_tokenizer"))
        added = self._tok.get_added_tokens_decoder()
        # Decode drops special tokens itself, but keeps byte-fallback ones so UTF-8 reassembles
        # (the tokenizer's own skip flag would drop them before the ByteFallback decoder runs).
        self._special = frozenset(i for i, t in added.items() if t.special and not is_byte_fallback_token(t.content))
        self._added = {i: t.content for i, t in added.items()}
        self.vocab = self._tok.get_vocab(with_added_tokens=True)
        if max(self.vocab.values(), default=-1) >= n_vocab:
            raise TokenizerError(f"{path.name} has ids beyond the model's vocabulary ({n_vocab})")
        self._stop = {i for t, i in self.vocab.items() if is_stop_piece(t, self.token_bytes(i, t))}
        self._marks: dict[str, int | None] = {}
        for mark in MARKS:
            ids = self.encode(mark)
            self._marks[mark] = ids[0] if len(ids) == 1 else None

    def token_string(self, token_id: int) -> str:
        return self._tok.id_to_token(token_id) or ""

    def token_bytes(self, token_id: int, text: str | None = None) -> bytes:
        """What a token writes into the output, as bytes (a lone byte token: that byte)."""
        if text is None:
            text = self._tok.id_to_token(token_id) or ""
        if token_id in self._added:
            return text.encode("utf-8")
        byte = _BYTE_TOKEN.match(text)
        if byte:
            return bytes([int(byte.group(1), 16)])
        if self.byte_level:
            raw = byte_level_bytes(text)
            if raw is not None:
                return raw
        return text.replace(SPACE_PIECE, " ").encode("utf-8")

    def encode(self, text: str) -> list[int]:
        return list(self._tok.encode(text, add_special_tokens=False).ids)

    def encode_prompt(self, prompt: Prompt) -> list[int]:
        return self.encode(prompt.text)

    def encode_joint(self, prompt: Prompt, surface: str) -> tuple[list[int], list[int]]:
        text = prompt.text
        encoding = self._tok.encode(text + surface, add_special_tokens=False)
        # Offsets are in characters of the text given (before any normaliser).
        return split_by_start(encoding.ids, [start for start, _end in encoding.offsets], len(text))

    def decode(self, ids: Sequence[int]) -> str:
        kept = [i for i in ids if i not in self._special]
        return self._tok.decode(kept, skip_special_tokens=False)

    def mark_id(self, mark: str) -> int | None:
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
        self._marks: dict[str, int | None] = {}
        for mark in MARKS:
            ids = self._tokenize(mark, parse_special=True)
            self._marks[mark] = ids[0] if len(ids) == 1 else None
        self._single_marks = all(v is not None for v in self._marks.values())

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

    def encode_prompt(self, prompt: Prompt) -> list[int]:
        if self._single_marks:
            return _spliced(self, self._marks, prompt)  # type: ignore[arg-type]
        return self.encode(prompt.text)

    def encode_joint(self, prompt: Prompt, surface: str) -> tuple[list[int], list[int]]:
        if self._single_marks:
            # llama.cpp splits the text at each mark token and encodes the pieces apart, so the
            # surface after the last mark is encoded on its own.
            return self.encode_prompt(prompt), (self.encode(surface) if surface else [])
        text = prompt.text
        ids = self.encode(text + surface)
        starts, offset = [], 0
        for token in ids:
            starts.append(offset)
            offset += len(self.piece(token))
        return split_by_start(ids, starts, len(text.encode("utf-8")))

    def token_string(self, token_id: int) -> str:
        raw = self._llama.llama_vocab_get_text(self._vocab, token_id)
        return raw.decode("utf-8", errors="replace") if raw else ""

    def token_bytes(self, token_id: int) -> bytes:
        return self.piece(token_id)

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

    def mark_id(self, mark: str) -> int | None:
        return self._marks[mark]

    def extra_stop_ids(self) -> set[int]:
        stops = set()
        for token in range(self.n_vocab):
            raw = self.piece(token, special=True)
            if is_stop_piece(raw.decode("utf-8", errors="ignore"), raw):
                stops.add(token)
        return stops


def gguf_token_texts(vocab: int, n_vocab: int) -> list[str]:
    """The GGUF's token strings in id order (as stored, e.g. byte-level or with ▁)."""
    import llama_cpp

    out = []
    for i in range(n_vocab):
        raw = llama_cpp.llama_vocab_get_text(vocab, i)
        out.append(raw.decode("utf-8", errors="replace") if raw else "")
    return out


def check_agreement(tokenizer: HfTokenizer, gguf_tokens: Sequence[str]) -> None:
    """Refuse a tokenizer.json that belongs to another model: its token strings must be the
    GGUF's at the same ids (a converted model stores the very same strings)."""
    pairs = [(i, t) for t, i in tokenizer.vocab.items() if i < len(gguf_tokens)]
    if not pairs:
        raise TokenizerError(f"{tokenizer.name} shares no ids with the GGUF vocabulary")
    differ = sum(1 for i, t in pairs if gguf_tokens[i] != t)
    if differ > MAX_VOCAB_DISAGREEMENT * len(pairs):
        raise TokenizerError(
            f"{tokenizer.name} does not match the GGUF vocabulary ({differ} of {len(pairs)} token strings differ)")
