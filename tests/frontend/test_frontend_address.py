"""Finding the IBus bus: our socket-path rule against libibus's own, and the address file."""

from __future__ import annotations

import os
import subprocess

import pytest

from ime_frontend.ibus import address

SYSTEM_PYTHON = "/usr/bin/python3"


def libibus_socket_path(env: dict[str, str]) -> str:
    script = "import gi; gi.require_version('IBus', '1.0'); from gi.repository import IBus; print(IBus.get_socket_path())"
    try:
        result = subprocess.run([SYSTEM_PYTHON, "-c", script], env=env, capture_output=True, text=True)
    except FileNotFoundError:
        pytest.skip("no system python")
    if result.returncode != 0:
        pytest.skip("python3-gi with the IBus typelib is not installed (dev.sh installs it)")
    return result.stdout.strip()


@pytest.mark.parametrize("display", [
    {},
    {"DISPLAY": ":0"},
    {"DISPLAY": ":1.0"},
    {"DISPLAY": "remotehost:12.3"},
    {"WAYLAND_DISPLAY": "wayland-0", "DISPLAY": ":5"},
    {"IBUS_ADDRESS_FILE": "/nonexistent/ibus-address"},
])
def test_socket_path_matches_libibus(tmp_path, monkeypatch, display):
    env = {"HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / "config"), "PATH": os.environ.get("PATH", "")}
    env.update(display)
    for key in ("DISPLAY", "WAYLAND_DISPLAY", "IBUS_ADDRESS_FILE", "XDG_CONFIG_HOME", "HOME"):
        monkeypatch.delenv(key, raising=False)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    assert str(address.socket_path_file()) == libibus_socket_path(env)


def test_address_comes_from_a_live_daemons_file(tmp_path, monkeypatch):
    file = tmp_path / "ibus-address"
    monkeypatch.delenv("IBUS_ADDRESS", raising=False)
    monkeypatch.setenv("IBUS_ADDRESS_FILE", str(file))
    assert address.ibus_address() is None                      # no file
    file.write_text(f"# comment\nIBUS_ADDRESS=unix:path=/x/sock,guid=1\nIBUS_DAEMON_PID={os.getpid()}\n")
    assert address.ibus_address() == "unix:path=/x/sock,guid=1"
    dead = subprocess.Popen(["true"])
    dead.wait()
    file.write_text(f"IBUS_ADDRESS=unix:path=/x/sock\nIBUS_DAEMON_PID={dead.pid}\n")
    assert address.ibus_address() is None                      # the daemon that wrote it is gone
    monkeypatch.setenv("IBUS_ADDRESS", "unix:path=/y")
    assert address.ibus_address() == "unix:path=/y"             # the environment wins
