"""`karukan doctor`: what is installed, which input method framework runs, does the engine answer."""

from __future__ import annotations

import asyncio
import os
from dataclasses import replace
from pathlib import Path

from ime_frontend import wire
from ime_frontend.ibus.address import ibus_address, read_address_file, socket_path_file
from ime_frontend.install import (COMPONENT_FILE, SYSTEM_IBUS_COMPONENTS, Layout, ibus_restart_command,
                                  read_manifest, system_layout, user_layout)
from ime_frontend.doctor_check import DOCTOR_TIMEOUT_S, CallFailed, Check, call
from ime_frontend.doctor_fcitx5 import fcitx5_usable_checks
from ime_frontend.doctor_ibus import ibus_usable_checks

__all__ = ["Check", "run_doctor", "missing_ibus_step"]


def installed_checks(layouts: list[Layout]) -> list[Check]:
    checks = []
    for layout in layouts:
        files = [Path(p) for p in read_manifest(layout)]
        present = [p for p in files if layout.staged(p).exists()]
        if not files:
            checks.append(Check(f"install ({layout.scope})", False, "not installed"))
            continue
        kinds = [k for k, pred in (
            ("ibus component", lambda p: p.suffix == ".xml" and "ibus" in p.parts),
            ("fcitx5 addon", lambda p: "fcitx5" in p.parts),
            ("D-Bus activation", lambda p: "dbus-1" in p.parts),
            ("systemd unit", lambda p: "systemd" in p.parts),
        ) if any(pred(p) for p in present)]
        missing = len(files) - len(present)
        detail = ", ".join(kinds) + (f"; {missing} file(s) missing" if missing else "")
        checks.append(Check(f"install ({layout.scope})", missing == 0, detail))
    return checks


async def bus_checks() -> tuple[list[Check], bool]:
    """The frameworks' checks, and whether Karukan can be typed with: a framework runs and
    every check of each running one passed (it is the active engine, a key comes back converted)."""
    from ime_frontend.bus import MessageBus

    checks: list[Check] = []
    framework: list[Check] = []   # what decides whether Karukan is usable
    address = ibus_address()
    ibus_runs = False
    if address is None:
        checks.append(Check("ibus-daemon", False, "not running"))
    elif await served_by_fcitx5(address):
        # fcitx5's ibusfrontend owns org.freedesktop.IBus and writes IBus's address file: IBus
        # applications type through fcitx5, which has no IBus engines to list.
        checks.append(Check("ibus-daemon", False, "not running; fcitx5's IBus frontend answers IBus applications "
                                                  "(Karukan reaches them through the fcitx5 addon)"))
    else:
        ibus_runs = True
        checks.append(Check("ibus-daemon", True, "running"))
        listed = await ibus_engine_check(address)
        framework.append(listed)
        if listed.ok:
            framework += await ibus_usable_checks(address)
    checks += framework
    if not os.environ.get("DBUS_SESSION_BUS_ADDRESS") and not Path(
            os.environ.get("XDG_RUNTIME_DIR", "/nonexistent"), "bus").exists():
        checks.append(Check("session bus", False, "no session bus (DBUS_SESSION_BUS_ADDRESS unset)"))
        return checks, ibus_runs and all(c.ok for c in framework)
    try:
        bus = await asyncio.wait_for(MessageBus().connect(), DOCTOR_TIMEOUT_S)
    except (OSError, asyncio.TimeoutError, ValueError) as exc:
        checks.append(Check("session bus", False, f"cannot connect ({type(exc).__name__})"))
        return checks, ibus_runs and all(c.ok for c in framework)
    try:
        fcitx = await _bus_daemon(bus, "NameHasOwner", "s", ["org.fcitx.Fcitx5"])
        checks.append(Check("fcitx5", fcitx, "running" if fcitx else "not running"))
        if fcitx:
            found = await fcitx5_usable_checks(bus)
            framework += found
            checks += found
        if fcitx or not ibus_runs:
            # The engine service serves the fcitx5 addon; IBus runs Karukan's engine in its own process.
            checks.append(await engine_service_check(bus))
    except asyncio.TimeoutError:
        checks.append(Check("session bus", False, f"no answer within {DOCTOR_TIMEOUT_S:.0f} s"))
        return checks, False
    finally:
        bus.disconnect()
    if not ibus_runs and not fcitx:
        checks.append(Check("input method framework", False, "neither ibus-daemon nor fcitx5 runs",
                            "start one: ibus-daemon -drx (then ibus engine karukan), or fcitx5 -d"))
        return checks, False
    return checks, all(c.ok for c in framework)


