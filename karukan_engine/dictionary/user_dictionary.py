"""The user dictionary, in Mozc's TSV format: reading, word, POS name, comment.

POS names are Mozc's user POS names (名詞, 人名, 動詞ワ行五段, ...); the compiled system dictionary
maps each to a POS id. Readings are stored in hiragana.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, TextIO

from karukan_engine.core.user_files import (
    MAX_DATA_BYTES,
    clean_stale_temps,
    data_dir,
    has_control_chars,
    keep_copy,
    read_user_file,
    set_aside,
    write_atomic,
)
from karukan_engine.kana import to_hiragana

log = logging.getLogger(__name__)

DEFAULT_POS = "名詞"


def default_path() -> Path:
    return data_dir() / "user_dictionary.tsv"


@dataclass(frozen=True)
class UserWord:
    reading: str
    surface: str
    pos: str = DEFAULT_POS
    comment: str = ""

    def to_line(self) -> str:
        return "\t".join((self.reading, self.surface, self.pos, self.comment))


class UserDictionaryError(ValueError):
    """A word or file the user dictionary cannot take."""


def parse_line(line: str, pos_names: Iterable[str] | None = None) -> UserWord | None:
    """One TSV line -> a word; None for blank and comment lines; UserDictionaryError if bad."""
    line = line.rstrip("\r\n")
    if not line.strip() or line.startswith("#"):
        return None
    fields = line.split("\t")
    if len(fields) < 2:
        raise UserDictionaryError("expected reading<TAB>word[<TAB>POS[<TAB>comment]]")
    reading = to_hiragana(fields[0].strip())
    surface = fields[1].strip()
    pos = fields[2].strip() if len(fields) > 2 and fields[2].strip() else DEFAULT_POS
    comment = fields[3].strip() if len(fields) > 3 else ""
    if not reading or not surface:
        raise UserDictionaryError("empty reading or word")
    if any(has_control_chars(text) for text in (reading, surface, pos, comment)):
        # NUL, ESC, newlines...: a word holding one could never be shown or sent to an application
        raise UserDictionaryError("control characters in a field")
    if pos_names is not None and pos not in set(pos_names):
        raise UserDictionaryError(f"unknown part of speech {pos!r}")
    return UserWord(reading, surface, pos, comment)


class UserDictionary:
    def __init__(self, path: Path | None = None, pos_names: Iterable[str] | None = None) -> None:
        self.path = path if path is not None else default_path()
        self.pos_names = set(pos_names) if pos_names is not None else None
        self._words: list[UserWord] = []
        self.version = 0
        self._stamp: int | None = None   # mtime_ns of the file as last loaded or saved
        self._read_only = False   # the file could not be read nor moved aside: never replace it
        self._unparsed: bytes | None = None   # the file as read, while it had lines we skipped
        self._load()

    def reload_if_changed(self) -> bool:
        """Pick up edits made by another process (`karukan dict add` while the engine runs)."""
        try:
            stamp = self.path.stat().st_mtime_ns
        except OSError:
            stamp = None
        if stamp == self._stamp:
            return False
        self._words = []
        self._load()
        self.version += 1
        return True

    @property
    def words(self) -> list[UserWord]:
        return list(self._words)

    def lookup(self, reading: str) -> list[UserWord]:
        return [w for w in self._words if w.reading == reading]

    def add(self, reading: str, surface: str, pos: str = DEFAULT_POS, comment: str = "") -> bool:
        """Add a word; False if the same (reading, word, POS) is already there."""
        word = parse_line("\t".join((reading, surface, pos, comment)), self.pos_names)
        assert word is not None
        if any((w.reading, w.surface, w.pos) == (word.reading, word.surface, word.pos) for w in self._words):
            return False
        self._words.append(word)
        self.version += 1
        return True

    def remove(self, reading: str, surface: str) -> int:
        """Remove every entry of (reading, word); return how many."""
        reading = to_hiragana(reading)
        kept = [w for w in self._words if (w.reading, w.surface) != (reading, surface)]
        removed = len(self._words) - len(kept)
        self._words = kept
        if removed:
            self.version += 1
        return removed

    def import_tsv(self, stream: TextIO) -> tuple[int, list[str]]:
        """Add the words of a Mozc TSV; return (added, problems as 'line N: why')."""
        added, problems = 0, []
        for number, line in enumerate(stream, 1):
            try:
                word = parse_line(line, self.pos_names)
            except UserDictionaryError as exc:
                problems.append(f"line {number}: {exc}")
                continue
            if word is not None and self.add(word.reading, word.surface, word.pos, word.comment):
                added += 1
        return added, problems

    def export_tsv(self, stream: TextIO) -> None:
        for word in self._words:
            stream.write(word.to_line() + "\n")

    def save(self) -> None:
        """Write the dictionary; UserDictionaryError when the file on disk could not be read
        (it is never replaced unread). Lines skipped at load are kept in a set-aside copy first."""
        if self._read_only:
            raise UserDictionaryError(f"{self.path.name} could not be read; not replacing it")
        if self._unparsed is not None:
            if keep_copy(self.path, self._unparsed, "malformed lines") is None:
                raise UserDictionaryError(f"{self.path.name}: could not keep a copy of its malformed lines")
            self._unparsed = None
        data = "".join(w.to_line() + "\n" for w in self._words).encode("utf-8")
        write_atomic(self.path, data)
        self._stamp = self.path.stat().st_mtime_ns

    def _load(self) -> None:
        """Read the file; a file that cannot be used is set aside (or left alone and never saved
        over) and the dictionary starts empty: the engine types whatever is on disk."""
        clean_stale_temps(self.path)
        self._unparsed = None
        try:
            self._stamp = self.path.stat().st_mtime_ns
            raw = read_user_file(self.path, MAX_DATA_BYTES)
            text = raw.decode("utf-8")
        except FileNotFoundError:
            self._stamp = None
            return
        except (OSError, UnicodeDecodeError) as exc:
            why = "not UTF-8" if isinstance(exc, UnicodeDecodeError) else (exc.strerror or type(exc).__name__)
            if set_aside(self.path, why) is None:
                self._read_only = True
            else:
                self._stamp = None
            return
        self._read_only = False
        skipped = 0
        for line in text.split("\n"):   # not splitlines(): \x1c, \x85, U+2028 are not line ends here
            try:
                word = parse_line(line)  # keep words whose POS a newer build may not know
            except UserDictionaryError:
                skipped += 1
                continue
            if word is not None:
                self._words.append(word)
        if skipped:
            self._unparsed = raw   # a save keeps a copy first: nothing the user wrote is lost
            log.warning("user dictionary: skipped %d malformed lines", skipped)
