"""The damaged-file matrix (issue 17): every file the engine reads, every way it can be damaged.

scenario() builds a home with good files, damages one, starts the engine as `keys` and `serve`
do (Config.load, the dictionary converter with the user dictionary and learning history, a
Session), types, closes (which saves the learning history), and reports what it saw. It runs in
process, or in a child that has dropped to an unprivileged user (for chmod 000).
"""

from __future__ import annotations

import json
import os
import random
from pathlib import Path

from karukan_engine.core.user_files import MAX_DATA_BYTES, MAX_SETTINGS_BYTES

USER_FILES = ("learning", "user_dictionary", "config", "keymap", "romaji_table")
DAMAGES = ("garbage", "truncated", "huge", "nested", "nan", "unreadable", "directory", "fifo", "device", "loop")

GOOD_LEARNING = {"format": 1, "tick": 7, "entries": [["きしゃ", "汽車", 5, 7]]}
GOOD_USER_DICT = "かるかん\t軽羹\t名詞\t和菓子\n"
GOOD_KEYMAP = '[composition]\n"C-j" = "commit"\n'
ROMAJI = Path(__file__).resolve().parents[2] / "karukan_engine" / "data" / "romaji-hiragana.tsv"
TYPED = "kanji<space><return>"


def paths(home: Path) -> dict[str, Path]:
    data, config = home / "data" / "karukan", home / "config" / "karukan"
    return {"learning": data / "learning.json", "user_dictionary": data / "user_dictionary.tsv",
            "config": config / "config.toml", "keymap": config / "keymap.toml",
            "romaji_table": config / "romaji.tsv"}


def good_home(home: Path) -> dict[str, bytes]:
    where = paths(home)
    for path in where.values():
        path.parent.mkdir(parents=True, exist_ok=True)
    contents = {
        "learning": json.dumps(GOOD_LEARNING, ensure_ascii=False).encode(),
        "user_dictionary": GOOD_USER_DICT.encode(),
        "config": b'[input]\nromaji_table = "romaji.tsv"\n[session]\nkeymap = "keymap.toml"\n'
                  b"live_conversion = false\n",
        "keymap": GOOD_KEYMAP.encode(),
        "romaji_table": ROMAJI.read_bytes(),
    }
    for name, data in contents.items():
        where[name].write_bytes(data)
    return contents


def damage(path: Path, kind: str, good: bytes) -> bytes | None:
    """Damage path; the bytes now at path (None when it is not a regular file)."""
    fmt = {".json": "json", ".toml": "toml", ".tsv": "tsv"}[path.suffix]
    path.unlink()
    if kind == "directory":
        path.mkdir()
        (path / "inside").write_bytes(b"keep")
        return None
    if kind == "fifo":
        os.mkfifo(path)
        return None
    if kind == "device":
        path.symlink_to("/dev/zero")
        return None
    if kind == "loop":
        path.symlink_to(path.name)
        return None
    if kind == "huge":
        with open(path, "wb") as stream:   # sparse: over the cap without using the disk
            stream.write(good)
            stream.truncate((MAX_DATA_BYTES if fmt in ("json", "tsv") else MAX_SETTINGS_BYTES) + 1)
        return None   # too big to compare byte by byte; compared by size
    data = {
        "garbage": bytes(random.Random(17).randrange(256) for _ in range(4096)),
        "truncated": good[: len(good) // 2],
        "unreadable": good,
        "nested": {"json": b"[" * 100000 + b"]" * 100000,
                   "toml": b"a = " + b"[" * 50000 + b"]" * 50000 + b"\n",
                   "tsv": ("か\t" + "蚊" * 300000 + "\t" * 50000 + "\n").encode() + good}[fmt],
        "nan": {"json": b'{"format": 1, "tick": 1e400, "entries": [["a", "b", NaN, Infinity]]}',
                "toml": b"[session]\npage_size = nan\ncontext_chars = inf\n[learning]\nenabled = false\n",
                "tsv": "か\t蚊\x00\t名詞\t\nえ\t絵\x1b[31m\t名詞\t\n".encode() + good}[fmt],
    }[kind]
    path.write_bytes(data)
    if kind == "unreadable":
        os.chmod(path, 0)
    return data


def start_and_type(home: Path) -> dict:
    """What `keys` does: load the config, build the dictionary converter, type, close."""
    os.environ["XDG_DATA_HOME"] = str(home / "data")
    os.environ["XDG_CONFIG_HOME"] = str(home / "config")
    os.environ.pop("KARUKAN_CONFIG", None)
    from karukan_engine.config import Config
    from karukan_engine.core.types import ConversionRequest
    from karukan_engine.lattice.converter import LatticeConverter
    from karukan_engine.session.keys_cli import parse_keys
    from karukan_engine.session.session import Session

    config = Config.load()
    converter = LatticeConverter.load_default()
    session = Session(converter, config)
    commit = ""
    handled = 0
    for _, keysym, mods in parse_keys(TYPED):
        view = session.process_key(keysym, mods)
        commit += view.commit
        handled += bool(view.handled)
    karukan = [c.surface for c in converter.candidates(ConversionRequest("かるかん", "", learn=False), 20)]
    learned = converter.learning.lookup("きしゃ")
    saved = converter.learning.close()
    return {"commit": commit, "handled": handled, "problems": list(config.problems) + session.load_errors,
            "learning_on": config.learning.enabled, "karukan": "軽羹" in karukan, "learned": learned,
            "saved": saved}
