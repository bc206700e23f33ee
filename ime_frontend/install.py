"""`karukan install` / `uninstall`: put the engine where IBus, fcitx5, D-Bus and systemd find it.

--user installs under the XDG dirs of the current user; --system under /usr (or a staging --root).
Every file written is listed in a manifest, so uninstall removes exactly what install put there.
The fcitx5 addon is built with CMake when the fcitx5 development files are present; without them
the rest is installed and the reason is printed.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ime_frontend import wire
from ime_frontend.ibus.component import component_xml

SYSTEMD_UNIT = "karukan-engine.service"
DBUS_SERVICE_FILE = f"{wire.BUS_NAME}.service"
COMPONENT_FILE = "karukan.xml"
IBUS_ENV_FILE = "60-karukan-ibus.conf"
FCITX5_SOURCE = Path(__file__).resolve().parent / "fcitx5"
PACKAGE_ROOT = Path(__file__).resolve().parent.parent
SYSTEM_IBUS_COMPONENTS = "/usr/share/ibus/component"
ICON_PATH = "icons/hicolor/scalable/apps/fcitx-karukan.svg"   # the fcitx5 addon installs the same file


@dataclass(frozen=True)
class Layout:
    """Where each piece goes for one scope."""

    scope: str                  # "user" or "system"
    root: Path                  # staging root for --system (DESTDIR); "/" when installing for real
    ibus_component_dir: Path
    dbus_services_dir: Path
    systemd_user_dir: Path
    fcitx5_prefix: Path         # CMAKE_INSTALL_PREFIX
    fcitx5_data_dir: Path       # CMAKE_INSTALL_DATADIR (absolute)
    fcitx5_addon_dir: Path      # where libkarukan.so goes
    manifest: Path
    environment_dir: Path | None  # systemd environment.d (user scope: IBUS_COMPONENT_PATH)
    cache_home: Path | None = None  # XDG cache dir (user scope: IBus's registry cache lives there)

    def staged(self, path: Path) -> Path:
        """The real file for an installed path (under --root when staging)."""
        return self.root / path.relative_to("/") if self.root != Path("/") else path


def user_layout(env: dict[str, str] | None = None) -> Layout:
    env = dict(os.environ if env is None else env)
    home = Path(env.get("HOME") or Path.home())
    data = Path(env.get("XDG_DATA_HOME") or home / ".local/share")
    config = Path(env.get("XDG_CONFIG_HOME") or home / ".config")
    return Layout(
        scope="user", root=Path("/"),
        ibus_component_dir=data / "ibus/component",
        dbus_services_dir=data / "dbus-1/services",
        systemd_user_dir=config / "systemd/user",
        fcitx5_prefix=home / ".local",
        fcitx5_data_dir=data,
        fcitx5_addon_dir=home / ".local/lib/fcitx5",
        manifest=data / "karukan/installed-files",
        environment_dir=config / "environment.d",
        cache_home=Path(env.get("XDG_CACHE_HOME") or home / ".cache"),
    )


def system_layout(root: Path = Path("/")) -> Layout:
    libdir = _system_libdir()
    return Layout(
        scope="system", root=root,
        ibus_component_dir=Path(SYSTEM_IBUS_COMPONENTS),
        dbus_services_dir=Path("/usr/share/dbus-1/services"),
        systemd_user_dir=Path("/usr/lib/systemd/user"),
        fcitx5_prefix=Path("/usr"),
        fcitx5_data_dir=Path("/usr/share"),
        fcitx5_addon_dir=libdir / "fcitx5",
        manifest=Path("/usr/share/karukan/installed-files"),
        environment_dir=None,
    )


def _system_libdir() -> Path:
    out = subprocess.run(["pkg-config", "--variable=libdir", "Fcitx5Core"], capture_output=True, text=True) \
        if shutil.which("pkg-config") else None
    if out is not None and out.returncode == 0 and out.stdout.strip():
        return Path(out.stdout.strip())
    return Path("/usr/lib")


# --- commands the installed files run --------------------------------------------------------

def python_command(module: str, *args: str) -> list[str]:
    """argv that runs `python -m module args` with this interpreter, finding this package."""
    argv = [sys.executable, "-m", module, *args]
    if _importable_without_path():
        return argv
    env = shutil.which("env") or "/usr/bin/env"
    return [env, f"PYTHONPATH={PACKAGE_ROOT}", *argv]


def _importable_without_path() -> bool:
    probe = "import ime_frontend, os; print(os.path.dirname(os.path.dirname(os.path.abspath(ime_frontend.__file__))))"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd="/", env=env)
    return out.returncode == 0 and Path(out.stdout.strip()) == PACKAGE_ROOT


def dbus_service_text(command: list[str]) -> str:
    return (f"[D-BUS Service]\nName={wire.BUS_NAME}\nExec={' '.join(command)}\n"
            f"SystemdService={SYSTEMD_UNIT}\n")


def systemd_unit_text(command: list[str]) -> str:
    return (
        "[Unit]\nDescription=Karukan Japanese input method engine\nPartOf=graphical-session.target\n\n"
        f"[Service]\nType=dbus\nBusName={wire.BUS_NAME}\nExecStart={' '.join(command)}\n"
        "Restart=on-failure\n# SIGTERM: the engine saves learning data before it exits.\nTimeoutStopSec=10\n\n"
        "[Install]\nWantedBy=graphical-session.target\n"
    )


def ibus_component_path(component_dir: Path) -> str:
    # IBus reads components from IBUS_COMPONENT_PATH only (which replaces its system directory),
    # so a per-user component needs both directories listed for ibus-daemon.
    return f"{component_dir}:{SYSTEM_IBUS_COMPONENTS}"


def ibus_environment_text(component_dir: Path) -> str:
    return f"IBUS_COMPONENT_PATH={ibus_component_path(component_dir)}\n"


def refresh_ibus_cache(layout: Layout) -> str | None:
    """Rewrite the user's IBus registry cache from the per-user and system component directories.

    ibus-daemon (--cache=auto, the default) trusts a cache whose watched directories did not
    change, and a cache written before the install watches only the system directory: without
    this, neither `ibus restart` nor a new login with IBUS_COMPONENT_PATH set finds the engine.
    A daemon that loads the refreshed cache finds it whatever its own environment. Returns why
    the cache was not written, or None.
    """
    return _write_ibus_cache(layout, ibus_component_path(layout.ibus_component_dir))


def _write_ibus_cache(layout: Layout, component_path: str | None) -> str | None:
    if shutil.which("ibus") is None:
        return "the ibus command is not installed"
    env = dict(os.environ)
    env.pop("IBUS_COMPONENT_PATH", None)
    if component_path:
        env["IBUS_COMPONENT_PATH"] = component_path
    if layout.cache_home is not None:
        env["XDG_CACHE_HOME"] = str(layout.cache_home)
    try:
        out = subprocess.run(["ibus", "write-cache"], env=env, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"ibus write-cache: {type(exc).__name__}"
    if out.returncode != 0:
        return f"ibus write-cache failed: {(out.stderr or out.stdout).strip()[:200]}"
    return None


def ibus_restart_command(component_dir: Path) -> str:
    """The command that makes a running session's IBus read a per-user component now.

    `ibus restart` re-executes ibus-daemon with the environment it already had, so it never sees
    IBUS_COMPONENT_PATH; a daemon started with the variable set replaces the running one (-r). It
    must also rebuild its registry cache: a cache written before the install lists only the
    directories watched then, so a daemon that trusts it (--cache=auto) still cannot find the
    engine. The refreshed cache also lets a later `ibus restart` find it.
    """
    return f"IBUS_COMPONENT_PATH={shlex.quote(ibus_component_path(component_dir))} ibus-daemon -drx --cache=refresh"


# --- install / uninstall ---------------------------------------------------------------------

@dataclass
class Report:
    installed: list[Path]
    notes: list[str]


def install(layout: Layout, ibus: bool = True, fcitx5: bool = True, model: bool = True) -> Report:
    report = Report([], [])
    service_args = () if model else ("--no-model",)
    service_cmd = python_command("ime_frontend.service", *service_args)
    _write(layout, layout.dbus_services_dir / DBUS_SERVICE_FILE, dbus_service_text(service_cmd), report)
    _write(layout, layout.systemd_user_dir / SYSTEMD_UNIT, systemd_unit_text(service_cmd), report)
    enable = "systemctl --user enable" if layout.scope == "user" else "systemctl --global enable"
    report.notes.append(f"engine service: starts on first use (D-Bus activation; the fcitx5 addon asks for it "
                        f"when fcitx5 loads); to start it with every graphical login: {enable} {SYSTEMD_UNIT}")
    if ibus:
        icon = layout.fcitx5_data_dir / ICON_PATH
        _write(layout, icon, (FCITX5_SOURCE / "karukan.svg").read_text(), report)
        engine_cmd = python_command("ime_frontend.ibus", "--ibus", *service_args)
        _write(layout, layout.ibus_component_dir / COMPONENT_FILE, component_xml(" ".join(engine_cmd), str(icon)), report)
        if layout.environment_dir is not None:
            _write(layout, layout.environment_dir / IBUS_ENV_FILE, ibus_environment_text(layout.ibus_component_dir), report)
            refreshed = refresh_ibus_cache(layout)
            if refreshed is None:
                report.notes.append("IBus: registry cache refreshed with the per-user component: `ibus restart` "
                                    "now finds Karukan")
            else:
                report.notes.append(f"IBus: registry cache not refreshed ({refreshed})")
            report.notes.append("IBus: if `ibus restart` still cannot find Karukan, restart ibus-daemon with the "
                                f"per-user component directory and a rebuilt cache: "
                                f"{ibus_restart_command(layout.ibus_component_dir)}")
            report.notes.append(f"IBus: later logins read {layout.environment_dir / IBUS_ENV_FILE} (systemd "
                                "sessions); an X session started without systemd needs `export "
                                f"IBUS_COMPONENT_PATH={ibus_component_path(layout.ibus_component_dir)}` "
                                "in ~/.xsessionrc")
    if fcitx5:
        _install_fcitx5(layout, report)
    report.installed = list(dict.fromkeys(report.installed))   # the icon comes from IBus and fcitx5 alike
    manifest = layout.staged(layout.manifest)
    manifest.parent.mkdir(parents=True, exist_ok=True)
    previous = set(read_manifest(layout))
    manifest.write_text("".join(f"{p}\n" for p in sorted(previous | {str(p) for p in report.installed})))
    return report


def uninstall(layout: Layout) -> list[Path]:
    removed = []
    for name in read_manifest(layout):
        path = layout.staged(Path(name))
        if path.is_file() or path.is_symlink():
            path.unlink()
            removed.append(Path(name))
    if layout.scope == "user" and layout.ibus_component_dir / COMPONENT_FILE in removed:
        # The registry cache install refreshed names our component: rewrite it without our directory.
        rest = [d for d in os.environ.get("IBUS_COMPONENT_PATH", "").split(":")
                if d and d != str(layout.ibus_component_dir)]
        _write_ibus_cache(layout, ":".join(rest) or None)
    manifest = layout.staged(layout.manifest)
    if manifest.exists():
        manifest.unlink()
        _remove_empty_parents(manifest.parent)
    return removed


def read_manifest(layout: Layout) -> list[str]:
    try:
        return [line for line in layout.staged(layout.manifest).read_text().splitlines() if line.strip()]
    except OSError:
        return []


def _write(layout: Layout, path: Path, text: str, report: Report) -> None:
    target = layout.staged(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text)
    report.installed.append(path)


def _remove_empty_parents(directory: Path) -> None:
    try:
        directory.rmdir()
    except OSError:
        pass


def fcitx5_build_missing() -> str | None:
    """Why the fcitx5 addon cannot be built here, or None."""
    for tool in ("cmake", "c++", "pkg-config"):
        if shutil.which(tool) is None:
            return f"{tool} not found"
    check = subprocess.run(["pkg-config", "--exists", "Fcitx5Core", "Fcitx5Module"], capture_output=True)
    if check.returncode != 0:
        return "fcitx5 development files not found (Debian: libfcitx5core-dev fcitx5-modules-dev)"
    return None


def build_fcitx5_addon(build_dir: Path, layout: Layout, stage: Path | None = None) -> list[Path]:
    """Configure, build and install the addon; return the installed paths (unstaged)."""
    library = "libkarukan" if layout.scope == "system" else str(layout.fcitx5_addon_dir / "libkarukan")
    env = dict(os.environ)
    env.setdefault("CMAKE_BUILD_PARALLEL_LEVEL", str(os.cpu_count() or 1))
    _run(["cmake", "-S", str(FCITX5_SOURCE), "-B", str(build_dir), "-DCMAKE_BUILD_TYPE=Release",
          f"-DCMAKE_INSTALL_PREFIX={layout.fcitx5_prefix}", f"-DCMAKE_INSTALL_DATADIR={layout.fcitx5_data_dir}",
          f"-DKARUKAN_ADDON_DIR={layout.fcitx5_addon_dir}", f"-DKARUKAN_ADDON_LIBRARY={library}"], env)
    _run(["cmake", "--build", str(build_dir)], env)
    if stage is not None:
        env["DESTDIR"] = str(stage)
    _run(["cmake", "--install", str(build_dir)], env)
    manifest = build_dir / "install_manifest.txt"
    paths = [Path(line) for line in manifest.read_text().splitlines() if line.strip()]
    if stage is not None:   # cmake lists staged paths; record the installed ones
        paths = [Path("/") / p.relative_to(stage) if p.is_relative_to(stage) else p for p in paths]
    return paths


def _install_fcitx5(layout: Layout, report: Report) -> None:
    missing = fcitx5_build_missing()
    if missing:
        report.notes.append(f"fcitx5 addon skipped: {missing}")
        return
    with tempfile.TemporaryDirectory(prefix="karukan-fcitx5-build-") as build:
        stage = layout.root if layout.root != Path("/") else None
        report.installed.extend(build_fcitx5_addon(Path(build), layout, stage))
    report.notes.append("fcitx5: restart fcitx5 (fcitx5 -rd) and add Karukan in fcitx5-configtool (or edit "
                        "~/.config/fcitx5/profile while fcitx5 is stopped: it writes the profile when it exits)")


def _run(argv: list[str], env: dict[str, str]) -> None:
    out = subprocess.run(argv, env=env, capture_output=True, text=True)
    if out.returncode != 0:
        tail = (out.stderr or out.stdout).strip().splitlines()[-5:]
        raise RuntimeError(f"{argv[0]} {argv[1]} failed: {' | '.join(tail)}")
