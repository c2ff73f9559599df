"""The layer rule of docs/architecture.md: protocol and state are sans-I/O and import
nothing above them."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

import cdpnb

PACKAGE = Path(cdpnb.__file__).resolve().parent
ROOT = PACKAGE.parent

ASYNC_IO = {"asyncio", "websockets"}
UPPER_LAYERS = {"transport", "supervisor", "trace", "backends", "probes", "campaign", "notebook",
                "cli"}
# For each sans-I/O layer: the cdpnb layers above it that it must not import.
FORBIDDEN_CDPNB = {
    "protocol": UPPER_LAYERS | {"state", "sync", "blocking"},
    "state": UPPER_LAYERS | {"sync", "blocking"},
    # The layers above: what docs/architecture.md says each may import, the rest forbidden.
    "trace": {"transport", "supervisor", "backends", "probes", "campaign", "notebook", "cli",
              "sync", "blocking"},
    "transport": {"state", "supervisor", "trace", "backends", "probes", "campaign", "notebook",
                  "cli", "sync", "blocking"},
    # backends serve replayed traces, so they may read them
    "backends": {"supervisor", "probes", "campaign", "notebook", "cli", "sync", "blocking"},
    "supervisor": {"backends", "probes", "campaign", "notebook", "cli", "sync", "blocking"},
    "probes": {"campaign", "notebook", "cli", "sync", "blocking"},
    # campaigns run probe checks as Dask tasks; notebooks and the CLI sit on top of them
    "campaign": {"notebook", "cli", "sync", "blocking"},
}
#: The one way up: a ``view()`` method may import the notebook layer inside its body,
#: the way ``DataFrame.plot`` imports matplotlib — loaded only when a view is asked for.
VIEW_ENTRY_POINTS = {"view"}
#: Layers that must stay sans-I/O.
SANS_IO = {"protocol", "state"}

REPORT_IMPORTS = r"""
import json, sys
import cdpnb.protocol, cdpnb.state
from cdpnb.state import BrowserState, snapshot_of
snapshot_of(BrowserState()).to_dict()
print(json.dumps(sorted(sys.modules)))
"""


def _modules_after(code: str) -> list[str]:
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    loaded: list[str] = json.loads(proc.stdout.strip().splitlines()[-1])
    return loaded


def _async_modules(loaded: list[str]) -> list[str]:
    return sorted(m for m in loaded if m in ASYNC_IO)


def test_importing_protocol_and_state_loads_no_asyncio_or_websockets() -> None:
    loaded = _modules_after(REPORT_IMPORTS)
    bad = _async_modules(loaded)
    cdpnb_modules = sorted(m for m in loaded if m == "cdpnb" or m.startswith("cdpnb."))
    assert bad == [], (
        f"`import cdpnb.protocol, cdpnb.state` pulled in {bad}; "
        f"cdpnb modules loaded: {cdpnb_modules}"
    )


def test_protocol_and_state_modules_themselves_load_no_asyncio_or_websockets() -> None:
    # Same check with the package __init__ bypassed, to tell the layers' own imports
    # apart from whatever cdpnb/__init__.py imports eagerly.
    code = (
        "import sys, types\n"
        f"pkg = types.ModuleType('cdpnb'); pkg.__path__ = [{str(PACKAGE)!r}]\n"
        "sys.modules['cdpnb'] = pkg\n" + REPORT_IMPORTS
    )
    loaded = _modules_after(code)
    assert _async_modules(loaded) == []
    layers = {m.split(".")[1] for m in loaded if m.startswith("cdpnb.")}
    # render is a stdlib-only leaf (escaping, bounded tables) that every layer may use
    assert layers <= {"protocol", "state", "errors", "render"}, layers


def _resolve(module: str, node: ast.ImportFrom) -> str:
    """The absolute module an ``ImportFrom`` names (relative imports resolved)."""
    if node.level == 0:
        return node.module or ""
    parts = module.split(".")
    # a module's package is its name minus the last part (a package's __init__ is itself)
    base = parts[: len(parts) - node.level]
    return ".".join(base + ([node.module] if node.module else []))


def _imports(path: Path, root: Path = ROOT) -> list[tuple[int, str]]:
    parts = list(path.relative_to(root).with_suffix("").parts)
    # for a package's __init__ keep the last part, so level-1 imports resolve to the package
    module = ".".join(parts)
    found: list[tuple[int, str]] = []
    tree = ast.parse(path.read_text(), filename=str(path))
    allowed: set[int] = set()  # ids of import nodes inside view() entry points
    for fn in ast.walk(tree):
        if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef) \
                and fn.name in VIEW_ENTRY_POINTS:
            allowed |= {id(n) for n in ast.walk(fn) if isinstance(n, ast.ImportFrom)
                        and _resolve(module, n).startswith("cdpnb.notebook")}
    for node in ast.walk(tree):
        if id(node) in allowed:
            continue
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            target = _resolve(module, node)
            found.append((node.lineno, target))
            # `from cdpnb import supervisor` imports a submodule too
            found += [(node.lineno, f"{target}.{alias.name}") for alias in node.names]
    return found


def _violations(layer: str, root: Path = ROOT) -> list[str]:
    out = []
    for path in sorted((root / "cdpnb" / layer).rglob("*.py")):
        for line, name in _imports(path, root):
            parts = name.split(".")
            if (parts[0] in ASYNC_IO and layer in SANS_IO) or (
                parts[0] == "cdpnb" and len(parts) > 1 and parts[1] in FORBIDDEN_CDPNB[layer]
            ):
                out.append(f"{path.relative_to(root)}:{line} imports {name}")
    return out


@pytest.mark.parametrize("layer", sorted(FORBIDDEN_CDPNB))
def test_layer_sources_import_nothing_above_them(layer: str) -> None:
    files = list((PACKAGE / layer).rglob("*.py"))
    assert files, f"no sources found for cdpnb/{layer}"
    assert _violations(layer) == []


def test_static_checker_catches_forbidden_imports(tmp_path: Path) -> None:
    # The checker itself must see absolute, relative, from-package and function-level imports.
    fake = tmp_path / "cdpnb" / "state" / "bad.py"
    fake.parent.mkdir(parents=True)
    fake.write_text(
        "import asyncio\n"
        "from websockets.asyncio.client import connect\n"
        "from cdpnb import supervisor\n"
        "from cdpnb.transport.wire import X\n"
        "from ..trace import recorder\n"
        "from . import frames\n"
        "from cdpnb.protocol import Event\n"
        "def f():\n"
        "    import cdpnb.cli\n"
        "def view():\n"
        "    from cdpnb.notebook.views import V\n"  # the sanctioned entry point
        "def other():\n"
        "    from cdpnb.notebook.views import V\n"
    )
    (fake.parent / "__init__.py").write_text("from .frames import fold\nfrom .. import notebook\n")
    found = _violations("state", tmp_path)
    flagged = {entry.split(" imports ")[0] for entry in found}
    assert flagged == {
        "cdpnb/state/__init__.py:2",
        *(f"cdpnb/state/bad.py:{line}" for line in (1, 2, 3, 4, 5, 9, 13)),
    }
    for name in ("asyncio", "websockets.asyncio.client", "cdpnb.supervisor",
                 "cdpnb.transport.wire", "cdpnb.trace.recorder", "cdpnb.cli",
                 "cdpnb.notebook"):
        assert any(entry.endswith(f" imports {name}") for entry in found), name


def test_the_notebook_layer_loads_only_when_a_view_is_asked_for() -> None:
    loaded = _modules_after(
        "import json, sys, cdpnb\n"
        "cdpnb.Supervisor, cdpnb.Trace, cdpnb.probe, cdpnb.sync, cdpnb.campaign\n"
        "print(json.dumps(sorted(sys.modules)))\n")
    # nor do Dask, DuckDB and scipy until a campaign runs or is read
    heavy = [m for m in loaded if m.split(".")[0] in {"ipywidgets", "matplotlib", "distributed",
                                                      "dask", "duckdb", "scipy"}
             or m.startswith("cdpnb.notebook")]
    assert heavy == []


def test_every_source_file_compiles_on_every_python_the_package_claims() -> None:
    """Python 3.13 cleans docstrings in the compiler and encodes them as UTF-8 (a lone
    surrogate escape such as ``"\\ud800"`` in a plain docstring made ``import cdpnb`` fail
    there: UnicodeEncodeError); 3.11 and 3.12 take such a file. So check, on any Python,
    that no string a compiler may re-encode holds a surrogate, in the package, the
    tests, the benchmarks and the scripts."""
    roots = [ROOT / "cdpnb", ROOT / "tests", ROOT / "benchmarks", ROOT / "scripts"]
    found = []
    for path in sorted(p for root in roots for p in root.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            body = getattr(node, "body", None)
            if not isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef
                              | ast.AsyncFunctionDef) or not body:
                continue
            first = body[0]
            if (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
                    and isinstance(first.value.value, str)):
                try:
                    first.value.value.encode("utf-8")
                except UnicodeEncodeError as exc:
                    found.append(f"{path.relative_to(ROOT)}:{first.lineno}: {exc.reason}")
        compile(tree, str(path), "exec")
    assert not found, "docstrings with a lone surrogate (write it as \\\\ud800):\n" + "\n".join(
        found)
