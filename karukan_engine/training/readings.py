"""Stage 2: katakana readings for corpus sentences, fugashi (UniDic) cross-checked with Sudachi.

Both analysers segment the sentence; the offsets where both put a word boundary cut it into
chunks. A chunk gets a reading only when both analysers read it the same way; otherwise (and for
digits, Latin letters, spaces and unknown words) its reading is null and later stages never put
it on the input side of a pair. The annotated Wikipedia corpus needs neither: its hand-checked
reading of every morpheme is used as it is, and its dev split measures how often the automatic
pipeline agrees with the humans (`agreement.json`). Output: <work>/readings/<part>.jsonl, one
sentence a line: {"chunks": [[surface, reading-or-null], ...]}.
"""

from __future__ import annotations

import json
import lzma
import re
import unicodedata
from multiprocessing import Pool
from pathlib import Path

from karukan_engine.kana import to_katakana
from karukan_engine.training.paths import stage_dir
from karukan_engine.training.sources import Source, corpus_parts

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


def gold_chunks(words: list[list[str]]) -> list[Chunk]:
    """Chunks of an annotated sentence: one per morpheme, its gold reading (hiragana) as katakana."""
    chunks: list[Chunk] = []
    for surface, reading, *_ in words:
        surface = unicodedata.normalize("NFKC", surface)
        if not surface:
            continue
        if not surface.strip() or _UNREADABLE.search(surface):
            chunks.append((surface, None))
        elif _SELF_READING.match(surface):
            chunks.append((surface, surface))
        else:
            kana = to_katakana(unicodedata.normalize("NFKC", reading))
            chunks.append((surface, kana if _KANA_ONLY.match(kana) else None))
    return chunks


def annotated_sentences(path: Path) -> list[list[list[str]]]:
    with lzma.open(path, "rt", encoding="utf-8") as handle:
        return [json.loads(line)["words"] for line in handle if line.strip()]


def measure_agreement(sentences: list[list[list[str]]], annotator: "Annotator | None" = None) -> dict:
    """How the automatic readings compare with gold ones on the same sentences.

    coverage: share of characters the pipeline gives a reading; precision: share of those
    readings (per chunk whose span starts and ends on gold morpheme boundaries) equal to gold.
    """
    annotator = annotator or Annotator()
    chars = read_chars = compared = agreed = 0
    for words in sentences:
        gold = gold_chunks(words)
        sentence = "".join(surface for surface, _ in gold)
        bounds, offset = {0: 0}, 0
        gold_prefix = [""]
        for surface, reading in gold:
            offset += len(surface)
            gold_prefix.append(gold_prefix[-1] + (reading if reading is not None else "\0"))
            bounds[offset] = len(gold_prefix) - 1
        position = 0
        chars += len(sentence)
        for surface, reading in annotator.chunks(sentence):
            begin, position = position, position + len(surface)
            if reading is None:
                continue
            read_chars += len(surface)
            if begin in bounds and position in bounds:
                gold_reading = gold_prefix[bounds[position]][len(gold_prefix[bounds[begin]]):]
                compared += 1
                agreed += gold_reading == reading
    return {"sentences": len(sentences), "coverage": read_chars / max(chars, 1),
            "precision": agreed / max(compared, 1), "chunks_compared": compared}


def annotate_source(source: Source, part: str, corpus_dir: Path | None, processes: int = 2,
                    force: bool = False) -> Path:
    out = stage_dir("readings") / f"{part}.jsonl"
    if out.exists() and not force:
        return out
    if source.kind == "annotated":
        if corpus_dir is None:
            raise FileNotFoundError("no corpus directory: pass --corpus DIR (see docs/training.md)")
        lines = [json.dumps({"chunks": gold_chunks(words)}, ensure_ascii=False)
                 for words in annotated_sentences(corpus_dir / source.file)]
    else:
        sentences = (stage_dir("corpus") / f"{part}.txt").read_text(encoding="utf-8").splitlines()
        with Pool(processes) as pool:
            lines = pool.map(_annotate_line, sentences, chunksize=256)
    tmp = out.with_suffix(".partial")
    tmp.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    tmp.rename(out)
    return out


def annotate_all(corpus_dir: Path | None, processes: int = 2, force: bool = False) -> list[Path]:
    paths = [annotate_source(source, part, corpus_dir, processes, force)
             for source, part, _ in corpus_parts()]
    agreement = stage_dir("readings") / "agreement.json"
    if corpus_dir is not None and (force or not agreement.exists()):
        report = measure_agreement(annotated_sentences(corpus_dir / "wac_dev.jsonl.xz"))
        agreement.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    return paths
