"""Find the IBus bus address the way libibus does (ibus_get_address / ibus_get_socket_path)."""

from __future__ import annotations

import os
import socket
from pathlib import Path


def socket_path_file() -> Path:
    """The address file ibus-daemon writes: $IBUS_ADDRESS_FILE, else the per-display file."""
    override = os.environ.get("IBUS_ADDRESS_FILE")
    if override:
        return Path(override)
    display = os.environ.get("WAYLAND_DISPLAY")
    if display:
        host, number = "unix", display
    else:
        display = os.environ.get("DISPLAY") or ":0.0"
        host, _, rest = display.partition(":")
        number = rest.split(".")[0] or "0"
        host = host or "unix"
    config = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")
    return config / "ibus" / "bus" / f"{_machine_id()}-{host}-{number}"


def _machine_id() -> str:
    for path in ("/var/lib/dbus/machine-id", "/etc/machine-id"):
        try:
            return Path(path).read_text().strip()
        except OSError:
            continue
    return socket.gethostname()


def read_address_file(path: Path) -> tuple[str | None, int | None]:
    """(IBUS_ADDRESS, IBUS_DAEMON_PID) from an address file, None where missing."""
    address = pid = None
    try:
        for line in path.read_text().splitlines():
            key, _, value = line.partition("=")
            if key == "IBUS_ADDRESS":
                address = value.strip() or None
            elif key == "IBUS_DAEMON_PID":
                pid = int(value) if value.strip().isdigit() else None
    except OSError:
        pass
    return address, pid


def ibus_address() -> str | None:
    """$IBUS_ADDRESS, else the address from the file of a daemon that is still alive."""
    env = os.environ.get("IBUS_ADDRESS")
    if env:
        return env
    address, pid = read_address_file(socket_path_file())
    if address is None or pid is None or not pid_alive(pid):
        return None
    return address


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
