"""The rewriters' compiled tables: one gzip'd JSON file, written by tools/build_rewriters.py from
Mozc's data (see data/rewriters/NOTICE.md), read once per process and looked up by reading.

    {"format": 1,
     "emoji":        {reading: [[emoji, name], ...]},     Mozc's emoji readings, best first
     "emoji_names":  {name: emoji},                       `:name` queries (shortcodes, CLDR names)
     "emoticons":    {reading: [emoticon, ...]},
     "symbols":      {reading: [[symbol, description], ...]},
     "single_kanji": {reading: "亜吾阿..."},              most usual first
     "kanji_notes":  {kanji: "髙の異体字"}}
"""

from __future__ import annotations

import gzip
import json
import logging
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

log = logging.getLogger(__name__)

FORMAT = 1
DEFAULT_PATH = Path(__file__).resolve().parent.parent / "data" / "rewriters" / "tables.json.gz"


@dataclass(frozen=True)
class Tables:
    emoji: Mapping[str, list] = field(default_factory=dict)
    emoji_names: Mapping[str, str] = field(default_factory=dict)
    emoticons: Mapping[str, list] = field(default_factory=dict)
    symbols: Mapping[str, list] = field(default_factory=dict)
    single_kanji: Mapping[str, str] = field(default_factory=dict)
    kanji_notes: Mapping[str, str] = field(default_factory=dict)

    def to_json(self) -> dict:
        return {"format": FORMAT, "emoji": self.emoji, "emoji_names": self.emoji_names,
                "emoticons": self.emoticons, "symbols": self.symbols,
                "single_kanji": self.single_kanji, "kanji_notes": self.kanji_notes}


def write(tables: Tables, path: Path = DEFAULT_PATH) -> None:
    """Compact, sorted keys and a fixed gzip time: the same tables give the same bytes."""
    text = json.dumps(tables.to_json(), ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(gzip.compress(text.encode("utf-8"), compresslevel=9, mtime=0))


def read(path: Path = DEFAULT_PATH) -> Tables:
    data = json.loads(gzip.decompress(path.read_bytes()).decode("utf-8"))
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ValueError(f"{path.name}: not format {FORMAT} rewriter tables")
    return Tables(**{name: data.get(name) or {} for name in Tables.__dataclass_fields__})


_shared: Tables | None = None
_preloading = False
_lock = threading.Lock()


def shared() -> Tables:
    """The bundled tables, read on first use; empty tables (rewriters offer nothing from data)
    when the file is missing or damaged, so typing never depends on it."""
    global _shared
    if _shared is None:
        with _lock:
            if _shared is None:
                try:
                    _shared = read()
                except (OSError, ValueError, TypeError, EOFError) as exc:
                    log.warning("rewriter tables unavailable (%s); data-driven rewriters are off",
                                type(exc).__name__)
                    _shared = Tables()
    return _shared


def preload() -> None:
    """Read the bundled tables on a thread, once (a few milliseconds), if not read yet."""
    global _preloading
    with _lock:
        if _shared is not None or _preloading:
            return
        _preloading = True
    threading.Thread(target=shared, name="rewriter-tables", daemon=True).start()
