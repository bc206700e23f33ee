"""`karukan doctor` names the step a user install still misses in a running IBus (issue 14 item 2)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, strategies as st

from ime_frontend import doctor, doctor_check
from ime_frontend import install as inst


def user_env(tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "home"
    return {"HOME": str(home), "XDG_DATA_HOME": str(home / "data"), "XDG_CONFIG_HOME": str(home / "config")}


@pytest.fixture
def daemon(tmp_path):
    """A stand-in for ibus-daemon: a process of ours with a chosen environment."""
    procs = []

    def start(component_path: str | None) -> int:
        env = {k: v for k, v in os.environ.items() if k != "IBUS_COMPONENT_PATH"}
        if component_path is not None:
            env["IBUS_COMPONENT_PATH"] = component_path
        proc = subprocess.Popen([sys.executable, "-c", "import time; print('up', flush=True); time.sleep(120)"],
                                env=env, stdout=subprocess.PIPE)
        procs.append(proc)
        assert proc.stdout.readline() == b"up\n"    # running its own program, environment in place
        return proc.pid

    yield start
    for proc in procs:
        proc.kill()
        proc.wait()
        proc.stdout.close()


def test_no_component_says_install(tmp_path, daemon):
    layout = inst.user_layout(user_env(tmp_path))
    step = doctor.missing_ibus_step(daemon(None), layout)
    if Path("/usr/share/ibus/component/karukan.xml").exists():
        pytest.skip("a system install is present")
    assert "run `karukan install --user`" in step


def test_a_daemon_started_without_the_variable_gets_the_exact_command(tmp_path, daemon):
    layout = inst.user_layout(user_env(tmp_path))
    inst.install(layout, fcitx5=False)
    command = inst.ibus_restart_command(layout.ibus_component_dir)
    step = doctor.missing_ibus_step(daemon(None), layout)
    assert "(IBUS_COMPONENT_PATH unset)" in step and "`ibus restart`, or if that does not help: " in step
    assert step.endswith(command)
    step = doctor.missing_ibus_step(daemon("/usr/share/ibus/component"), layout)
    assert "(IBUS_COMPONENT_PATH=/usr/share/ibus/component)" in step and step.endswith(command)


def test_a_daemon_with_the_variable_but_no_engine_has_an_old_cache(tmp_path, daemon):
    layout = inst.user_layout(user_env(tmp_path))
    inst.install(layout, fcitx5=False)
    step = doctor.missing_ibus_step(daemon(inst.ibus_component_path(layout.ibus_component_dir)), layout)
    assert "registry cache predates the install" in step
    assert step.endswith(inst.ibus_restart_command(layout.ibus_component_dir))


def test_an_unreadable_daemon_environment_still_gets_the_command(tmp_path):
    layout = inst.user_layout(user_env(tmp_path))
    inst.install(layout, fcitx5=False)
    step = doctor.missing_ibus_step(None, layout)
    assert step.endswith(inst.ibus_restart_command(layout.ibus_component_dir))


def test_a_process_named_fcitx5_wrote_the_address_file(tmp_path, monkeypatch):
    # Issue 14 item 4, the fallback when the IBus address cannot be reached: the address file's pid.
    address = tmp_path / "ibus-address"
    address.write_text(f"IBUS_ADDRESS=unix:path={tmp_path}/none\nIBUS_DAEMON_PID={os.getpid()}\n")
    monkeypatch.setenv("IBUS_ADDRESS_FILE", str(address))
    monkeypatch.setattr(doctor, "_process_name", lambda pid: "fcitx5")
    assert doctor._daemon_is_fcitx5()
    monkeypatch.setattr(doctor, "_process_name", lambda pid: "ibus-daemon")
    assert not doctor._daemon_is_fcitx5()


@given(st.text(max_size=8))
def test_the_typing_probe_counts_only_japanese_text_as_converted(text):
    # issue 30 item 9: `a` must come back as kana, not as the romaji typed (or nothing)
    assert doctor_check.converted(text) == (bool(text) and not any(c.isascii() and c.isalpha() for c in text))
    assert doctor_check.converted("あ") and not doctor_check.converted("a") and not doctor_check.converted("")


def test_a_failed_check_prints_its_fix_on_the_next_line(monkeypatch, capsys):
    from ime_frontend import frontend_cli

    checks = [doctor.Check("ibus global engine", False, "no engine is set", "run: ibus engine karukan"),
              doctor.Check("fcitx5", True, "running", "never printed: the check passed")]
    monkeypatch.setattr(doctor, "run_doctor", lambda: (checks, False))
    assert frontend_cli._doctor(None) == 1
    assert capsys.readouterr().out == ("[--] ibus global engine: no engine is set\n"
                                       "     fix: run: ibus engine karukan\n[ok] fcitx5: running\n")
