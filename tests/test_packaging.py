"""What the runtime install holds: the engine and the frontends, never training, test support
or build tools (tests/test_layering.py keeps runtime code from importing them)."""

import sys
from pathlib import Path

import setuptools

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent


def installed_packages() -> list[str]:
    find = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]["packages"]["find"]
    return setuptools.find_packages(str(ROOT), include=find["include"], exclude=find.get("exclude", ()))


def test_the_install_holds_the_runtime_packages_only():
    packages = installed_packages()
    assert {"karukan_engine", "karukan_engine.core", "karukan_engine.session", "ime_frontend", "ime_frontend.ibus"} <= set(packages)
    assert not [p for p in packages if p.startswith(("karukan_engine.training", "karukan_testing", "tools"))]
