"""Learning history: committed (reading, surface) pairs rank higher next time.

Each pair keeps a use count and the tick (a counter of commits) of its last use. Within a
reading the last used surface comes first (as in Mozc), then the more frequent; the store is
bounded and evicts by a score that blends recency and frequency.
A pair is also remembered with its left context (context_key: the last characters before it):
when the same reading comes after the same context, that context's last choice comes first;
elsewhere the per-reading order stands. Contexts are bounded and evicted the same way.
It is saved atomically as JSON (learning_file.py); a corrupt file is set aside and the store starts empty. Files
without contexts (written before they existed) load as context-free history.
Changes are saved in the background once they settle (see saver.py), never on the commit itself;
flush() or close() write at once (shutdown).
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from pathlib import Path

from karukan_engine.dictionary.eviction import WeakestFirst
from karukan_engine.dictionary.learning_file import encoded, good_entry, parse_payload, payload_of, why_unusable
from karukan_engine.dictionary.learning_merge import merge_into
from karukan_engine.dictionary.saver import DebouncedSaver
from karukan_engine.core.user_files import (
    MAX_DATA_BYTES,
    clean_stale_temps,
    data_dir,
    file_stamp,
    has_control_chars,
    keep_copy,
    locked,
    read_user_file,
    set_aside,
    write_atomic,
)

log = logging.getLogger(__name__)

DEFAULT_MAX_ENTRIES = 10000
DEFAULT_MAX_CONTEXT_ENTRIES = 10000
# A choice's context is the last this many characters before it: the end of the previous word
# (a compound's last kanji and its particle, or a two-kanji word) without segmenting anything,
# so the same rule holds for an earlier segment, an earlier commit and the application's text.
CONTEXT_CHARS = 2
# One more use counts as much as being this many commits more recent.
FREQUENCY_WEIGHT = 10
# Background saves: this long after the last change, and at most this long after the first
# unsaved one (so a crash during steady typing loses at most a few seconds of choices).
SAVE_DELAY_S = 2.0
MAX_SAVE_DELAY_S = 5.0


def default_path() -> Path:
    return data_dir() / "learning.json"


def context_key(left_context: str) -> str:
    """The context a choice is learned and looked up under: the end of the text left of it on
    its line ("" when there is none, or when it holds a control character: never stored)."""
    key = left_context.rsplit("\n", 1)[-1][-CONTEXT_CHARS:]
    return "" if has_control_chars(key) else key


@dataclass
class _Use:
    count: int
    last: int

    def score(self) -> int:
        return self.last + FREQUENCY_WEIGHT * self.count

    def rank(self) -> tuple[int, int]:
        return (-self.last, -self.count)


class LearningStore:
    """save_delay: seconds of quiet before a change is saved in the background; None: only
    explicit save()/flush()/close() write."""

    def __init__(self, path: Path | None = None, max_entries: int = DEFAULT_MAX_ENTRIES,
                 save_delay: float | None = SAVE_DELAY_S, max_save_delay: float = MAX_SAVE_DELAY_S,
                 max_context_entries: int = DEFAULT_MAX_CONTEXT_ENTRIES) -> None:
        self.path = path if path is not None else default_path()
        self.max_entries = max_entries
        self.max_context_entries = max_context_entries
        self._lock = threading.Lock()
        self._save_lock = threading.Lock()   # one save at a time; lookups go on meanwhile
        self._uses: dict[tuple[str, str], _Use] = {}
        self._by_reading: dict[str, set[str]] = {}
        # the same pairs under their left context: (context, reading, surface)
        self._in_context: dict[tuple[str, str, str], _Use] = {}
        self._by_context: dict[tuple[str, str], set[str]] = {}
        self._weakest = WeakestFirst()              # eviction order of _uses
        self._weakest_in_context = WeakestFirst()   # and of _in_context
        self._tick = 0
        self.version = 0   # bumps on every change so callers can drop caches
        self._saved_version = 0
        self.saves = 0        # files written by this store (tests: no write on the commit path)
        self._read_only = False   # the file could not be read nor moved aside: never replace it
        self._disk_stamp: tuple | None = None   # the file as this store last read or wrote it
        # what this process removed, so that a save does not take it back from the file: the
        # last use forgotten per key, and the tick of the last clear()
        self._forgotten: dict[tuple[str, str], int] = {}
        self._forgotten_in_context: dict[tuple[str, str, str], int] = {}
        self._cleared_through = -1
        self._saver = (DebouncedSaver(self._save_if_dirty, save_delay, max_save_delay, "karukan-learning-save")
                       if save_delay is not None else None)
        self._load()

    # -- queries -------------------------------------------------------------------------------
    def __len__(self) -> int:
        """Learned (reading, surface) pairs; their contexts are counted by context_entries."""
        return len(self._uses)

    @property
    def context_entries(self) -> int:
        return len(self._in_context)

    @property
    def dirty(self) -> bool:
        """Changed since the last successful save (or the load)."""
        return self.version != self._saved_version

    @property
    def max_reading_length(self) -> int:
        return max((len(r) for r in self._by_reading), default=0)

    def lookup(self, reading: str, left_context: str = "") -> list[str]:
        """Surfaces learned for exactly this reading, best first: the last one chosen after this
        left context (chosen_after) if any, else the last used (as in Mozc, the last choice wins
        the next time), then the others by frequency and age (score)."""
        first = self.chosen_after(reading, left_context)
        with self._lock:
            uses = {s: self._uses[(reading, s)] for s in self._by_reading.get(reading, ())}
        ordered = [] if first is None else [first]
        if uses:
            last = max(uses, key=lambda s: (uses[s].last, s))
            older = sorted((s for s in uses if s != last), key=lambda s: (-uses[s].score(), s))
            ordered += [s for s in (last, *older) if s not in ordered]
        return ordered

    def chosen_after(self, reading: str, left_context: str) -> str | None:
        """The surface last chosen for this reading after this left context (context_key);
        None when it was never chosen there, or when the context is the reading's own word
        again (see _echoes)."""
        key = context_key(left_context)
        if not key:
            return None
        with self._lock:
            here = {s: self._in_context[(key, reading, s)].last for s in self._by_context.get((key, reading), ())}
            if not here or _echoes(key, self._by_reading.get(reading, set()) | here.keys()):
                return None
        return max(here, key=lambda s: (here[s], s))

    def prefix_lookup(self, prefix: str, limit: int = 20) -> list[tuple[str, str]]:
        """(reading, surface) pairs whose reading starts with prefix, best first."""
        with self._lock:
            pairs = [key for key in self._uses if key[0].startswith(prefix)]
            pairs.sort(key=lambda k: (self._uses[k].rank(), k))
            return pairs[:limit]

    # -- updates -------------------------------------------------------------------------------
    def record(self, reading: str, surface: str, left_context: str = "") -> None:
        """One committed choice; also under its left context when there is one (context_key)."""
        if not good_entry([reading, surface, 1, 0]):   # what the next load would refuse is never kept
            return
        key = context_key(left_context)
        with self._lock:
            self._tick += 1
            _use_again(self._uses, self._by_reading, (reading, surface), reading, surface, self._tick)
            self._weakest.note((reading, surface), self._uses)
            if key and _echoes(key, self._by_reading[reading]):
                # Not learned in this context, but it is now the last choice made there: what the
                # context held for the reading is older, and must not win once the spelling that
                # made it an echo is evicted.
                self._drop_context_group(key, reading)
            elif key:
                _use_again(self._in_context, self._by_context, (key, reading, surface), (key, reading),
                           surface, self._tick)
                self._weakest_in_context.note((key, reading, surface), self._in_context)
            self._evict(keep=(reading, surface), keep_in_context=(key, reading, surface))
            self.version += 1
        self._changed()

    def forget(self, reading: str, surface: str) -> bool:
        """Drop a pair, in every context too."""
        with self._lock:
            use = self._uses.pop((reading, surface), None)
            if use is None:
                return False
            self._forgotten[(reading, surface)] = use.last
            _unindex(self._by_reading, reading, surface)
            for key in [k for k in self._in_context if k[1:] == (reading, surface)]:
                self._forgotten_in_context[key] = self._in_context.pop(key).last
                _unindex(self._by_context, key[:2], surface)
            self.version += 1
        self._changed()
        return True

    def clear(self) -> None:
        with self._lock:
            self._cleared_through = self._tick
            self._uses.clear()
            self._by_reading.clear()
            self._in_context.clear()
            self._by_context.clear()
            self._weakest.rebuild({})
            self._weakest_in_context.rebuild({})
            self.version += 1
        self._changed()

    def _evict(self, keep: tuple = (), keep_in_context: tuple = ()) -> None:
        """Bring both tables under their bounds, the weakest entry first, one at a time; `keep`
        (the choice just made) always stays, so the last choice wins the next time even in a full
        store."""
        while len(self._uses) > self.max_entries:
            key = self._weakest.pop(self._uses, keep)
            if key is None:
                break
            del self._uses[key]
            _unindex(self._by_reading, key[0], key[1])
        while len(self._in_context) > self.max_context_entries:
            key = self._weakest_in_context.pop(self._in_context, keep_in_context)
            if key is None:
                break
            evicted = self._in_context[key].last
            group = self._by_context[key[:2]]
            if all(self._in_context[(*key[:2], s)].last <= evicted for s in group):
                # its context's last choice: the older ones would answer in its place
                self._drop_context_group(key[0], key[1])
            else:
                del self._in_context[key]
                _unindex(self._by_context, key[:2], key[2])

    def _drop_context_group(self, key: str, reading: str) -> None:
        """Forget what was chosen for `reading` after context `key`."""
        for surface in self._by_context.pop((key, reading), ()):
            del self._in_context[(key, reading, surface)]

    # -- persistence ---------------------------------------------------------------------------
    def _changed(self) -> None:
        if self._saver is not None:
            self._saver.request()

    def save(self) -> bool:
        """Write the store atomically, now. False (and a warning) when the disk refuses; the
        previous file is then untouched and the in-memory store keeps everything (and stays
        dirty, so the next save tries again)."""
        if self._read_only:
            return False
        with self._save_lock:   # the snapshot is taken inside: the last write holds the latest
            try:
                with locked(self.path):   # another process's save waits: read, merge, write
                    if not self._merge_from_disk():
                        return False
                    with self._lock:
                        version = self.version
                        payload = payload_of(self._tick, self._uses, self._in_context)
                    data = encoded(payload)
                    write_atomic(self.path, data)
                    self._disk_stamp = file_stamp(self.path)
            except OSError as exc:
                log.warning("could not save the learning history (%s); the previous copy is kept",
                            exc.strerror or type(exc).__name__)
                return False
            self._saved_version = version
            self.saves += 1
        return True

    def _merge_from_disk(self) -> bool:
        """Take in what another process saved since this store last read or wrote the file (see
        learning_merge). False when the file is there but cannot be read nor moved aside: it
        must not be replaced."""
        stamp = file_stamp(self.path)
        if stamp is None or stamp == self._disk_stamp:
            return True   # nothing there, or what this store wrote itself
        try:
            raw = read_user_file(self.path, MAX_DATA_BYTES)
        except FileNotFoundError:
            return True
        except OSError as exc:
            return set_aside(self.path, exc.strerror or type(exc).__name__) is not None
        try:
            tick, uses, in_context, skipped = parse_payload(raw, _Use)
        except Exception as exc:   # damaged meanwhile: kept aside whole, this store's copy goes on
            return set_aside(self.path, why_unusable(exc)) is not None
        if skipped and keep_copy(self.path, raw, f"{skipped} bad entries") is None:
            return False
        with self._lock:
            taken = merge_into(self._uses, uses, self._forgotten, self._cleared_through)
            for reading, surface in taken:
                self._by_reading.setdefault(reading, set()).add(surface)
            taken_in_context = merge_into(self._in_context, in_context, self._forgotten_in_context,
                                          self._cleared_through)
            for key, reading, surface in taken_in_context:
                self._by_context.setdefault((key, reading), set()).add(surface)
            self._tick = max(self._tick, tick)
            if taken or taken_in_context:
                self._weakest.rebuild(self._uses)
                self._weakest_in_context.rebuild(self._in_context)
                self._evict()
                self.version += 1
        return True

    def _save_if_dirty(self) -> bool:
        return self.save() if self.dirty else True

    def flush(self) -> bool:
        """Write pending changes now (in this thread). True when everything is on disk."""
        if self._saver is not None:
            self._saver.flush()
        else:
            self._save_if_dirty()
        return not self.dirty

    def close(self) -> bool:
        """Stop the background saver and write pending changes. True when everything is on disk."""
        if self._saver is not None:
            self._saver.close()   # joins the thread, then saves in this one
        else:
            self._save_if_dirty()
        return not self.dirty

    def _load(self) -> None:
        """Read the file; whatever is wrong with it, the store starts (empty if need be) and the
        file is never overwritten unread: it is set aside (or, if even that fails, left alone and
        never saved over)."""
        clean_stale_temps(self.path)
        stamp = file_stamp(self.path)
        try:
            raw = read_user_file(self.path, MAX_DATA_BYTES)
        except FileNotFoundError:
            return
        except OSError as exc:
            if set_aside(self.path, exc.strerror or type(exc).__name__) is None:
                self._read_only = True
            return
        try:
            tick, uses, in_context, skipped = parse_payload(raw, _Use)
        except Exception as exc:   # any damage: syntax, NaN/1e400, nesting (RecursionError), memory
            if set_aside(self.path, why_unusable(exc)) is None:
                self._read_only = True
            return
        if skipped and keep_copy(self.path, raw, f"{skipped} bad entries") is None:
            self._read_only = True   # saving would drop entries that exist nowhere else
        self._disk_stamp = stamp
        self._tick = tick
        self._uses = uses
        for reading, surface in uses:
            self._by_reading.setdefault(reading, set()).add(surface)
        self._in_context = in_context
        for key, reading, surface in in_context:
            self._by_context.setdefault((key, reading), set()).add(surface)
        self._weakest.rebuild(self._uses)
        self._weakest_in_context.rebuild(self._in_context)
        self._evict()


def _echoes(key: str, surfaces) -> bool:
    """Whether a context key overlaps the end of one of the reading's own spellings: the same
    word typed again (鏡は after 鏡は). Such a context says nothing about which spelling is meant,
    and would let an old repeat outvote the last choice, so it is neither learned nor used."""
    return any(key.endswith(s) or s.endswith(key) for s in surfaces)


def _use_again(uses: dict, index: dict, key: tuple, group, surface: str, tick: int) -> None:
    """Count one more use of `key` at `tick`; a new key joins its group in `index`."""
    use = uses.get(key)
    if use is None:
        uses[key] = _Use(1, tick)
        index.setdefault(group, set()).add(surface)
    else:
        use.count += 1
        use.last = tick


def _unindex(index: dict, group, surface: str) -> None:
    surfaces = index.get(group)
    if surfaces is not None:
        surfaces.discard(surface)
        if not surfaces:
            del index[group]
