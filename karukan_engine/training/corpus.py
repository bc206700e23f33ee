"""Stage 1: cut every source's Japanese text into sentences.

Output: <work>/corpus/<part>.txt, one sentence (or chat utterance) a line, deduplicated within the
part. Corpus files are read in place (xz) from the corpus directory; a dialogue source also
writes `<name>_heldout.txt`, the dialogues held out by hash. The held-out Debian documentation
is fetched with `apt-get download` and unpacked with `dpkg-deb -x` (no root needed). The
annotated Wikipedia corpus needs no cutting: the readings stage reads it directly.
"""

from __future__ import annotations

import gzip
import hashlib
import html
import lzma
import re
import subprocess
import unicodedata
from html.parser import HTMLParser
from pathlib import Path
from typing import Iterator

from karukan_engine.training.paths import stage_dir
from karukan_engine.training.sources import SOURCES, Source, heldout_part

# Tags whose content is not prose (code, scripts) and tags that end a block of text.
_SKIP_TAGS = {"script", "style", "pre", "code", "screen", "tt", "kbd", "cmd", "var", "sys"}
_BLOCK_TAGS = {
    "p", "div", "li", "td", "th", "tr", "h1", "h2", "h3", "h4", "h5", "h6", "title", "br", "dt",
    "dd", "table", "ul", "ol", "section", "blockquote", "caption", "desc", "item", "note", "link",
    "info", "figure", "page", "terms", "tree", "list", "steps", "synopsis", "media", "span_block",
}
_JAPANESE = re.compile(r"[\u3041-\u3096\u30a1-\u30fa\u30fc\u4e00-\u9fff\u3005]")
# NFKC turns ！？ into ASCII; an ASCII mark ends a sentence only before a space (not in "#!/bin").
_SENTENCE_END = re.compile(r"(?<=[。！？])|(?<=[!?])(?=\s)")


