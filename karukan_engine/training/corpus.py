"""Stage 1: fetch Debian doc packages and cut their Japanese text into sentences.

Output: <work>/corpus/<source>.txt, one sentence a line, deduplicated within the source.
Packages are fetched with `apt-get download` and unpacked with `dpkg-deb -x` (no root needed).
"""

from __future__ import annotations

import gzip
import html
import re
import subprocess
import unicodedata
from html.parser import HTMLParser
from pathlib import Path

from karukan_engine.training.paths import stage_dir
from karukan_engine.training.sources import SOURCES, Source

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


def is_japanese_sentence(sentence: str) -> bool:
    japanese = len(_JAPANESE.findall(sentence))
    return japanese >= 5 and len(sentence) <= 200 and japanese >= 0.5 * len(sentence.replace(" ", ""))


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
    subprocess.run(["dpkg-deb", "-x", str(deb), str(tmp)], check=True)
    tmp.rename(target)
    return target


def build_source(source: Source, force: bool = False) -> Path:
    out = stage_dir("corpus") / f"{source.name}.txt"
    if out.exists() and not force:
        return out
    seen: set[str] = set()
    sentences: list[str] = []
    for package in source.packages:
        root = fetch_package(package, stage_dir("packages"))
        for pattern in source.globs:
            for path in sorted(root.glob(pattern)):
                for block in read_source_file(path):
                    for sentence in sentences_of_block(block):
                        if sentence not in seen and is_japanese_sentence(sentence):
                            seen.add(sentence)
                            sentences.append(sentence)
    tmp = out.with_suffix(".partial")
    tmp.write_text("".join(s + "\n" for s in sentences), encoding="utf-8")
    tmp.rename(out)
    return out


def build_corpus(force: bool = False) -> list[Path]:
    return [build_source(source, force) for source in SOURCES]
