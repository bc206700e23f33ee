"""benchmarks/session_bench.py runs end to end on every converter, the default fused one included."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("llama_cpp")

from karukan_engine.dictionary.system import DEFAULT_DIR  # noqa: E402

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.skipif(not (DEFAULT_DIR / "meta.json").is_file(), reason="compiled dictionary not built")
def test_session_bench_times_every_converter_and_key_kind(tmp_path):
    out = tmp_path / "session.json"
    env = {**os.environ, "XDG_DATA_HOME": str(tmp_path / "data"), "XDG_CONFIG_HOME": str(tmp_path / "config")}
    run = subprocess.run([sys.executable, str(REPO / "benchmarks" / "session_bench.py"), "--repeats", "1",
                          "--live-pace-ms", "20", "--json", str(out)], capture_output=True, text=True, timeout=300, env=env)
    assert run.returncode == 0, run.stderr
    rows = json.loads(out.read_text())["rows"]
    assert {(r["converter"], r["kind"]) for r in rows} == {
        (c, k) for c in ("plain", "dictionary", "fused", "fused+live") for k in ("typing", "convert", "commit")}
    for row in rows:
        assert row["count"] > 0 and 0 <= row["p50_ms"] <= row["p95_ms"] <= row["max_ms"]
    # through the live service every sentence is typed once: each romaji key, Space and Return
    live = {r["kind"]: r["count"] for r in rows if r["converter"] == "fused+live"}
    sys.path.insert(0, str(REPO / "benchmarks"))
    from session_bench import SENTENCES
    assert live == {"typing": sum(map(len, SENTENCES)), "convert": len(SENTENCES), "commit": len(SENTENCES)}
    # The bench commits every sentence it types: into a history of its own, not the user's.
    assert not (tmp_path / "data" / "karukan" / "learning.json").exists()


def test_deferred_work_starts_after_the_key_not_inside_it():
    """As the engine's context host does: what a key defers starts once the key's time is taken."""
    import threading

    sys.path.insert(0, str(REPO / "benchmarks"))
    from session_bench import LiveAttached
    from karukan_engine.config import Config, SessionSettings, SuggestSettings
    from karukan_engine.conversion.plain import PlainConverter

    # nothing of the session's own deferred: only the test's work runs
    config = Config(session=SessionSettings(live_conversion=False, anticipate=False),
                    suggest=SuggestSettings(enabled=False))
    attached = LiveAttached(PlainConverter(), config)
    started_inside: list[bool] = []
    ran = threading.Event()
    real_process_key = attached.session.process_key

    def process_key(keysym, mods=0):
        view = real_process_key(keysym, mods)
        attached._defer(0, ran.set, 0.001)          # work a key defers...
        started_inside.append(threading.active_count())
        return view

    attached.session.process_key = process_key
    try:
        before = threading.active_count()
        attached.key(ord("a"))
        assert started_inside == [before]           # ...no timer thread while the key runs
        assert ran.wait(5)                          # and it runs after
    finally:
        attached.service.shutdown()
