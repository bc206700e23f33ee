"""A private, headless desktop for end-to-end tests and benchmarks.

Everything lives in one temporary directory: its own HOME and XDG dirs, its own session
dbus-daemon, and (on request) a real ibus-daemon, a real fcitx5 and the Karukan engine service.
Each daemon runs in its own process group, and close() ends exactly those groups, nothing else.
"""

from __future__ import annotations

import os
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import IO

START_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 5.0
PACKAGE_ROOT = Path(__file__).resolve().parent.parent


SESSION_BUS_CONFIG = """<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <keep_umask/>
  <listen>unix:path={socket}</listen>
  <auth>EXTERNAL</auth>
  <servicedir>{services}</servicedir>
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
{limits}
</busconfig>
"""

# Debian's session bus (/usr/share/dbus-1/session.conf) lifts dbus-daemon's built-in limits, which
# are far lower (a bare daemon refuses a client's 129th pending call, where the real session bus
# lets 50,000 wait): tests must see what a desktop sees, floods included.
DEBIAN_SESSION_LIMITS = {
    "max_incoming_bytes": 1000000000,
    "max_incoming_unix_fds": 250000000,
    "max_outgoing_bytes": 1000000000,
    "max_outgoing_unix_fds": 250000000,
    "max_message_size": 1000000000,
    "service_start_timeout": 120000,
    "auth_timeout": 240000,
    "pending_fd_timeout": 150000,
    "max_completed_connections": 100000,
    "max_incomplete_connections": 10000,
    "max_connections_per_user": 100000,
    "max_pending_service_starts": 10000,
    "max_names_per_connection": 50000,
    "max_match_rules_per_connection": 50000,
    "max_replies_per_connection": 50000,
}


def bus_limits_xml(limits: dict[str, int]) -> str:
    return "\n".join(f'  <limit name="{name}">{value}</limit>' for name, value in limits.items())


class HeadlessError(RuntimeError):
    """A daemon did not start."""


def fcitx5_system_addon_dir() -> Path | None:
    """Where this system's fcitx5 keeps its own addon libraries (next to libFcitx5Core)."""
    out = subprocess.run(["pkg-config", "--variable=libdir", "Fcitx5Core"], capture_output=True, text=True)
    if out.returncode == 0 and out.stdout.strip():
        return Path(out.stdout.strip()) / "fcitx5"
    return None


