"""Candidate.source is a Source everywhere in the runtime code: no bare string is left beside it."""

from __future__ import annotations

import ast
from pathlib import Path

from karukan_engine.core.types import Candidate, Source

ROOT = Path(__file__).resolve().parent.parent
NAMES = {s.value for s in Source if s.value}
TAKES_SOURCE = {"Candidate": 2, "ExtraWord": 5}   # constructor -> position of its source argument


def bare_sources(tree: ast.AST) -> list[int]:
    """Lines where a source is written as a string: passed to Candidate/ExtraWord or compared
    with something's .source."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            name = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", "")
            if name in TAKES_SOURCE:
                position = TAKES_SOURCE[name]
                args = node.args[position:position + 1] + [k.value for k in node.keywords if k.arg == "source"]
                found += [node.lineno for a in args if _is_name(a)]
        elif isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            if any(isinstance(s, ast.Attribute) and s.attr == "source" for s in sides):
                found += [node.lineno for s in sides if _is_name(s)]
    return found


def _is_name(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and node.value in NAMES


def runtime_problems(root: Path) -> list[str]:
    problems = []
    for package in ("karukan_engine", "ime_frontend"):
        for path in sorted((root / package).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            problems += [f"{path.relative_to(root)}:{line}" for line in bare_sources(tree)]
    return problems


def test_no_bare_source_string_in_runtime_code():
    assert runtime_problems(ROOT) == []


def test_a_bare_source_string_is_found():
    planted = ast.parse('Candidate("x", "", "model")\nif c.source == "variant": pass\nExtraWord(r, s, 1, 1, 0, source="user")\n')
    assert bare_sources(planted) == [1, 2, 3]
    assert bare_sources(ast.parse('Candidate("x", "model")\nc.source == Source.MODEL\n')) == []


def test_a_source_equals_and_hashes_like_its_name():
    assert Candidate("a", "", Source.MODEL) == Candidate("a", "", "model")
    assert len({Candidate("a", "", Source.MODEL), Candidate("a", "", "model")}) == 1
    assert str(Source.LEARNING) == "learning" and f"{Source.USER}" == "user"
