"""benchmarks/rewriter_top1.py counts what the rewriters change in a dev set's lists."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

from karukan_engine.evaluation.metrics import EvalItem  # noqa: E402
from karukan_engine.rewriters import RewriterStage  # noqa: E402
from karukan_engine.rewriters.choice_memory import ChoiceMemory  # noqa: E402
from rewriter_top1 import FIXED_CLOCK, compare  # noqa: E402
from session_fakes import ScriptedConverter  # noqa: E402


def test_compare_keeps_top1_and_sees_recall_move():
    conv = ScriptedConverter({"ねこ": ["猫", "ネコ", "ねこ", "根子"], "きょう": ["今日", "京"]})
    items = [EvalItem("ねこ", ("根子",)), EvalItem("きょう", ("今日",))]
    row = compare(conv, items, RewriterStage(clock=lambda: FIXED_CLOCK, memory=ChoiceMemory()), 4)
    assert row["first_differs"] == 0 and row["acc1_with"] == row["acc1_without"] == 0.5
    assert row["recall_without"] == 1.0 and row["recall_with"] == 0.5   # 🐱 took 根子's place in the top 4
    assert 0 <= row["rewrite_p50_ms"] <= row["rewrite_p95_ms"]
