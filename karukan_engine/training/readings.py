"""Stage 2: katakana readings for corpus sentences, fugashi (UniDic) cross-checked with Sudachi.

Both analysers segment the sentence; the offsets where both put a word boundary cut it into
chunks. A chunk gets a reading only when both analysers read it the same way; otherwise (and for
digits, Latin letters, spaces and unknown words) its reading is null and later stages never put
it on the input side of a pair. Output: <work>/readings/<source>.jsonl, one sentence a line:
{"chunks": [[surface, reading-or-null], ...]}.
"""

from __future__ import annotations

import json
import re
from multiprocessing import Pool
from pathlib import Path

from karukan_engine.kana import to_katakana
from karukan_engine.training.paths import stage_dir
from karukan_engine.training.sources import SOURCES

Chunk = tuple[str, "str | None"]
Token = tuple[int, int, "str | None"]  # begin, end, katakana reading or None when unknown

_KANA_ONLY = re.compile(r"^[\u3041-\u3096\u30a1-\u30fa\u30fc\u309d\u309e\u30fd\u30fe]+$")
# Punctuation and symbols an IME user types as themselves.
_SELF_READING = re.compile(r"^[、。，．・「」『』（）()\[\]【】！？!?：:;；〜~ー\-\"'“”‘’…]+$")
_UNREADABLE = re.compile(r"[0-9A-Za-z\s]")


def _fallback_reading(surface: str) -> str | None:
    if _UNREADABLE.search(surface):
        return None
    if _KANA_ONLY.match(surface):
        return to_katakana(surface)
    if _SELF_READING.match(surface):
        return surface
    return None


def _clean_reading(surface: str, reading: str | None) -> str | None:
    fallback = _fallback_reading(surface)
    if _UNREADABLE.search(surface):
        return None
    if fallback is not None:
        return fallback
    if not reading or reading == "*" or reading == "キゴウ":
        return None
    reading = to_katakana(reading)
    return reading if _KANA_ONLY.match(reading) else None


class Annotator:
    """Holds one fugashi tagger and one Sudachi tokenizer (both are slow to create)."""

    def __init__(self) -> None:
        import fugashi
        import unidic_lite
        from sudachipy import dictionary, tokenizer

        self._fugashi = fugashi.Tagger("-d " + unidic_lite.DICDIR)
        self._sudachi = dictionary.Dictionary(dict="core").tokenizer()
        self._mode = tokenizer.Tokenizer.SplitMode.A

    def fugashi_tokens(self, sentence: str) -> list[Token]:
        tokens: list[Token] = []
        cursor = 0
        for word in self._fugashi(sentence):
            begin = sentence.find(word.surface, cursor)
            if begin < 0:
                return []
            end = begin + len(word.surface)
            kana = getattr(word.feature, "kana", None)
            tokens.append((begin, end, _clean_reading(word.surface, kana)))
            cursor = end
        return tokens

    def sudachi_tokens(self, sentence: str) -> list[Token]:
        return [
            (m.begin(), m.end(), _clean_reading(m.surface(), m.reading_form()))
            for m in self._sudachi.tokenize(sentence, self._mode)
        ]

    def chunks(self, sentence: str) -> list[Chunk]:
        return align(sentence, self.fugashi_tokens(sentence), self.sudachi_tokens(sentence))


def _readings_between(tokens: list[Token], begin: int, end: int) -> str | None:
    parts = [reading for b, e, reading in tokens if b >= begin and e <= end]
    if any(part is None for part in parts):
        return None
    return "".join(parts)  # type: ignore[arg-type]


def align(sentence: str, first: list[Token], second: list[Token]) -> list[Chunk]:
    """Cut at the boundaries both analysers share; keep a reading only where they agree."""
    if not first or not second:
        return [(sentence, None)] if sentence else []
    bounds_first = {b for b, _, _ in first} | {e for _, e, _ in first}
    bounds_second = {b for b, _, _ in second} | {e for _, e, _ in second}
    shared = sorted((bounds_first & bounds_second) | {0, len(sentence)})
    chunks: list[Chunk] = []
    for begin, end in zip(shared, shared[1:]):
        surface = sentence[begin:end]
        reading_first = _readings_between(first, begin, end)
        reading_second = _readings_between(second, begin, end)
        agreed = reading_first if reading_first is not None and reading_first == reading_second else None
        # Text no token covers (spaces between words) stays unreadable.
        if agreed == "" and surface.strip():
            agreed = None
        chunks.append((surface, agreed if surface.strip() else None))
    return chunks


_annotator: Annotator | None = None


def _annotate_line(sentence: str) -> str:
    global _annotator
    if _annotator is None:
        _annotator = Annotator()
    return json.dumps({"chunks": _annotator.chunks(sentence)}, ensure_ascii=False)


def annotate_source(name: str, processes: int = 2, force: bool = False) -> Path:
    out = stage_dir("readings") / f"{name}.jsonl"
    if out.exists() and not force:
        return out
    sentences = (stage_dir("corpus") / f"{name}.txt").read_text(encoding="utf-8").splitlines()
    with Pool(processes) as pool:
        lines = pool.map(_annotate_line, sentences, chunksize=256)
    tmp = out.with_suffix(".partial")
    tmp.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    tmp.rename(out)
    return out


def annotate_all(processes: int = 2, force: bool = False) -> list[Path]:
    return [annotate_source(source.name, processes, force) for source in SOURCES]
