"""A set-aside copy that cannot be written whole (a full disk) leaves nothing that looks like a
backup (issue 29, item 6): before, an empty learning.json.corrupt-<time> was left behind. The
write is made to fail for real in a child process whose file-size limit is a few bytes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CHILD = """
import json, resource, signal, sys
from pathlib import Path
from karukan_engine.core.user_files import keep_copy
from karukan_engine.dictionary.learning import LearningStore
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)   # a write past the limit fails with EFBIG instead
resource.setrlimit(resource.RLIMIT_FSIZE, (16, 16))
path = Path(sys.argv[1])
copy = keep_copy(path, b"x" * 4096, "test")
store = LearningStore(path, save_delay=None)   # one bad entry: it keeps a copy before any save
store.record("はし", "橋")
print(json.dumps({"copy": copy is not None, "saved": store.save()}))
"""


def test_a_copy_that_cannot_be_written_leaves_no_file(tmp_path):
    path = tmp_path / "learning.json"
    original = json.dumps({"format": 1, "tick": 2, "entries": [["きしゃ", "汽車", 1, 1], ["bad", 1.5, 1, 2]]})
    path.write_text(original, encoding="utf-8")
    done = subprocess.run([sys.executable, "-c", CHILD, str(path)], cwd=REPO, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr[-800:]
    assert json.loads(done.stdout.splitlines()[-1]) == {"copy": False, "saved": False}
    assert list(tmp_path.glob("learning.json.corrupt-*")) == []   # nothing posing as a backup
    assert path.read_text(encoding="utf-8") == original            # and the file is untouched
    assert not list(tmp_path.glob(".learning.json.tmp-*"))