async def _bus_daemon(bus, member: str, sig: str = "", body: list | None = None):
    (value,) = await call(bus, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
                          member, sig, body)
    return value


async def engine_service_check(bus) -> Check:
    try:
        owned = await _bus_daemon(bus, "NameHasOwner", "s", [wire.BUS_NAME])
        if not owned:
            activatable = wire.BUS_NAME in await _bus_daemon(bus, "ListActivatableNames")
            return Check("engine service", activatable,
                         "not running; starts on first use (D-Bus activatable)" if activatable
                         else "not running and not D-Bus activatable", "" if activatable else "run: karukan install --user")
        (info,) = await call(bus, wire.BUS_NAME, wire.OBJECT_PATH, wire.INTERFACE, "GetInfo")
    except CallFailed as exc:
        return Check("engine service", False, f"error {exc}")
    except asyncio.TimeoutError:
        return Check("engine service", False, f"no answer within {DOCTOR_TIMEOUT_S:.0f} s",
                     "run: systemctl --user restart karukan-engine.service")
    return Check("engine service", True, f"answers: version {info.get('version')}, converter {info.get('converter')}, "
                                         f"{info.get('contexts')} context(s)")


async def served_by_fcitx5(address: str) -> bool:
    """Is the IBus address fcitx5's IBus frontend rather than an ibus-daemon?

    The frontend owns org.freedesktop.IBus on the session bus from the same connection that owns
    org.fcitx.Fcitx5; an ibus-daemon's private bus has no fcitx5 name at all.
    """
    from dbus_fast import Message, MessageType
    from dbus_fast.aio import MessageBus

    try:
        bus = await asyncio.wait_for(MessageBus(bus_address=address).connect(), DOCTOR_TIMEOUT_S)
    except (OSError, asyncio.TimeoutError, ValueError):
        return _daemon_is_fcitx5()
    owners = []
    try:
        for name in ("org.freedesktop.IBus", "org.fcitx.Fcitx5"):
            reply = await asyncio.wait_for(bus.call(Message(
                destination="org.freedesktop.DBus", path="/org/freedesktop/DBus", interface="org.freedesktop.DBus",
                member="GetNameOwner", signature="s", body=[name])), DOCTOR_TIMEOUT_S)
            owners.append(reply.body[0] if reply.message_type == MessageType.METHOD_RETURN else None)
    except asyncio.TimeoutError:
        return _daemon_is_fcitx5()
    finally:
        bus.disconnect()
    return owners[1] is not None and owners[0] == owners[1]


def _daemon_is_fcitx5() -> bool:
    """The address file names the process that wrote it; fcitx5's frontend writes its own pid."""
    _address, pid = read_address_file(socket_path_file())
    return pid is not None and _process_name(pid) == "fcitx5"


def _process_name(pid: int) -> str | None:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return None


def _process_env(pid: int, name: str) -> str | None:
    """One variable of a process's environment ("" when unset), None when it cannot be read."""
    try:
        entries = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    except OSError:
        return None
    prefix = name.encode() + b"="
    for entry in entries:
        if entry.startswith(prefix):
            return entry[len(prefix):].decode(errors="replace")
    return ""


def missing_ibus_step(daemon_pid: int | None, user: Layout | None = None) -> str:
    """Why a running ibus-daemon does not list our engine: the step the user still has to take."""
    user = user or user_layout()
    user_component = user.ibus_component_dir / COMPONENT_FILE
    if Path(SYSTEM_IBUS_COMPONENTS, COMPONENT_FILE).exists() and not user_component.exists():
        return "ibus-daemon has not read the system component yet: restart it (ibus restart)"
    if not user_component.exists():
        return "no IBus component installed: run `karukan install --user` (or --system)"
    restart = ibus_restart_command(user.ibus_component_dir)
    seen = _process_env(daemon_pid, "IBUS_COMPONENT_PATH") if daemon_pid is not None else None
    if seen is None:
        return (f"ibus-daemon has not read the per-user component: `ibus restart` (install refreshed IBus's "
                f"registry cache), or if that does not help: {restart}")
    if str(user.ibus_component_dir) not in seen.split(":"):
        where = f"IBUS_COMPONENT_PATH={seen}" if seen else "IBUS_COMPONENT_PATH unset"
        return (f"ibus-daemon was started without the per-user component directory ({where}) and has not "
                f"read the registry cache install refreshed: `ibus restart`, or if that does not help: {restart}")
    return f"ibus-daemon reads {user.ibus_component_dir} but its registry cache predates the install: restart it with: {restart}"