class HeadlessDesktop:
    def __init__(self, root: Path | None = None, bus_limits: dict[str, int] | None = None,
                 user: str | None = None) -> None:
        """user: run every daemon as this (unprivileged) user, who then owns the directory:
        some engines (mozc_server) refuse to run as root."""
        self.user = user
        self.root = Path(root or tempfile.mkdtemp(prefix="karukan-desktop-"))
        # The session bus's limits: Debian's by default; a test may set dbus-daemon's own.
        self.bus_limits = DEBIAN_SESSION_LIMITS if bus_limits is None else bus_limits
        self._owns_root = root is None
        self.home = self.root / "home"
        self.env = self._base_env()
        self._procs: list[tuple[str, subprocess.Popen]] = []
        self.logs = self.root / "logs"
        self.logs.mkdir(parents=True, exist_ok=True)
        if user is not None:
            for path in [self.root, *self.root.rglob("*")]:
                shutil.chown(path, user, user)
        self.session_address: str | None = None
        self.ibus_address: str | None = None

    def _base_env(self) -> dict[str, str]:
        for sub in (".config", ".cache", ".local/share", "run"):
            (self.home / sub).mkdir(parents=True, exist_ok=True)
        (self.home / "run").chmod(0o700)
        env = {k: v for k, v in os.environ.items()
               if k not in ("DISPLAY", "WAYLAND_DISPLAY", "IBUS_ADDRESS", "DBUS_SESSION_BUS_ADDRESS",
                            "XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_RUNTIME_DIR",
                            "FCITX_ADDON_DIRS", "XDG_DATA_DIRS", "IBUS_COMPONENT_PATH")}
        env.update(
            HOME=str(self.home),
            XDG_CONFIG_HOME=str(self.home / ".config"),
            XDG_CACHE_HOME=str(self.home / ".cache"),
            XDG_DATA_HOME=str(self.home / ".local/share"),
            XDG_RUNTIME_DIR=str(self.home / "run"),
            IBUS_ADDRESS_FILE=str(self.root / "ibus-address"),
            PYTHONPATH=os.pathsep.join(filter(None, [str(PACKAGE_ROOT), os.environ.get("PYTHONPATH")])),
            # Small thread pools: tests and benchmarks share a small machine.
            OMP_NUM_THREADS=os.environ.get("OMP_NUM_THREADS", "1"),
        )
        return env

    # --- process management -------------------------------------------------------------------

    def spawn(self, name: str, argv: list[str], env: dict[str, str] | None = None,
              stdout_pipe: bool = False, stdin_pipe: bool = False, pass_fds: tuple[int, ...] = ()) -> subprocess.Popen:
        log = open(self.logs / f"{name}.log", "ab")
        proc = subprocess.Popen(
            argv, env=env or self.env, stdin=subprocess.PIPE if stdin_pipe else subprocess.DEVNULL, pass_fds=pass_fds,
            stdout=subprocess.PIPE if stdout_pipe else log, stderr=log,
            start_new_session=True,  # its own process group: close() ends it and its children only
            user=self.user, group=self.user, extra_groups=[] if self.user else None,
        )
        log.close()
        self._procs.append((name, proc))
        return proc

    def stop(self, proc: subprocess.Popen, sig: int = signal.SIGTERM) -> None:
        """End one process we started, and its process group."""
        if proc.poll() is None:
            try:
                os.killpg(proc.pid, sig)
            except ProcessLookupError:
                pass
            try:
                proc.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(STOP_TIMEOUT_S)
        else:
            try:
                os.killpg(proc.pid, signal.SIGKILL)  # children left behind by an exited leader
            except (ProcessLookupError, PermissionError):
                pass
        for stream in (proc.stdin, proc.stdout):
            if stream is not None:
                stream.close()
        self._procs = [(n, p) for n, p in self._procs if p is not proc]

    def close(self) -> None:
        for _name, proc in reversed(list(self._procs)):
            self.stop(proc)
        if self._owns_root:
            shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> "HeadlessDesktop":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def log_tail(self, name: str, lines: int = 40) -> str:
        try:
            return "\n".join((self.logs / f"{name}.log").read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    # --- daemons ------------------------------------------------------------------------------

    def start_session_bus(self) -> str:
        # Our own config: the system's session service files would let a stray call D-Bus-activate
        # a second fcitx5 or ibus-portal; only services installed into this HOME are activatable.
        config = self.root / "session-bus.conf"
        config.write_text(SESSION_BUS_CONFIG.format(
            socket=self.root / "session_bus", services=self.home / ".local/share/dbus-1/services",
            limits=bus_limits_xml(self.bus_limits)))
        proc = self.spawn("dbus-daemon", [
            "dbus-daemon", f"--config-file={config}", "--nofork", "--nosyslog", "--print-address=1",
        ], stdout_pipe=True)
        line = read_line(proc.stdout, "dbus-daemon")
        self.session_address = line.strip()
        self.env["DBUS_SESSION_BUS_ADDRESS"] = self.session_address
        return self.session_address

    def start_xvfb(self) -> str:
        """A private X server (Xvfb on the first free display); sets DISPLAY for what starts next."""
        read_fd, write_fd = os.pipe()
        try:
            proc = self.spawn("xvfb", ["Xvfb", "-displayfd", str(write_fd), "-screen", "0", "1024x768x24",
                                       "-nolisten", "tcp", "-noreset"], pass_fds=(write_fd,))
        finally:
            os.close(write_fd)
        with os.fdopen(read_fd, "rb") as stream:
            try:
                number = read_line(stream, "Xvfb").strip()
            except HeadlessError as exc:
                raise HeadlessError(f"{exc}: {self.log_tail('xvfb')}") from None
        if proc.poll() is not None or not number.isdigit():
            raise HeadlessError(f"Xvfb did not start: {self.log_tail('xvfb')}")
        self.env["DISPLAY"] = f":{number}"
        return self.env["DISPLAY"]

    def start_ibus(self, component_dirs: list[Path] = (), cache: str = "none",
                   component_path: str | None = None) -> str:
        """ibus-daemon on a private socket. component_path: IBUS_COMPONENT_PATH exactly ("" leaves
        it unset, as in a session that never set it); by default component_dirs + the system's.
        cache: its registry cache mode (auto / refresh / none)."""
        address_file = Path(self.env["IBUS_ADDRESS_FILE"])
        for stale in (address_file, self.root / "ibus.sock"):   # from an earlier daemon
            stale.unlink(missing_ok=True)
        env = dict(self.env)
        env.pop("IBUS_ADDRESS", None)
        if component_path is None:
            dirs = [str(d) for d in component_dirs] + ["/usr/share/ibus/component"]
            env["IBUS_COMPONENT_PATH"] = ":".join(dirs)  # replaces the default list, so keep the system one
        elif component_path:
            env["IBUS_COMPONENT_PATH"] = component_path
        else:
            env.pop("IBUS_COMPONENT_PATH", None)
        proc = self.spawn("ibus-daemon", [
            "ibus-daemon", "--replace", "--single", "--panel=disable", "--emoji-extension=disable",
            "--config=disable", f"--cache={cache}", f"--address=unix:path={self.root / 'ibus.sock'}",
        ], env=env)
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise HeadlessError(f"ibus-daemon exited: {self.log_tail('ibus-daemon')}")
            for line in _read_text(address_file).splitlines():
                if line.startswith("IBUS_ADDRESS=") and Path(self.root / "ibus.sock").exists():
                    self.ibus_address = line.split("=", 1)[1]
                    self.env["IBUS_ADDRESS"] = self.ibus_address
                    return self.ibus_address
            time.sleep(0.02)
        raise HeadlessError("ibus-daemon did not write its address")

    def start_fcitx5(self, input_methods: list[str], addons: list[str], addon_prefix: Path | None = None,
                     extra_env: dict[str, str] | None = None) -> subprocess.Popen:
        """fcitx5 with only the named addons, and a profile whose group holds input_methods."""
        profile = self.home / ".config/fcitx5/profile"
        profile.parent.mkdir(parents=True, exist_ok=True)
        items = "".join(f"[Groups/0/Items/{i}]\nName={im}\nLayout=\n\n" for i, im in enumerate(input_methods))
        profile.write_text(
            "[Groups/0]\nName=Default\nDefault Layout=us\nDefaultIM=" + input_methods[-1] + "\n\n" + items
            + "[GroupOrder]\n0=Default\n"
        )
        env = dict(self.env)
        if addon_prefix is not None:
            system_dir = fcitx5_system_addon_dir()
            env["FCITX_ADDON_DIRS"] = ":".join(filter(None, [str(addon_prefix / "lib/fcitx5"), str(system_dir or "")]))
            env["XDG_DATA_DIRS"] = ":".join([str(addon_prefix / "share"), "/usr/local/share", "/usr/share"])
        env.update(extra_env or {})
        proc = self.spawn("fcitx5", [
            "fcitx5", "--disable=all", "--enable=" + ",".join(addons), "--verbose=*=3",
        ], env=env)
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise HeadlessError(f"fcitx5 exited: {self.log_tail('fcitx5')}")
            check = subprocess.run(
                ["dbus-send", "--session", "--print-reply", "--dest=org.fcitx.Fcitx5", "/controller",
                 "org.fcitx.Fcitx.Controller1.CheckUpdate"], env=self.env, capture_output=True,
                user=self.user, group=self.user, extra_groups=[] if self.user else None,   # the bus's own user
            )
            if check.returncode == 0:
                return proc
            time.sleep(0.05)
        raise HeadlessError("fcitx5 did not answer on the session bus")

    def start_service(self, extra_args: list[str] = ()) -> subprocess.Popen:
        """The engine service on the private session bus (dictionary only unless asked)."""
        proc = self.spawn("engine-service", [sys.executable, "-m", "ime_frontend.service", *extra_args],
                          stdout_pipe=True)
        try:
            line = read_line(proc.stdout, "engine service")
        except HeadlessError as exc:
            raise HeadlessError(f"{exc}: {self.log_tail('engine-service')}") from None
        if line.strip() != "READY":
            raise HeadlessError(f"engine service said {line!r}")
        return proc


def read_line(stream: IO[bytes] | None, what: str) -> str:
    """One line from a child's stdout, or HeadlessError after START_TIMEOUT_S."""
    assert stream is not None
    sel = selectors.DefaultSelector()
    sel.register(stream, selectors.EVENT_READ)
    try:
        if not sel.select(START_TIMEOUT_S):
            raise HeadlessError(f"{what} did not start within {START_TIMEOUT_S:.0f} s")
        line = stream.readline().decode()
    finally:
        sel.close()
    if not line:
        raise HeadlessError(f"{what} exited at start")
    return line


def _read_text(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""
