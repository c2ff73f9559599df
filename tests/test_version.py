"""One version, stated in two places that must agree: pyproject.toml (what pip installs)
and ``cdpnb/_version.py`` (what ``cdpnb -V``, traces and campaign runs record)."""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

import cdpnb
from cdpnb._version import __version__

ROOT = Path(__file__).resolve().parent.parent


def test_pyproject_and_the_package_state_one_version() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["version"] == __version__ == cdpnb.__version__


def test_no_module_imports_the_version_from_the_package_root() -> None:
    # the package root imports every layer; a module below it that imports the root
    # for the version is an arrow up every floor (and an import cycle waiting to bite)
    offenders = []
    for path in sorted((ROOT / "cdpnb").rglob("*.py")):
        if path == ROOT / "cdpnb" / "__init__.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module == "cdpnb" and any(
                    alias.name == "__version__" for alias in node.names):
                offenders.append(str(path.relative_to(ROOT)))
    assert offenders == []
