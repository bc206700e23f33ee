"""The packages form layers, and no module imports a layer above its own.

LAYERS lists them bottom first; a module belongs to the layer of the longest name in it that
is the module or one of its packages. Every import counts: at the top of a module, inside a
function, `from . import x`, and `importlib.import_module("...")` with a literal name. The
checker runs on a source tree, so one test plants an upward import in a copy and expects it to
be caught (the test of the test).
"""

from __future__ import annotations

import ast
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("karukan_engine", "ime_frontend", "karukan_testing", "tools")

# Bottom first. Modules in one layer may import each other; a module may import any layer below.
LAYERS: tuple[tuple[str, ...], ...] = (
    # value types, errors, safe user-file access; kana and its script forms
    ("karukan_engine", "karukan_engine.core", "karukan_engine.kana", "karukan_engine.transliteration"),
    # romaji composer, dictionaries (system, user, learning)
    ("karukan_engine.romaji", "karukan_engine.dictionary"),
    # the user's settings, checked against what the layers below accept
    ("karukan_engine.config",),
    # the two converters: dictionary lattice, neural model; the character n-gram beside the model
    ("karukan_engine.lattice", "karukan_engine.neural", "karukan_engine.lm"),
    # candidates added after ranking (emoji, symbols, dates, numbers, single kanji)
    ("karukan_engine.rewriters",),
    # threads and timing: scheduler workers, the stage-timing predictor, the greedy batcher,
    # conversions prepared while the user pauses (no ranking policy)
    ("karukan_engine.scheduling",),
    # ranking policy, the fused converter's parts and the converter factory
    ("karukan_engine.conversion",),
    # answer now, improve later: late updates from the workers to the sessions
    ("karukan_engine.live",),
    # one input context: keymap, state machine, view
    ("karukan_engine.session",),
    ("karukan_engine.evaluation", "karukan_engine.training"),
    # the frontends' shared ground: wire format, bus, toolkit facts in session terms
    ("ime_frontend", "ime_frontend.wire", "ime_frontend.bus", "ime_frontend.fair", "ime_frontend.toolkit",
     "ime_frontend.serve_options"),
    # the engine service, its input contexts and its clients
    ("ime_frontend.contexts", "ime_frontend.service", "ime_frontend.client", "ime_frontend.resilient",
     "ime_frontend.flood"),
    ("ime_frontend.ibus",),
    ("ime_frontend.install", "ime_frontend.doctor", "ime_frontend.doctor_check", "ime_frontend.doctor_ibus",
     "ime_frontend.doctor_fcitx5"),
    # the command line: the dispatcher and each layer's subcommand
    ("karukan_engine.cli", "karukan_engine.session.keys_cli", "karukan_engine.conversion.convert_cli",
     "karukan_engine.dictionary.dict_cli", "karukan_engine.evaluation.eval_cli", "karukan_engine.neural.model_cli",
     "ime_frontend.frontend_cli"),
    # test support: may use everything, and nothing at runtime may use it
    ("karukan_testing",),
    # build pipelines run from a checkout (the mimic models come from test support)
    ("tools",),
)


def layer_of(module: str) -> int:
    """Index in LAYERS of the longest declared name that is `module` or one of its packages."""
    best, best_len = -1, -1
    for index, names in enumerate(LAYERS):
        for name in names:
            if (module == name or module.startswith(name + ".")) and len(name) > best_len:
                best, best_len = index, len(name)
    if best < 0:
        raise LookupError(f"{module} is in no declared layer")
    return best


