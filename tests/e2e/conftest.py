"""Shared set-up for the end-to-end tests: a private headless desktop per test module.

Every module gets its own HOME, its own session dbus-daemon and its own framework daemon; the
engine is installed into that HOME with `karukan install --user`, exactly as a user would.
Only processes started here are ever stopped (each in its own process group).
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ime_frontend.headless import HeadlessDesktop
from ime_frontend.install import fcitx5_build_missing

TIMEOUT_S = 60
PACKAGE_ROOT = Path(__file__).resolve().parents[2]


def pytest_collection_modifyitems(items):
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.e2e)


def need(*programs: str) -> None:
    missing = [p for p in programs if shutil.which(p) is None]
    if missing:
        pytest.skip(f"not installed: {', '.join(missing)} (./dev.sh test installs them)")


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


@pytest.fixture(scope="module")
def desktop():
    with HeadlessDesktop() as d:
        d.start_session_bus()
        yield d


@pytest.fixture(scope="module")
def ibus_desktop(desktop):
    need("ibus-daemon", "dbus-daemon")
    karukan(desktop, "install", "--user", "--no-fcitx5", "--no-model")
    component_dir = Path(desktop.env["XDG_DATA_HOME"]) / "ibus/component"
    desktop.start_ibus([component_dir])
    return desktop


@pytest.fixture(scope="module")
def fcitx5_desktop(desktop):
    need("fcitx5", "dbus-daemon", "cmake")
    missing = fcitx5_build_missing()
    if missing:
        pytest.skip(f"cannot build the fcitx5 addon: {missing}")
    # Builds the addon with CMake and installs it (and the D-Bus activation file) into this HOME.
    karukan(desktop, "install", "--user", "--no-ibus", "--no-model")
    desktop.start_fcitx5(["keyboard-us", "karukan"], ["dbus", "dbusfrontend", "keyboard", "karukan"],
                         extra_env={"KARUKAN_FCITX5_TIMEOUT_MS": "300"})
    return desktop


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
