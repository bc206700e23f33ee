"""The user's keymap and romaji table, loaded for a session: a problem with either is kept as a
message (frontends may show it), logged once per process, and the default is used instead."""

from __future__ import annotations

import logging

from karukan_engine.romaji.table import RomajiTable, TableError
from karukan_engine.session.keymap import Keymap, KeymapError

log = logging.getLogger(__name__)
_REPORTED: set[str] = set()   # problems already logged by this process


def load_keymap(path: str, errors: list[str]) -> Keymap:
    if path:
        try:
            return Keymap.load(path)
        except KeymapError as exc:
            _report(str(exc), errors)
    return Keymap.default()


def load_romaji_table(path: str, errors: list[str]) -> RomajiTable:
    if path:
        try:
            return RomajiTable.load(path)
        except TableError as exc:
            _report(str(exc), errors)
    return RomajiTable.default()


def _report(message: str, errors: list[str]) -> None:
    errors.append(message)
    if message not in _REPORTED:   # every context loads the same files: say it once
        _REPORTED.add(message)
        log.warning("%s; using the default", message)
