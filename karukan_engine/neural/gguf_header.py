"""A fast, checked reader of a GGUF file's header: metadata and tensor table, no tensor data.

gguf.GGUFReader builds numpy views of every metadata array element, which for a 32k-token
vocabulary (its token list, scores, types and merges) takes seconds; loading needs a handful of
scalars, the token strings and the tensor table. This walks the header once with struct over a
memory map: scalars and the token list are decoded, other arrays are skipped (strings by their
lengths, numbers by their width). Anything malformed raises ValueError (the caller reports a
corrupt file).

Layout (GGUF v2/v3, little-endian): "GGUF", u32 version, u64 tensor count, u64 metadata count;
each metadata entry: string key, u32 type, value (array: u32 item type, u64 count, items);
string = u64 length + UTF-8 bytes; then per tensor: string name, u32 n_dims, u64 dims[n_dims],
u32 ggml type, u64 offset; tensor data starts at the next multiple of general.alignment (32).
"""

from __future__ import annotations

import mmap
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# GGUF metadata value types -> struct format of one scalar (8: string, 9: array).
_SCALARS = {k: struct.Struct(f) for k, f in
            {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}.items()}
_U32, _U64 = _SCALARS[4], _SCALARS[10]
_STRING, _ARRAY = 8, 9
DEFAULT_ALIGNMENT = 32
# Arrays whose items are kept (the rest are skipped).
KEEP_ARRAYS = frozenset({"tokenizer.ggml.tokens"})


@dataclass(frozen=True)
class Tensor:
    name: str
    shape: tuple[int, ...]
    ggml_type: int
    offset: int  # from the start of the data section


@dataclass(frozen=True)
class GgufHeader:
    version: int
    metadata: dict[str, Any]    # scalars and strings; kept arrays as lists; skipped ones as None
    tensors: list[Tensor]
    data_start: int

    def data_end(self) -> int:
        """Where the last tensor's data ends (the file must be at least this long)."""
        from gguf.constants import GGML_QUANT_SIZES, GGMLQuantizationType

        end = self.data_start
        for t in self.tensors:
            block, size = GGML_QUANT_SIZES[GGMLQuantizationType(t.ggml_type)]
            elements = 1
            for d in t.shape:
                elements *= d
            end = max(end, self.data_start + t.offset + elements // block * size)
        return end


class _Cursor:
    def __init__(self, buf) -> None:
        self.buf = buf
        self.pos = 0

    def unpack(self, fmt: struct.Struct):
        value = fmt.unpack_from(self.buf, self.pos)[0]
        self.pos += fmt.size
        return value

    def string(self, keep: bool = True) -> str | None:
        n = self.unpack(_U64)
        if n > len(self.buf) - self.pos:
            raise ValueError("string runs past the end of the file")
        start, self.pos = self.pos, self.pos + n
        return bytes(self.buf[start:self.pos]).decode("utf-8", errors="replace") if keep else None

    def value(self, kind: int, keep: bool = True):
        if kind in _SCALARS:
            return self.unpack(_SCALARS[kind])
        if kind == _STRING:
            return self.string(keep)
        if kind == _ARRAY:
            item, count = self.unpack(_U32), self.unpack(_U64)
            if item in _SCALARS and not keep:
                width = _SCALARS[item].size
                if count * width > len(self.buf) - self.pos:
                    raise ValueError("array runs past the end of the file")
                self.pos += count * width
                return None
            if count > len(self.buf) - self.pos:  # every item takes at least one byte
                raise ValueError("array runs past the end of the file")
            items = [self.value(item, keep) for _ in range(count)]
            return items if keep else None
        raise ValueError(f"unknown GGUF value type {kind}")


def read_header(path: Path) -> GgufHeader:
    with path.open("rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as buf:
        cur = _Cursor(buf)
        if bytes(buf[:4]) != b"GGUF":
            raise ValueError("not a GGUF file")
        cur.pos = 4
        version = cur.unpack(_U32)
        if version not in (2, 3):
            raise ValueError(f"unsupported GGUF version {version}")
        n_tensors, n_kv = cur.unpack(_U64), cur.unpack(_U64)
        if n_tensors > len(buf) or n_kv > len(buf):
            raise ValueError("implausible counts")
        metadata: dict[str, Any] = {}
        for _ in range(n_kv):
            key = cur.string()
            kind = cur.unpack(_U32)
            metadata[key] = cur.value(kind, keep=kind != _ARRAY or key in KEEP_ARRAYS)
        tensors = []
        for _ in range(n_tensors):
            name = cur.string()
            n_dims = cur.unpack(_U32)
            if n_dims > 8:
                raise ValueError("implausible tensor rank")
            shape = tuple(cur.unpack(_U64) for _ in range(n_dims))
            tensors.append(Tensor(name, shape, cur.unpack(_U32), cur.unpack(_U64)))
        align = metadata.get("general.alignment", DEFAULT_ALIGNMENT)
        if not isinstance(align, int) or align <= 0:
            raise ValueError("bad general.alignment")
        data_start = -(-cur.pos // align) * align
        return GgufHeader(version, metadata, tensors, data_start)
