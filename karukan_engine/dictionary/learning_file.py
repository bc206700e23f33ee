"""The learning history's file: its JSON layout, and which of a file's entries are kept.

    {"format": 1, "tick": T, "entries": [[reading, surface, count, last], ...],
     "contexts": [[context, reading, surface, count, last], ...]}

"contexts" is optional (files written before contexts existed have none). Every field is
checked before it is kept: a bad entry is skipped, a file that is not a history is refused.
"""

from __future__ import annotations

import json
from typing import Callable, Protocol, TypeVar

from karukan_engine.core.user_files import has_control_chars

FORMAT = 1   # "contexts" is an optional key: older versions ignore it, older files lack it


class Use(Protocol):
    count: int
    last: int


U = TypeVar("U", bound=Use)


def payload_of(tick: int, uses: dict[tuple[str, str], Use], in_context: dict[tuple[str, str, str], Use]) -> dict:
    """The file's content for this history (a snapshot: lists, not the tables themselves)."""
    return {
        "format": FORMAT,
        "tick": tick,
        "entries": [[r, s, u.count, u.last] for (r, s), u in uses.items()],
        "contexts": [[c, r, s, u.count, u.last] for (c, r, s), u in in_context.items()],
    }


def encoded(payload: dict) -> bytes:
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def why_unusable(exc: Exception) -> str:
    """Why parse_payload refused a file, for the log: our own messages and JSON's (positions
    only) quote nothing from the file; any other error is named by its type."""
    return str(exc) if isinstance(exc, (LearningFormatError, json.JSONDecodeError)) else type(exc).__name__


MAX_FIELD_CHARS = 1024   # above the session's longest composition (1000)


class LearningFormatError(ValueError):
    """The learning file parses but is not a learning history (the message quotes nothing)."""


def parse_payload(raw: bytes, use: Callable[[int, int], U]) -> tuple[int, dict[tuple[str, str], U],
                                                                    dict[tuple[str, str, str], U], int]:
    """(tick, uses, uses in context, entries skipped) of a learning file, each use made by
    use(count, last); ValueError etc. when
    the file as a whole is unusable. Entries that are not [reading, surface, count >= 1,
    last >= 0], and contexts that are not [context, reading, surface, count >= 1, last >= 0],
    are skipped. A file without "contexts" (an older one) has none."""
    payload = json.loads(raw.decode("utf-8"))   # NaN, Infinity, 1e400 come as floats: never counts
    if not isinstance(payload, dict) or payload.get("format") != FORMAT:
        raise LearningFormatError("not a format 1 learning history")
    tick, entries, contexts = payload.get("tick"), payload.get("entries"), payload.get("contexts", [])
    if type(tick) is not int or tick < 0 or not isinstance(entries, list) or not isinstance(contexts, list):
        raise LearningFormatError("its tick, entries or contexts are not usable")
    uses: dict[tuple[str, str], U] = {}
    in_context: dict[tuple[str, str, str], U] = {}
    skipped = 0
    for entry in entries:
        if not good_entry(entry):
            skipped += 1
            continue
        reading, surface, count, last = entry
        uses[(reading, surface)] = use(count, last)
        tick = max(tick, last)
    for entry in contexts:
        if not (isinstance(entry, list) and len(entry) == 5 and _good_context(entry[0])
                and (_good_counts(entry[3], entry[4]) if _known_pair(entry, uses) else good_entry(entry[1:]))):
            skipped += 1
            continue
        key, reading, surface, count, last = entry
        in_context[(key, reading, surface)] = use(count, last)
        tick = max(tick, last)
    return tick, uses, in_context, skipped


def _known_pair(entry: list, uses: dict) -> bool:
    """Whether a context entry's (reading, surface) is an entry already checked (most are: the
    strings need no second check, which halves the load time of a full file)."""
    pair = (entry[1], entry[2])
    try:
        return pair in uses
    except TypeError:   # an unhashable field (a list): not an entry that passed
        return False


def _good_counts(count: object, last: object) -> bool:
    return type(count) is int and type(last) is int and 0 < count < 2**53 and 0 <= last < 2**53


def _good_context(key: object) -> bool:
    return isinstance(key, str) and 0 < len(key) <= MAX_FIELD_CHARS and not has_control_chars(key)


def good_entry(entry: object) -> bool:
    """[reading, surface, count, last] with fields a load would keep."""
    if not isinstance(entry, list) or len(entry) != 4:
        return False
    reading, surface, count, last = entry
    return (isinstance(reading, str) and isinstance(surface, str)
            and 0 < len(reading) <= MAX_FIELD_CHARS and 0 < len(surface) <= MAX_FIELD_CHARS
            and not has_control_chars(reading) and not has_control_chars(surface) and _good_counts(count, last))