class _BlockTextParser(HTMLParser):
    """Collects text per block element so headings do not glue onto the next sentence."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.blocks: list[str] = []
        self._current: list[str] = []
        self._skip_depth = 0

    def _flush(self) -> None:
        text = "".join(self._current).strip()
        if text:
            self.blocks.append(text)
        self._current = []

    def handle_starttag(self, tag: str, attrs: list) -> None:
        if tag in _SKIP_TAGS:
            self._skip_depth += 1
        elif tag in _BLOCK_TAGS:
            self._flush()

    def handle_endtag(self, tag: str) -> None:
        if tag in _SKIP_TAGS:
            self._skip_depth = max(0, self._skip_depth - 1)
        elif tag in _BLOCK_TAGS:
            self._flush()

    def handle_data(self, data: str) -> None:
        if not self._skip_depth:
            self._current.append(data)

    def close(self) -> None:
        super().close()
        self._flush()


def markup_blocks(text: str) -> list[str]:
    parser = _BlockTextParser()
    parser.feed(text)
    parser.close()
    return parser.blocks


# Font macros carry inline text; section and paragraph macros start a new block.
_ROFF_INLINE_MACROS = re.compile(r"^\.(B|I|BI|BR|IB|IR|RB|RI|SM|SB)\b\s*(.*)$")
_ROFF_HEADING_MACROS = re.compile(r"^\.(SH|SS|IP|TP|HP)\b\s*(.*)$")
_ROFF_ESCAPE = re.compile(r"\\f(\[[^\]]*\]|\(..|.)|\\s[+-]?\d|\\[,/&:%|^]|\\\*\(..|\\\*.")


def roff_blocks(text: str) -> list[str]:
    """Man page source to paragraphs: macro lines end a paragraph, text macros keep their text."""
    blocks: list[str] = []
    current: list[str] = []

    def flush() -> None:
        if current:
            blocks.append(" ".join(current))
            current.clear()

    for line in text.splitlines():
        if line.startswith((".\\\"", "'\\\"")):
            continue
        inline = _ROFF_INLINE_MACROS.match(line)
        if inline:
            current.append(inline.group(2).replace('"', ""))
            continue
        if line.startswith((".", "'")):
            flush()
            heading = _ROFF_HEADING_MACROS.match(line)
            if heading and heading.group(2):
                blocks.append(heading.group(2).replace('"', ""))
            continue
        current.append(line)
    flush()
    return [_ROFF_ESCAPE.sub("", block).replace("\\-", "-").replace("\\e", "\\") for block in blocks]


def plain_blocks(text: str) -> list[str]:
    """Plain text (info, reStructuredText): blank lines separate paragraphs."""
    return [" ".join(part.split("\n")) for part in re.split(r"\n\s*\n", text)]


def _join_lines(block: str) -> str:
    # Line breaks inside Japanese text are not spaces; between Latin words they are.
    block = re.sub(r"(?<=[^\x00-\x7f])\s+(?=[^\x00-\x7f])", "", block)
    return re.sub(r"\s+", " ", block).strip()


def sentences_of_block(block: str) -> list[str]:
    block = _join_lines(unicodedata.normalize("NFKC", html.unescape(block)))
    return [s.strip() for s in _SENTENCE_END.split(block) if s.strip()]


def is_japanese_sentence(sentence: str, min_japanese: int = 5) -> bool:
    japanese = len(_JAPANESE.findall(sentence))
    return (japanese >= min_japanese and len(sentence) <= 200
            and japanese >= 0.5 * len(sentence.replace(" ", "")))


def read_source_file(path: Path) -> list[str]:
    raw = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
    text = raw.decode("utf-8", errors="replace")
    name = path.name.removesuffix(".gz")
    if name.endswith((".html", ".page", ".xml")):
        return markup_blocks(text)
    if re.search(r"\.\d[a-z]*$", name):
        return roff_blocks(text)
    return plain_blocks(text)


def fetch_package(package: str, dest: Path) -> Path:
    """Download and unpack one Debian package; cached by the unpacked directory."""
    target = dest / "extract" / package
    if target.is_dir():
        return target
    debs = dest / "debs"
    debs.mkdir(parents=True, exist_ok=True)
    subprocess.run(["apt-get", "download", package], cwd=debs, check=True,
                   stdout=subprocess.DEVNULL)
    deb = sorted(debs.glob(f"{package}_*.deb"))[-1]
    tmp = target.with_suffix(".partial")
    tmp.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(["dpkg-deb", "-x", str(deb), str(tmp)], check=True)
    tmp.rename(target)
    return target


def _debian_sentences(source: Source) -> list[str]:
    sentences: list[str] = []
    for package in source.packages:
        root = fetch_package(package, stage_dir("packages"))
        for pattern in source.globs:
            for path in sorted(root.glob(pattern)):
                for block in read_source_file(path):
                    sentences.extend(s for s in sentences_of_block(block) if is_japanese_sentence(s))
    return sentences


# Historical kana spellings (ゐ, 言ふ, であらう, 思つた) that slipped into the modern-kana Aozora texts.
_HISTORICAL_KANA = re.compile(r"[ゐゑヰヱ]|[あかさたなはまやらわ]ふ[。、」]|あらう|でせう|[っつ]た[。、]|つて[、。]")
# A chat line is one utterance: it stays whole (it is its own left context) unless it is long.
_LONG_UNIT = 100


def units_of_line(line: str) -> list[str]:
    """A corpus line as the sentences an IME user would type in one go."""
    line = _join_lines(unicodedata.normalize("NFKC", line))
    if len(line) <= _LONG_UNIT:
        return [line] if line else []
    return [s.strip() for s in _SENTENCE_END.split(line) if s.strip()]


def is_held_out_group(group: list[str], percent: int) -> bool:
    """A stable share of dialogues (keyed by their whole text) kept out of training."""
    key = "\n".join(group).encode("utf-8")
    return percent > 0 and hashlib.sha1(key).digest()[1] * 100 < percent * 256


def _groups(path: Path, group_lines: int = 0) -> Iterator[list[str]]:
    """Blank-line-separated groups of lines (dialogues, works) of an xz text file; with
    group_lines, also every run of that many lines (a file with no blank lines)."""
    group: list[str] = []
    with lzma.open(path, "rt", encoding="utf-8") as handle:
        for line in handle:
            line = line.strip()
            if line:
                group.append(line)
            if group and (not line or len(group) == group_lines):
                yield group
                group = []
    if group:
        yield group


def corpus_sentences(source: Source, corpus_dir: Path, every: int | None = None) -> dict[str, list[str]]:
    """{part name: sentences} for a "lines" source; held-out documents form their own part.
    every: keep every k-th paragraph (default: the source's own sampling)."""
    parts: dict[str, list[str]] = {source.name: []}
    if source.heldout_percent:
        parts[heldout_part(source.name)] = []
    every = source.every if every is None else every
    paragraph = 0
    for group in _groups(corpus_dir / source.file, source.group_lines):
        part = heldout_part(source.name) if is_held_out_group(group, source.heldout_percent) else source.name
        for line in group:
            paragraph += 1
            if paragraph % every:
                continue
            if source.name == "aozora" and _HISTORICAL_KANA.search(line):
                continue
            parts[part].extend(u for u in units_of_line(line) if is_japanese_sentence(u, min_japanese=3))
    return parts


def _write_sentences(out: Path, sentences: list[str]) -> None:
    seen: set[str] = set()
    unique = [s for s in sentences if not (s in seen or seen.add(s))]
    tmp = out.with_suffix(".partial")
    tmp.write_text("".join(s + "\n" for s in unique), encoding="utf-8")
    tmp.rename(out)


def build_source(source: Source, corpus_dir: Path | None, force: bool = False) -> list[Path]:
    """Writes the source's part files; [] for annotated sources (read by the readings stage)."""
    if source.kind == "annotated":
        return []
    names = [source.name] + ([heldout_part(source.name)] if source.heldout_percent else [])
    outs = [stage_dir("corpus") / f"{name}.txt" for name in names]
    if all(out.exists() for out in outs) and not force:
        return outs
    if source.kind == "debian":
        _write_sentences(outs[0], _debian_sentences(source))
        return outs
    if corpus_dir is None:
        raise FileNotFoundError("no corpus directory: pass --corpus DIR (see docs/training.md)")
    for name, sentences in corpus_sentences(source, corpus_dir).items():
        _write_sentences(stage_dir("corpus") / f"{name}.txt", sentences)
    return outs


def build_corpus(corpus_dir: Path | None, force: bool = False) -> list[Path]:
    return [path for source in SOURCES for path in build_source(source, corpus_dir, force)]
