"""Every file the engine reads × every damage (issue 17): the engine starts, types, and loses
nothing — a damaged file is kept as it was (settings files) or set aside whole (data files),
the other files keep working, and learning never turns on against the user's config."""

from __future__ import annotations

import json
import logging
import os
import shutil
import signal
import sys
from pathlib import Path

import pytest

from damage_matrix import DAMAGES, USER_FILES, damage, good_home, paths, start_and_type
from damage_support import as_unprivileged, aside_copies, shared_tmp

HANG_GUARD_S = 120   # a FIFO or device read would block for ever: fail instead of hanging the suite


@pytest.fixture(autouse=True)
def hang_guard():
    def expired(*_):
        raise TimeoutError("the engine blocked on a damaged file")

    old = signal.signal(signal.SIGALRM, expired)
    signal.alarm(HANG_GUARD_S)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


@pytest.fixture
def environ(monkeypatch):
    for name in ("XDG_DATA_HOME", "XDG_CONFIG_HOME", "KARUKAN_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    yield


def _kept(path: Path, kind: str, data: bytes | None, size: int | None) -> bool:
    """Is what the damaged path held still somewhere: at the path, or in one set-aside copy?"""
    places = [path] + aside_copies(path)
    for place in places:
        if not os.path.lexists(place):
            continue
        if kind == "directory":
            if place.is_dir() and (place / "inside").read_bytes() == b"keep":
                return True
        elif kind in ("fifo", "device", "loop"):
            return True
        elif kind == "huge":
            if place.stat().st_size == size:
                return True
        elif place.is_file() and not place.is_symlink():
            os.chmod(place, 0o600)
            if place.read_bytes() == data:
                return True
    return False


def check(home: Path, target: str, kind: str, data: bytes | None, size: int | None, seen: dict) -> None:
    where = paths(home)
    path = where[target]
    assert seen["commit"] and seen["handled"] == 7, seen                   # it types
    assert _kept(path, kind, data, size), f"{target} damaged by {kind} was lost"
    if target in ("config", "keymap", "romaji_table"):
        assert os.path.lexists(path) and not aside_copies(path)           # settings files are never moved
        if kind != "truncated":   # a cut-short file can still be valid (fewer keys or rules)
            assert [p for p in seen["problems"] if path.name in p]       # and reported
    if target == "config" and kind != "truncated":
        assert not seen["learning_on"]                                    # it may have said "off"
    else:
        assert seen["learning_on"]
    if target != "learning":
        assert seen["learned"] == ["汽車"]                                 # the other files still count
    if target != "user_dictionary":
        assert seen["karukan"]
    assert seen["saved"]
    learning = where["learning"]
    if learning.is_file() and not learning.is_symlink():
        json.loads(learning.read_bytes())                                 # what was saved is whole
    assert not list(learning.parent.glob(".learning.json.tmp-*"))


@pytest.mark.parametrize("kind", [d for d in DAMAGES if d != "unreadable"])
@pytest.mark.parametrize("target", USER_FILES)
def test_damaged_user_file(tmp_path, environ, caplog, target, kind):
    good = good_home(tmp_path)
    path = paths(tmp_path)[target]
    data = damage(path, kind, good[target])
    size = path.stat().st_size if kind == "huge" else None
    with caplog.at_level(logging.WARNING):
        seen = start_and_type(tmp_path)
    check(tmp_path, target, kind, data, size, seen)
    if target in ("learning", "user_dictionary") and kind in ("garbage", "directory", "fifo", "device", "loop",
                                                              "huge"):
        said = [r for r in caplog.records if path.name in r.getMessage()]
        assert len(said) == 1, [r.getMessage() for r in caplog.records]   # one clear message
    assert "かんじ" not in caplog.text and "漢字" not in caplog.text     # nothing typed is logged


@pytest.mark.parametrize("target", USER_FILES)
def test_unreadable_user_file(target):
    # chmod 000 only stops an unprivileged reader: the engine runs in a child that drops to nobody.
    with shared_tmp() as tmp:
        warm, home = tmp / "warm", tmp / "home"
        good_home(warm)
        good = good_home(home)
        path = paths(home)[target]
        data = damage(path, "unreadable", good[target])
        for directory in {p.parent for p in paths(home).values()} | {home, home / "data", home / "config"}:
            os.chmod(directory, 0o777)
        for p in paths(home).values():
            if p != path:
                os.chmod(p, 0o666)
        result = as_unprivileged("""
            import json, sys
            from pathlib import Path
            sys.path.insert(0, sys.argv[3])
            from damage_matrix import start_and_type
            start_and_type(Path(sys.argv[1]))      # imports everything while it still can
            drop_privileges()
            print(json.dumps(start_and_type(Path(sys.argv[2]))))
        """, str(warm), str(home), str(Path(__file__).parent / "support"))
        assert result.returncode == 0, result.stderr
        seen = json.loads(result.stdout.splitlines()[-1])
        check(home, target, "unreadable", data, None, seen)


SYSTEM_FILES = ("readings.marisa", "surfaces.marisa", "system.npz", "symbols.tsv", "meta.json")


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    from tools import build_dictionary
    from tools import dictionary_synthetic

    root = tmp_path_factory.mktemp("dict")
    source = dictionary_synthetic.write_source(root / "mozc")
    build_dictionary.compile_dictionary(source, root / "out", {"path": "synthetic"})
    return root / "out"


@pytest.mark.parametrize("kind", [d for d in DAMAGES if d != "unreadable"])
@pytest.mark.parametrize("name", SYSTEM_FILES)
def test_damaged_system_dictionary_file(built, tmp_path, name, kind):
    from karukan_engine.conversion.plain import PlainConverter
    from karukan_engine.dictionary.format import DictionaryFormatError
    from karukan_engine.dictionary.system import SystemDictionary
    from karukan_engine.session.keys_cli import parse_keys
    from karukan_engine.session.session import Session

    directory = tmp_path / "dictionary"
    shutil.copytree(built, directory)
    path = directory / name
    good = path.read_bytes()
    if kind == "nested":
        path.unlink()
        path.write_bytes(b"[" * 100000 + b"]" * 100000)
    elif kind == "nan":
        path.unlink()
        meta = json.loads((built / "meta.json").read_text(encoding="utf-8"))
        meta["entries"] = float("inf")
        path.write_text(json.dumps(meta), encoding="utf-8") if name == "meta.json" else path.write_bytes(b"NaN")
    elif kind == "huge":
        path.unlink()
        with open(path, "wb") as stream:
            stream.write(good)
            stream.truncate((1 << 30) + 1)
    else:
        _damage_binary(path, kind, good)
    try:
        SystemDictionary(directory)
    except (FileNotFoundError, DictionaryFormatError):
        pass   # exactly what the converter factory catches: the engine then types kana
    else:
        pytest.fail("a damaged dictionary was accepted")
    session = Session(PlainConverter())
    views = [session.process_key(keysym, mods) for _, keysym, mods in parse_keys("kana<return>")]
    assert "".join(v.commit for v in views) == "かな"


def _damage_binary(path: Path, kind: str, good: bytes) -> None:
    import random

    path.unlink()
    if kind == "garbage":
        path.write_bytes(bytes(random.Random(5).randrange(256) for _ in range(4096)))
    elif kind == "truncated":
        path.write_bytes(good[: len(good) // 2])
    elif kind == "directory":
        path.mkdir()
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "device":
        path.symlink_to("/dev/zero")
    elif kind == "loop":
        path.symlink_to(path.name)


def test_serve_types_with_every_user_file_damaged_at_once(tmp_path):
    # `serve` is what the desktop starts: with every user file damaged it must answer keys, and
    # the one bad config value beside `[learning] enabled = false` must not turn learning on.
    import asyncio
    import subprocess

    from ime_frontend.client import EngineClient
    from karukan_testing.headless import HeadlessDesktop

    good = good_home(tmp_path)
    where = paths(tmp_path)
    where["config"].write_bytes(good["config"] + b"page_size = 10\n[learning]\nenabled = false\n")
    damage(where["learning"], "nested", good["learning"])
    damage(where["user_dictionary"], "directory", good["user_dictionary"])
    damage(where["keymap"], "fifo", good["keymap"])
    damage(where["romaji_table"], "device", good["romaji_table"])
    env = {**os.environ, "XDG_DATA_HOME": str(tmp_path / "data"), "XDG_CONFIG_HOME": str(tmp_path / "config"),
           "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    env.pop("KARUKAN_CONFIG", None)
    with HeadlessDesktop() as desktop:
        address = desktop.start_session_bus()
        engine = subprocess.Popen([sys.executable, "-m", "karukan_engine.cli", "serve", "--no-model",
                                   "--address", address], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  env=env, text=True)
        try:
            assert engine.stdout.readline().strip() == "READY"

            async def type_and_commit() -> str:
                client = await EngineClient.connect(address)
                ctx = await client.create_context("matrix")
                commit = ""
                for keysym in [ord(c) for c in "kanji"] + [0xFF0D]:
                    commit += (await ctx.process_key(keysym, 0, False)).commit
                client.disconnect()
                return commit

            assert asyncio.run(asyncio.wait_for(type_and_commit(), 60))
        finally:
            engine.terminate()
            _, err = engine.communicate(timeout=60)
    assert engine.returncode == 0, err
    assert "page_size" in err and "keymap" in err and "romaji" in err
    assert "かんじ" not in err and "漢字" not in err
    learning = where["learning"]
    assert not learning.exists() or "かんじ" not in learning.read_text(encoding="utf-8")   # learning stayed off
    assert aside_copies(learning) and aside_copies(where["user_dictionary"])


def test_a_bad_keymap_is_reported_once_per_process_and_to_every_session(tmp_path, caplog):
    # "one clear message": every context of the service loads the same keymap
    from karukan_engine.config import Config, InputSettings, SessionSettings
    from karukan_engine.conversion.plain import PlainConverter
    from karukan_engine.session.session import Session

    keymap = tmp_path / "keys.toml"
    keymap.mkdir()
    config = Config(input=InputSettings(romaji_table=str(tmp_path / "none.tsv")),
                    session=SessionSettings(keymap=str(keymap)))
    with caplog.at_level(logging.WARNING):
        sessions = [Session(PlainConverter(), config) for _ in range(3)]
    assert all(len(s.load_errors) == 2 for s in sessions)
    assert len([r for r in caplog.records if "keys.toml" in r.getMessage()]) == 1
    assert len([r for r in caplog.records if "none.tsv" in r.getMessage()]) == 1


@pytest.mark.parametrize("name", SYSTEM_FILES)
def test_unreadable_system_dictionary_file(built, name):
    with shared_tmp() as tmp:
        directory = tmp / "dictionary"
        shutil.copytree(built, directory)
        os.chmod(directory, 0o755)
        for path in directory.iterdir():
            os.chmod(path, 0 if path.name == name else 0o644)
        result = as_unprivileged("""
            import sys
            from pathlib import Path
            from karukan_engine.dictionary.format import DictionaryFormatError
            from karukan_engine.dictionary.system import SystemDictionary
            drop_privileges()
            try:
                SystemDictionary(Path(sys.argv[1]))
            except (FileNotFoundError, DictionaryFormatError) as exc:
                print(type(exc).__name__)
        """, str(directory))
        assert result.returncode == 0, result.stderr
        assert result.stdout.strip() in ("DictionaryFormatError", "FileNotFoundError")