def module_name(root: Path, path: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imported_names(module: str, is_package: bool, tree: ast.AST) -> list[tuple[int, str]]:
    """(line, module) for every import in the tree; `from a import b` yields a.b too, since b
    may be a submodule (a declared name that is not a module just falls into a's layer)."""
    package = module if is_package else module.rpartition(".")[0]
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            found.append((node.lineno, source))
            found += [(node.lineno, f"{source}.{alias.name}") for alias in node.names]
        elif isinstance(node, ast.Call) and _called_name(node.func) == "import_module" and node.args:
            first = node.args[0]
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                found.append((node.lineno, first.value))
    return found


def _called_name(func: ast.expr) -> str:
    if isinstance(func, ast.Attribute):
        return func.attr
    return func.id if isinstance(func, ast.Name) else ""


def upward_imports(root: Path) -> list[str]:
    """Every import under root of a module in a higher layer, as 'path:line: a (n) imports b (m)'."""
    problems = []
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            module = module_name(root, path)
            mine = layer_of(module)
            tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
            worst: dict[int, tuple[int, str]] = {}   # line -> the highest layer it imports
            for line, name in imported_names(module, path.name == "__init__.py", tree):
                if name.split(".")[0] in PACKAGES and layer_of(name) > worst.get(line, (mine, ""))[0]:
                    worst[line] = (layer_of(name), name)
            problems += [f"{path.relative_to(root)}:{line}: {module} (layer {mine}) imports {name} (layer {theirs})"
                         for line, (theirs, name) in sorted(worst.items())]
    return problems


def test_no_module_imports_a_layer_above_its_own():
    assert upward_imports(ROOT) == []


def test_every_module_is_in_a_declared_layer():
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            layer_of(module_name(ROOT, path))   # raises for an undeclared one


def _copy_tree(tmp_path: Path) -> Path:
    copy = tmp_path / "tree"
    for package in PACKAGES:
        if (ROOT / package).is_dir():
            shutil.copytree(ROOT / package, copy / package, ignore=shutil.ignore_patterns("__pycache__", "build*"))
    return copy


@pytest.mark.parametrize("planted", [
    "from karukan_engine.conversion.fused import FusedConverter\n",          # top of the module
    "def _late():\n    from ime_frontend import wire\n",                     # inside a function
    "import importlib\n_m = importlib.import_module('karukan_engine.session.session')\n",
    "from .. import cli\n",                                                   # relative, to the top layer
])
def test_a_planted_upward_import_is_caught(tmp_path, planted):
    copy = _copy_tree(tmp_path)
    victim = copy / "karukan_engine" / "lattice" / "search.py"
    victim.write_text(victim.read_text(encoding="utf-8") + "\n" + planted, encoding="utf-8")
    problems = upward_imports(copy)
    assert len(problems) == 1 and problems[0].startswith("karukan_engine/lattice/search.py:"), problems


def test_runtime_code_never_imports_test_support(tmp_path):
    copy = _copy_tree(tmp_path)
    victim = copy / "ime_frontend" / "wire.py"
    victim.write_text(victim.read_text(encoding="utf-8") + "\nimport karukan_testing\n", encoding="utf-8")
    assert len(upward_imports(copy)) == 1


# Inside the fused converter the arrows run one way too: the parts stand on what they share,
# the facade (converter.py) on the parts, the factory's entry (build.py) on the facade.
FUSED = "karukan_engine.conversion.fused"
FUSED_LAYERS: tuple[tuple[str, ...], ...] = (
    ("run_options", "shared"),
    ("live_text", "space_segments"),
    ("space_ranking", "suggesting"),
    ("space_conversion",),
    ("converter",),
    ("build",),
    ("__init__",),
)


def fused_layer_of(stem: str) -> int:
    found = [index for index, names in enumerate(FUSED_LAYERS) if stem in names]
    if not found:
        raise LookupError(f"{FUSED}.{stem} is in no declared layer of the fused converter")
    return found[0]


def fused_upward_imports(root: Path) -> list[str]:
    """Every import inside the fused converter's package of one of its modules above its own."""
    problems: set[str] = set()   # `from a import b` is named twice (a and a.b)
    for path in sorted((root / FUSED.replace(".", "/")).glob("*.py")):
        mine = fused_layer_of(path.stem)
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for line, name in imported_names(module_name(root, path), path.name == "__init__.py", tree):
            stem = name[len(FUSED) + 1:].split(".")[0] if name.startswith(FUSED + ".") else None
            if stem is not None and fused_layer_of(stem) > mine:
                problems.add(f"{path.relative_to(root)}:{line}: {path.stem} imports {stem}")
    return sorted(problems)


def test_the_fused_converters_parts_never_import_the_facade_or_a_later_part():
    assert fused_upward_imports(ROOT) == []


def test_a_planted_import_of_the_facade_by_a_part_is_caught(tmp_path):
    copy = _copy_tree(tmp_path)
    victim = copy / "karukan_engine" / "conversion" / "fused" / "shared.py"
    victim.write_text(victim.read_text(encoding="utf-8")
                      + "\nfrom karukan_engine.conversion.fused.converter import FusedConverter\n", encoding="utf-8")
    problems = fused_upward_imports(copy)
    assert len(problems) == 1 and "shared imports converter" in problems[0], problems