async def ibus_engine_check(address: str) -> Check:
    """Does the running ibus-daemon know our engine (i.e. did it read our component)?"""
    from dbus_fast import Message, MessageType
    from dbus_fast.aio import MessageBus

    from ime_frontend.ibus.component import ENGINE_NAME

    try:
        bus = await asyncio.wait_for(MessageBus(bus_address=address).connect(), DOCTOR_TIMEOUT_S)
    except (OSError, asyncio.TimeoutError, ValueError) as exc:
        return Check("ibus engine", False, f"cannot connect to ibus-daemon ({type(exc).__name__})")
    try:
        reply = await asyncio.wait_for(bus.call(Message(
            destination="org.freedesktop.IBus", path="/org/freedesktop/IBus",
            interface="org.freedesktop.DBus.Properties", member="Get", signature="ss",
            body=["org.freedesktop.IBus", "Engines"])), DOCTOR_TIMEOUT_S)
    except asyncio.TimeoutError:
        return Check("ibus engine", False, "ibus-daemon does not answer")
    finally:
        bus.disconnect()
    if reply.message_type == MessageType.ERROR:
        return Check("ibus engine", False, f"error {reply.error_name}")
    names = {desc.value[2] for desc in reply.body[0].value}
    if ENGINE_NAME in names:
        return Check("ibus engine", True, f"'{ENGINE_NAME}' is available in ibus-daemon")
    _address, pid = read_address_file(socket_path_file())
    return Check("ibus engine", False, f"ibus-daemon does not list '{ENGINE_NAME}'", missing_ibus_step(pid))


def dictionary_check(directory: Path | None = None) -> Check:
    """Whether the compiled system dictionary loads; without it the engine types kana only."""
    from karukan_engine.dictionary.format import DictionaryFormatError
    from karukan_engine.dictionary.system import DEFAULT_DIR, SystemDictionary

    try:
        dictionary = SystemDictionary(directory or DEFAULT_DIR)
    except (FileNotFoundError, DictionaryFormatError) as exc:
        return Check("system dictionary", False, f"{exc} (conversion falls back to kana)")
    return Check("system dictionary", True, f"{dictionary.meta['entries']:,} entries, checksums match")


def ngram_check(path: Path | None = None) -> Check:
    """Whether the bundled model's character n-gram loads; without it the ranking does without
    its score (the bundled model's fitted weights lean on it: docs/model-card.md)."""
    from karukan_engine.lm.char_ngram import BUNDLED, CharNgram, CharNgramError

    try:
        model = CharNgram.load(path or BUNDLED)
    except CharNgramError as exc:
        return Check("character n-gram", False, f"{exc} (the ranking goes on without it)")
    stored = sum(model.distinct()[k] for k in range(2, model.order + 1))
    return Check("character n-gram", True, f"order {model.order}, {model.smoothing}, {stored:,} n-grams")


def word_model_check(words: Path | None = None, topics: Path | None = None) -> Check:
    """Whether the word trigram and its topic vectors load; without them the lattice is judged
    by the dictionary and the character n-gram (the trigram) or without the text's topic (the
    vectors)."""
    from karukan_engine.lm.topic_vectors import BUNDLED as TOPICS
    from karukan_engine.lm.topic_vectors import TopicVectors, TopicVectorsError
    from karukan_engine.lm.word_ngram import BUNDLED as WORDS
    from karukan_engine.lm.word_ngram import WordNgram, WordNgramError

    try:
        model = WordNgram.load(words or WORDS)
    except WordNgramError as exc:
        return Check("word n-gram", False, f"{exc} (conversion goes on without it)")
    try:
        vectors = TopicVectors.load(topics or TOPICS, digest=model.vocabulary_digest)
    except TopicVectorsError as exc:
        return Check("word n-gram", False, f"{len(model):,} words; {exc} (paths are judged without topics)")
    return Check("word n-gram", True, f"{len(model):,} words, order {model.order}; topic vectors for "
                 f"{vectors.vectors.shape[0]:,} of them")


def run_doctor() -> tuple[list[Check], bool]:
    checks = installed_checks([user_layout(), system_layout()])
    checks.append(dictionary_check())
    checks.append(ngram_check())
    checks.append(word_model_check())
    found, usable = asyncio.run(bus_checks())
    checks += found
    installed = any(c.ok for c in checks if c.name.startswith("install"))
    if not installed:
        checks = [replace(c, fix="run: karukan install --user") if c.name == "install (user)" else c for c in checks]
    return checks, installed and usable
