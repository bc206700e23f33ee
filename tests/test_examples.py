"""The usage example in examples/ runs and commits what it typed, converted."""

import os
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_type_keys_commits_the_converted_text(tmp_path):
    env = {**os.environ, "XDG_DATA_HOME": str(tmp_path), "PYTHONPATH": str(REPO)}
    run = subprocess.run([sys.executable, str(REPO / "examples" / "type_keys.py"), "kaigi"],
                         capture_output=True, text=True, timeout=120, env=env)
    assert run.returncode == 0, run.stderr
    typed, space, ret = run.stdout.splitlines()
    assert re.search(r"preedit '([^']+)'", typed) and "commit" not in typed   # composing, nothing sent yet
    shown = re.search(r"preedit '([^']+)'", space).group(1)
    assert "candidates" in space
    assert re.search(r"commit '([^']+)'", ret).group(1) == shown   # Return commits what Space showed
