"""The README's install steps, run verbatim (issue 14 item 2): a fresh HOME and a private session
bus, a session whose ibus-daemon (or fcitx5) was started before the install, then exactly the
commands of the README's "Installing into IBus and fcitx5" section, and a key typed afterwards.

The README's daemons daemonize (-d), so they and their children are not in a process group of
ours: they are ended by pid (IBus's address file; for fcitx5, the fcitx5 processes whose
environment holds this test's HOME), and only processes descended from them are touched.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from pathlib import Path


from e2e_support import PACKAGE_ROOT, eventually, need, need_fcitx5_addon, run
from karukan_testing.app_clients import FcitxApp, IBusApp
from karukan_testing.headless import HeadlessDesktop

README = PACKAGE_ROOT / "README.md"


def readme_section() -> str:
    text = README.read_text(encoding="utf-8")
    start = text.index("## Installing into IBus and fcitx5")
    return text[start:text.index("\n## ", start + 1)]


def shell_blocks(section: str) -> list[list[str]]:
    """The commands of each ```sh block, comments dropped."""
    blocks = []
    for block in re.findall(r"```sh\n(.*?)```", section, re.S):
        lines = [re.sub(r"\s+#.*$", "", line).strip() for line in block.splitlines()]
        blocks.append([line for line in lines if line and not line.startswith("#")])
    return blocks


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            if ppid == pid:
                found.append(int(entry.name))
    return found


def _end_tree(pid: int) -> None:
    """End a daemon this test started and everything it started (by pid, children first)."""
    for child in _children(pid):
        _end_tree(child)
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        pass


def _daemon_pids(home: Path) -> list[int]:
    pids = []
    for file in (home / ".config/ibus/bus").glob("*"):
        for line in file.read_text().splitlines():
            if line.startswith("IBUS_DAEMON_PID="):
                pids.append(int(line.split("=", 1)[1]))
    return pids


def _address(home: Path, env: dict[str, str]) -> str | None:
    out = subprocess.run(["ibus", "address"], env=env, capture_output=True, text=True, timeout=30)
    address = out.stdout.strip()
    return address if out.returncode == 0 and address.startswith("unix:") else None


def _address_files(home: Path) -> str:
    return "".join(f.read_text() for f in sorted((home / ".config/ibus/bus").glob("*")))


def test_readme_ibus_steps_work_verbatim_in_the_session_of_the_install():
    need("ibus-daemon", "ibus", "dbus-daemon")
    blocks = shell_blocks(readme_section())
    install_cmd = next(line for block in blocks for line in block if "karukan install --user" in line)
    restart_block = next(block for block in blocks if "ibus restart" in block)
    fallback_block = next(block for block in blocks if any("ibus-daemon -d" in line for line in block))
    with HeadlessDesktop() as desktop:
        desktop.start_session_bus()
        env = dict(desktop.env)
        # As in a desktop session: IBus finds its per-display address file, nothing is preset.
        for name in ("IBUS_ADDRESS_FILE", "IBUS_ADDRESS", "IBUS_COMPONENT_PATH"):
            env.pop(name, None)
        env["PATH"] = os.pathsep.join([str(PACKAGE_ROOT / ".venv/bin"), env.get("PATH", "")])
        started: list[int] = []

        def sh(line: str) -> subprocess.CompletedProcess:
            return subprocess.run(["bash", "-c", line], env=env, cwd=PACKAGE_ROOT, capture_output=True,
                                  text=True, timeout=600)

        def run_block(block: list[str]) -> None:
            for line in block:
                before = _address_files(desktop.home)
                result = sh(line)
                assert "Cannot find engine" not in result.stderr, (line, result.stderr)
                if "ibus restart" in line or "ibus-daemon" in line:
                    # A user types the next line once the daemon is back (it rewrites its address).
                    async def back():
                        return _address_files(desktop.home) != before and _address(desktop.home, env)

                    run(eventually(back, timeout_s=60, interval_s=0.1))
                    started.extend(p for p in _daemon_pids(desktop.home) if p not in started)
            current = sh("ibus engine")
            assert current.stdout.strip() == "karukan", (block, current.stdout, current.stderr, result.stderr)

        async def typed():
            app = await IBusApp.connect(_address(desktop.home, env))
            await app.set_engine("karukan")
            ok = await app.engine_name() == "karukan" and await app.tap(ord("a")) and app.shown.preedit == "あ"
            app.disconnect()
            return ok

        try:
            # The login's IBus, before Karukan was installed (it writes its registry cache).
            subprocess.run(["ibus-daemon", "-drx"], env=env, check=True, timeout=60)

            async def daemon_up():
                return _address(desktop.home, env)

            run(eventually(daemon_up, timeout_s=60, interval_s=0.1))
            started += _daemon_pids(desktop.home)

            assert sh(install_cmd).returncode == 0
            assert "Cannot find engine karukan" in sh("ibus engine karukan").stderr   # not yet read
            run_block(restart_block)
            run(eventually(typed, timeout_s=60, interval_s=0.3))

            # Later IBus rebuilds its cache from its own environment (no IBUS_COMPONENT_PATH, as in an
            # X session without systemd): `ibus restart` loses Karukan; the README's fallback works.
            sh("IBUS_COMPONENT_PATH=/usr/share/ibus/component ibus write-cache")
            before = _address_files(desktop.home)
            sh("ibus restart")

            async def back():
                return _address_files(desktop.home) != before and _address(desktop.home, env)

            run(eventually(back, timeout_s=60, interval_s=0.1))
            assert "Cannot find engine karukan" in sh("ibus engine karukan").stderr
            doctor = sh("karukan doctor").stdout
            assert fallback_block[0].replace("$HOME", str(desktop.home)) in doctor, doctor
            run_block(fallback_block)
            run(eventually(typed, timeout_s=60, interval_s=0.3))
        finally:
            for pid in reversed(started):
                _end_tree(pid)
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline and any(Path(f"/proc/{p}").exists() for p in started):
                time.sleep(0.05)


def _fcitx5_pids(home: Path) -> list[int]:
    """fcitx5 processes of this test: started with this HOME (a throwaway directory)."""
    marker = f"HOME={home}".encode()
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if (entry / "comm").read_text().strip() == "fcitx5" and \
                        marker in (entry / "environ").read_bytes().split(b"\0"):
                    pids.append(int(entry.name))
            except OSError:
                continue
    return pids


def _fcitx5_answers(env: dict[str, str]) -> bool:
    check = subprocess.run(["dbus-send", "--session", "--print-reply", "--dest=org.fcitx.Fcitx5", "/controller",
                            "org.fcitx.Fcitx.Controller1.CheckUpdate"], env=env, capture_output=True, timeout=30)
    return check.returncode == 0


def test_readme_fcitx5_steps_work_verbatim():
    need_fcitx5_addon("fcitx5-remote")
    blocks = shell_blocks(readme_section())
    install_cmd = next(line for block in blocks for line in block if "karukan install --user" in line)
    restart = next(block for block in blocks if any(line.startswith("fcitx5 -r") for line in block))
    by_hand = next(block for block in blocks if any(line.startswith("fcitx5-remote -e") for line in block))
    with HeadlessDesktop() as desktop:
        desktop.start_session_bus()
        env = dict(desktop.env)
        env.pop("IBUS_ADDRESS_FILE", None)
        env["PATH"] = os.pathsep.join([str(PACKAGE_ROOT / ".venv/bin"), env.get("PATH", "")])
        # "$EDITOR": what a user does in it, as a script.
        editor = desktop.root / "editor"
        editor.write_text("#!/bin/sh\nprintf '\\n[Groups/0/Items/1]\\nName=karukan\\nLayout=\\n' >> \"$1\"\n")
        editor.chmod(0o755)
        env["EDITOR"] = str(editor)
        try:
            # The login's fcitx5, before Karukan was installed (its default profile: keyboard only).
            desktop.start_fcitx5(["keyboard-us"], ["dbus", "dbusfrontend", "keyboard"])

            def sh(line: str) -> subprocess.CompletedProcess:
                # Output to a file, not a pipe: a daemonized fcitx5 keeps its inherited stdout open.
                with open(desktop.logs / "readme-steps.log", "ab") as log:
                    return subprocess.run(["bash", "-c", line], env=env, cwd=PACKAGE_ROOT, stdin=subprocess.DEVNULL,
                                          stdout=log, stderr=log, timeout=600)

            previous: set[int] = set(_fcitx5_pids(desktop.home))

            async def answers():
                # The new fcitx5 answers, and the one it replaced is gone (it may answer while exiting).
                live = set(_fcitx5_pids(desktop.home))
                return live and not live & previous and _fcitx5_answers(env)

            async def stopped():
                return not _fcitx5_pids(desktop.home)

            assert sh(install_cmd).returncode == 0
            for block in (restart, by_hand):
                for line in block:
                    assert sh(line).returncode == 0, (line, desktop.log_tail("readme-steps"))
                    # A user types the next line once the previous one took effect.
                    if line.startswith("fcitx5-remote -e"):
                        run(eventually(stopped, timeout_s=60, interval_s=0.1))
                    elif line.startswith("fcitx5"):
                        run(eventually(answers, timeout_s=60, interval_s=0.1))
                        previous = set(_fcitx5_pids(desktop.home))

            async def typed():
                app = await FcitxApp.connect(env["DBUS_SESSION_BUS_ADDRESS"])
                await app.set_im("karukan")
                ok = await app.current_im() == "karukan" and await app.tap(ord("a"))
                await app.ic("FocusIn")
                ok = ok and app.shown.preedit == "あ"
                app.disconnect()
                return ok

            run(eventually(typed, timeout_s=60, interval_s=0.3))
        finally:
            for pid in _fcitx5_pids(desktop.home):
                _end_tree(pid)


def test_readme_names_what_doctor_and_install_print():
    section = readme_section()
    assert "ibus restart" in section and "ibus-daemon -drx --cache=refresh" in section
    assert "systemctl --user enable karukan-engine.service" in section

