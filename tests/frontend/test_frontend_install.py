"""`karukan install` / `uninstall`: files in place, runnable commands, exact removal."""

from __future__ import annotations

import configparser
import shlex
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from ime_frontend import install as inst
from ime_frontend import wire


KARUKAN = "import sys; from karukan_engine.cli import main; sys.exit(main(sys.argv[1:]))"


def user_env(tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "home"
    return {"HOME": str(home), "XDG_DATA_HOME": str(home / "data"), "XDG_CONFIG_HOME": str(home / "config")}


def files_under(root: Path) -> set[Path]:
    """Files under root, except IBus's own registry cache (install and uninstall rewrite it)."""
    return {p for p in root.rglob("*") if p.is_file() and "ibus/bus/registry" not in p.as_posix()}


def test_user_install_writes_every_piece_and_uninstall_removes_exactly_them(tmp_path):
    env = user_env(tmp_path)
    layout = inst.user_layout(env)
    keep = Path(env["XDG_DATA_HOME"]) / "dbus-1/services/other.service"   # not ours: must survive
    keep.parent.mkdir(parents=True)
    keep.write_text("x")
    report = inst.install(layout, fcitx5=False)
    data, config = Path(env["XDG_DATA_HOME"]), Path(env["XDG_CONFIG_HOME"])
    expected = {
        data / "dbus-1/services/org.karukan.Engine.service",
        config / "systemd/user/karukan-engine.service",
        data / "ibus/component/karukan.xml",
        config / "environment.d/60-karukan-ibus.conf",
        data / "icons/hicolor/scalable/apps/fcitx-karukan.svg",
    }
    assert set(report.installed) == expected
    assert files_under(tmp_path) == expected | {keep, layout.manifest}
    removed = inst.uninstall(layout)
    assert set(removed) == expected
    assert files_under(tmp_path) == {keep}


def test_installed_commands_start_this_engine(tmp_path):
    layout = inst.user_layout(user_env(tmp_path))
    inst.install(layout, fcitx5=False, model=False)
    service = configparser.ConfigParser(interpolation=None)
    service.read(layout.dbus_services_dir / inst.DBUS_SERVICE_FILE)
    assert service["D-BUS Service"]["Name"] == wire.BUS_NAME
    argv = shlex.split(service["D-BUS Service"]["Exec"])
    assert argv[-3:] == ["-m", "ime_frontend.service", "--no-model"]
    # The command resolves to an importable module with this interpreter.
    probe = [a for a in argv if a not in ("-m", "ime_frontend.service", "--no-model")]
    result = subprocess.run([*probe, "-c", "import ime_frontend.service"], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    unit = configparser.ConfigParser(interpolation=None)
    unit.read(layout.systemd_user_dir / inst.SYSTEMD_UNIT)
    assert unit["Service"]["Type"] == "dbus" and unit["Service"]["BusName"] == wire.BUS_NAME
    assert unit["Service"]["ExecStart"] == service["D-BUS Service"]["Exec"]
    component = ET.parse(layout.ibus_component_dir / inst.COMPONENT_FILE).getroot()
    assert component.findtext("name") == "org.freedesktop.IBus.Karukan"
    assert component.findtext("exec").split()[-3:] == ["ime_frontend.ibus", "--ibus", "--no-model"]
    assert component.findtext("engines/engine/name") == "karukan"
    env_line = (layout.environment_dir / inst.IBUS_ENV_FILE).read_text().strip()
    assert env_line == f"IBUS_COMPONENT_PATH={layout.ibus_component_dir}:/usr/share/ibus/component"


def test_system_install_stages_under_root(tmp_path):
    root = tmp_path / "stage"
    layout = inst.system_layout(root)
    report = inst.install(layout, fcitx5=False)
    for path in report.installed:
        assert path.is_absolute() and str(path).startswith("/usr/")
        assert (root / path.relative_to("/")).is_file()
    assert (root / "usr/share/ibus/component/karukan.xml").is_file()
    assert (root / "usr/share/dbus-1/services/org.karukan.Engine.service").is_file()
    assert (root / "usr/lib/systemd/user/karukan-engine.service").is_file()
    inst.uninstall(layout)
    assert not files_under(root)


def test_reinstall_keeps_one_manifest_entry_per_file(tmp_path):
    layout = inst.user_layout(user_env(tmp_path))
    inst.install(layout, fcitx5=False)
    inst.install(layout, fcitx5=False)
    entries = inst.read_manifest(layout)
    assert len(entries) == len(set(entries)) == 5


@pytest.mark.slow
def test_fcitx5_addon_builds_and_installs_for_a_user(tmp_path):
    missing = inst.fcitx5_build_missing()
    if missing:
        pytest.skip(f"cannot build the fcitx5 addon here: {missing}")
    layout = inst.user_layout(user_env(tmp_path))
    report = inst.install(layout, ibus=False)
    addon_conf = Path(user_env(tmp_path)["XDG_DATA_HOME"]) / "fcitx5/addon/karukan.conf"
    assert addon_conf in report.installed
    conf = configparser.ConfigParser(interpolation=None)
    conf.read(addon_conf)
    library = Path(conf["Addon"]["Library"] + ".so")
    assert library.is_absolute() and library.is_file()   # outside fcitx5's own addon directory
    inst.uninstall(layout)
    assert not library.exists() and not addon_conf.exists()


def test_cli_install_and_uninstall(tmp_path):
    env = {**user_env(tmp_path), "PATH": "/usr/bin:/bin"}
    env["PYTHONPATH"] = str(inst.PACKAGE_ROOT)

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-c", KARUKAN, *args], env=env, capture_output=True, text=True)

    out = run("install", "--user", "--no-fcitx5")
    assert out.returncode == 0, out.stderr
    assert "installed" in out.stdout
    bad = run("install", "--root", str(tmp_path))
    assert bad.returncode == 2 and "--root needs --system" in bad.stderr
    out = run("uninstall", "--user")
    assert out.returncode == 0 and out.stdout.count("removed") == 5


def test_the_icon_both_frameworks_install_is_listed_once(tmp_path, monkeypatch):
    # Issue 14 item 4: IBus writes the icon and the fcitx5 addon's CMake installs the same file.
    layout = inst.user_layout(user_env(tmp_path))
    icon = layout.fcitx5_data_dir / inst.ICON_PATH

    def fake_fcitx5(layout, report):
        report.installed += [layout.fcitx5_addon_dir / "libkarukan.so", icon]

    monkeypatch.setattr(inst, "_install_fcitx5", fake_fcitx5)
    report = inst.install(layout)
    assert report.installed.count(icon) == 1
    assert len(report.installed) == len(set(report.installed))


def test_a_user_install_prints_the_command_that_makes_ibus_read_it_now(tmp_path):
    # Issue 14 item 2: `ibus restart` keeps ibus-daemon's old environment and its registry cache.
    layout = inst.user_layout(user_env(tmp_path))
    report = inst.install(layout, fcitx5=False)
    if shutil.which("ibus"):
        # The user's registry cache (in this HOME, not the real one) now names our component.
        registry = layout.cache_home / "ibus/bus/registry"
        assert registry.is_file() and any("`ibus restart` now finds Karukan" in n for n in report.notes)
        cached = subprocess.run(["ibus", "read-cache"], env={**user_env(tmp_path), "PATH": "/usr/bin:/bin",
                                                            "XDG_CACHE_HOME": str(layout.cache_home)},
                                capture_output=True, text=True, timeout=60)
        assert str(layout.ibus_component_dir / inst.COMPONENT_FILE) in cached.stdout, cached.stdout[-2000:]
        inst.uninstall(layout)
        cached = subprocess.run(["ibus", "read-cache"], env={**user_env(tmp_path), "PATH": "/usr/bin:/bin",
                                                            "XDG_CACHE_HOME": str(layout.cache_home)},
                                capture_output=True, text=True, timeout=60)
        assert cached.returncode == 0 and str(layout.ibus_component_dir) not in cached.stdout
    command = inst.ibus_restart_command(layout.ibus_component_dir)
    assert any(command in note for note in report.notes), report.notes
    words = shlex.split(command)
    assert words[0] == f"IBUS_COMPONENT_PATH={layout.ibus_component_dir}:/usr/share/ibus/component"
    assert words[1:] == ["ibus-daemon", "-drx", "--cache=refresh"]
    assert any("~/.xsessionrc" in note for note in report.notes)     # X sessions without systemd
    assert any(f"systemctl --user enable {inst.SYSTEMD_UNIT}" in note for note in report.notes)


def test_a_system_install_needs_no_ibus_command(tmp_path):
    report = inst.install(inst.system_layout(tmp_path / "stage"), fcitx5=False)
    assert not any("ibus-daemon -drx" in note for note in report.notes)
