"""The user dictionary, in Mozc's TSV format: reading, word, POS name, comment.

POS names are Mozc's user POS names (名詞, 人名, 動詞ワ行五段, ...); the compiled system dictionary
maps each to a POS id. Readings are stored in hiragana.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator, TextIO

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
_KATAKANA = re.compile("[\u30a1-\u30f6\u30fd\u30fe]")   # what to_hiragana changes


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

    @classmethod
    def from_line(cls, line: str) -> "UserWord":
        """The word of a line to_line() wrote (already checked)."""
        reading, surface, pos, comment = line.split("\t", 3)
        return cls(reading, surface, pos, comment)


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
    reading = fields[0].strip()
    if _KATAKANA.search(reading):
        reading = to_hiragana(reading)
    surface = fields[1].strip()
    pos = fields[2].strip() if len(fields) > 2 and fields[2].strip() else DEFAULT_POS
    comment = fields[3].strip() if len(fields) > 3 else ""
    if not reading or not surface:
        raise UserDictionaryError("empty reading or word")
    if has_control_chars(reading + surface + pos + comment):   # (one search for the four fields)
        # NUL, ESC, newlines...: a word holding one could never be shown or sent to an application
        raise UserDictionaryError("control characters in a field")
    if pos_names is not None and pos not in (pos_names if isinstance(pos_names, (set, frozenset)) else set(pos_names)):
        raise UserDictionaryError(f"unknown part of speech {pos!r}")
    return UserWord(reading, surface, pos, comment)


class UserDictionary:
    def __init__(self, path: Path | None = None, pos_names: Iterable[str] | None = None) -> None:
        self.path = path if path is not None else default_path()
        self.pos_names = set(pos_names) if pos_names is not None else None
        # One checked line (UserWord.to_line) per word, not one object per field: a million-word
        # import stays a string each.
        self._lines: list[str] = []
        self._keys: set[str] | None = None   # each line's (reading, word, POS) part, made by add()
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
        self._lines = []
        self._keys = None
        self._load()
        self.version += 1
        return True

    def __len__(self) -> int:
        return len(self._lines)

    @property
    def words(self) -> list[UserWord]:
        return [UserWord.from_line(line) for line in self._lines]

    def word(self, index: int) -> UserWord:
        return UserWord.from_line(self._lines[index])

    def entries(self) -> Iterator[tuple[str, str, str]]:
        """(reading, word, POS) of every word, in order, without making a UserWord of each."""
        for line in self._lines:
            reading, surface, pos, _comment = line.split("\t", 3)
            yield reading, surface, pos

    def lookup(self, reading: str) -> list[UserWord]:
        prefix = reading + "\t"
        return [UserWord.from_line(line) for line in self._lines if line.startswith(prefix)]

    def add(self, reading: str, surface: str, pos: str = DEFAULT_POS, comment: str = "") -> bool:
        """Add a word; False if the same (reading, word, POS) is already there."""
        word = parse_line("\t".join((reading, surface, pos, comment)), self.pos_names)
        assert word is not None
        if self._keys is None:   # (a set, so importing a big list is not quadratic)
            self._keys = {_key(line) for line in self._lines}
        line = word.to_line()
        if _key(line) in self._keys:
            return False
        self._keys.add(_key(line))
        self._lines.append(line)
        self.version += 1
        return True

    def remove(self, reading: str, surface: str) -> int:
        """Remove every entry of (reading, word); return how many."""
        prefix = f"{to_hiragana(reading)}\t{surface}\t"
        kept = [line for line in self._lines if not line.startswith(prefix)]
        removed = len(self._lines) - len(kept)
        self._lines = kept
        if removed:
            self._keys = None
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
        for line in self._lines:
            stream.write(line + "\n")

    def save(self) -> None:
        """Write the dictionary; UserDictionaryError when the file on disk could not be read
        (it is never replaced unread). Lines skipped at load are kept in a set-aside copy first."""
        if self._read_only:
            raise UserDictionaryError(f"{self.path.name} could not be read; not replacing it")
        if self._unparsed is not None:
            if keep_copy(self.path, self._unparsed, "malformed lines") is None:
                raise UserDictionaryError(f"{self.path.name}: could not keep a copy of its malformed lines")
            self._unparsed = None
        data = "".join(line + "\n" for line in self._lines).encode("utf-8")
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
                checked = word.to_line()
                self._lines.append(line if line == checked else checked)   # most lines are as written
        if skipped:
            self._unparsed = raw   # a save keeps a copy first: nothing the user wrote is lost
            log.warning("user dictionary: skipped %d malformed lines", skipped)


def _key(line: str) -> str:
    """A line without its comment: what makes two entries the same word."""
    return line.rsplit("\t", 1)[0]
