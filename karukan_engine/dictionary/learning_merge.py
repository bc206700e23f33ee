"""Learning shared between processes: what a save takes from the file another process wrote.

The engine service, `karukan keys` and the IBus engine's in-process backend may each keep a
store on the same learning.json. A save therefore reads the file first (under an advisory lock,
core.user_files.locked) and merges it entry by entry: the more recent use of a pair wins (its
last-use tick, then its count), so no process drops what another learned. Ticks are a logical
clock: a store that merges moves its own past every tick it saw, so what it learns next is newer.
What this process forgot or cleared is not taken back from the file, unless the file holds a
use newer than the one forgotten.
"""

from __future__ import annotations

from typing import Hashable, Protocol, TypeVar


class Use(Protocol):
    count: int
    last: int


U = TypeVar("U", bound=Use)


def merge_into(mine: dict[Hashable, U], theirs: dict[Hashable, U], forgotten: dict[Hashable, int],
               cleared_through: int) -> list[Hashable]:
    """Take into `mine` each entry of `theirs` that is more recent than its own (or that it
    lacks), except those forgotten here (a use no newer than the one forgotten) or older than
    the last clear(). Returns the keys taken."""
    taken = []
    for key, use in theirs.items():
        if use.last <= cleared_through or use.last <= forgotten.get(key, -1):
            continue
        own = mine.get(key)
        if own is None or (use.last, use.count) > (own.last, own.count):
            mine[key] = use
            taken.append(key)
    return taken
