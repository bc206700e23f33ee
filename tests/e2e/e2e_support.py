"""Helpers for the end-to-end tests (the fixtures are in conftest.py)."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from karukan_testing.headless import HeadlessDesktop

TIMEOUT_S = 60
PACKAGE_ROOT = Path(__file__).resolve().parents[2]


def need(*programs: str) -> None:
    missing = [p for p in programs if shutil.which(p) is None]
    if missing:
        pytest.skip(f"not installed: {', '.join(missing)} (./dev.sh test installs them)")


def need_fcitx5_addon(*programs: str) -> None:
    """fcitx5, a session bus and everything `karukan install` needs to build the addon."""
    from ime_frontend.install import fcitx5_build_missing

    need("fcitx5", "dbus-daemon", "cmake", *programs)
    missing = fcitx5_build_missing()
    if missing:
        pytest.skip(f"cannot build the fcitx5 addon: {missing}")


def karukan(desktop: HeadlessDesktop, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    """Run the `karukan` command inside the private desktop."""
    main = "import sys; from karukan_engine.cli import main; sys.exit(main(sys.argv[1:]))"
    result = subprocess.run([sys.executable, "-c", main, *args], env=desktop.env, cwd=PACKAGE_ROOT,
                            capture_output=True, text=True, timeout=600)
    if check and result.returncode != 0:
        raise AssertionError(f"karukan {' '.join(args)} failed: {result.stderr}")
    return result


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, TIMEOUT_S))


async def eventually(predicate, timeout_s: float = 30.0, interval_s: float = 0.05):
    """Await predicate() until it is truthy (for state that changes asynchronously, e.g. spawns)."""
    deadline = asyncio.get_running_loop().time() + timeout_s
    while True:
        value = await predicate()
        if value:
            return value
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError("condition not reached in time")
        await asyncio.sleep(interval_s)


def engine_pids(desktop: HeadlessDesktop, module: str) -> list[int]:
    """Pids of our own engine processes (children of daemons this desktop started)."""
    ours = {p.pid for _n, p in desktop._procs}
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().split(b"\0")
            pgid = os.getpgid(int(entry.name))
        except (OSError, ProcessLookupError):
            continue
        if module.encode() in cmdline and pgid in ours:
            pids.append(int(entry.name))
    return pids


def live_conversion_off(desktop: HeadlessDesktop) -> None:
    """Write a user config without live conversion (on by default), which the engines read.

    These tests check kana, conversion and candidates, so the preedit must be the kana.
    """
    config = Path(desktop.env["XDG_CONFIG_HOME"]) / "karukan/config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text("[session]\nlive_conversion = false\n", encoding="utf-8")


def start_ibus_forwarding_to_a_gated_service(desktop: HeadlessDesktop) -> None:
    """A session bus and ibus-daemon with Karukan's forwarding engine, whose engine service (D-Bus
    activated) may start only once the test creates the gate file; the engine holds keys
    meanwhile, with no fallback in the test's time. The gate goes into the environment before
    the bus starts: activated services get the bus daemon's environment."""
    from ime_frontend.ibus.component import component_xml
    from ime_frontend.install import python_command

    desktop.env["KARUKAN_TEST_START_GATE"] = str(desktop.root / "engine-may-start")
    desktop.env["KARUKAN_IBUS_STARTUP_MS"] = "300000"   # this is about holding, not falling back
    desktop.start_session_bus()
    karukan(desktop, "install", "--user", "--no-fcitx5", "--no-ibus", "--no-model")  # D-Bus activation
    components = desktop.root / "components"
    components.mkdir()
    exec_line = " ".join(python_command("ime_frontend.ibus", "--ibus", "--no-model", "--backend", "service"))
    (components / "karukan.xml").write_text(component_xml(exec_line))
    desktop.start_ibus([components])


async def settled_candidates(app, round_trip) -> list[str]:
    """The suggestion list once the last key's own list has arrived: the key's reply shows the
    earlier list's entries that still fit, the new list follows; wait until two looks agree.
    round_trip: an awaitable call through the framework, so late signals are in before a look."""
    async def look() -> list[str]:
        await round_trip()
        return list(app.shown.candidates)

    async def settled() -> list[str] | None:
        first = await look()
        await asyncio.sleep(0.3)
        return first if first and first == await look() else None

    return await eventually(settled, timeout_s=20, interval_s=0.1)
