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
#: Every room of the package (a folder, or a top-level module) and the rooms it may
#: import: the table of docs/architecture.md, bottom first. Anything not listed is an
#: arrow up (or sideways), and fails. The top (``notebook``, ``cli``, ``sync``, the
#: package's ``__init__``) may import anything and is not listed.
LEAVES = {"errors", "render", "terminal_text", "_version", "views"}
MAY_IMPORT: dict[str, set[str]] = {
    "errors": set(),
    "render": set(),
    "terminal_text": set(),
    "_version": set(),
    "views": set(),
    "progress_line": {"terminal_text"},
    "protocol": {"errors", "render", "terminal_text"},
    "state": {"protocol", "errors", "render"},
    "runtime": {"errors"},
    "transport": {"protocol", "runtime", "errors"},
    "trace": {"protocol", "state"} | LEAVES,
    "playback": {"protocol", "runtime", "transport", "trace", "errors"},
    # what the supervisor and every driver share: the core, the driver seam, shared types
    "session": {"protocol", "state", "runtime", "transport"} | LEAVES,
    # the protocol drivers (each room: its own and the session, see DRIVER_MAY_IMPORT; the
    # CDP accessibility table takes trace's text dtype)
    "drivers": {"session", "protocol", "state", "runtime", "transport", "trace"} | LEAVES,
    "supervisor": {"session", "drivers", "protocol", "state", "runtime", "transport", "trace",
                   "playback"} | LEAVES,
    # the proxy relays sockets (transport's neighbours), records (trace), folds (state),
    # replays (playback), launches a backend for `cdpnb proxy --backend`, and its races
    # serve their pages from the probes' scenario server
    "proxy": {"protocol", "state", "runtime", "transport", "trace", "playback", "backends",
              "probes"} | LEAVES,
    # backends serve replayed traces, so they may read them
    "backends": {"protocol", "runtime", "transport", "trace", "playback"} | LEAVES,
    "probes": {"protocol", "state", "runtime", "transport", "trace", "playback", "session",
               "supervisor", "backends", "progress_line"} | LEAVES,
    # campaigns run probe checks as Dask tasks; notebooks and the CLI sit on top of them
    "campaign": {"protocol", "state", "runtime", "transport", "trace", "playback",
                 "session", "supervisor", "backends", "probes", "progress_line"} | LEAVES,
    # the evidence report reads results, traces and a campaign's statistics; it sits
    # beside notebook and cli, below the top
    "report": {"protocol", "state", "trace", "probes", "campaign"} | LEAVES,
    "blocking": {"runtime", "errors"},
    # the test tooling: scripted peers, the transport contract, the load harness
    "testing": {"protocol", "runtime", "transport", "errors"},
}
TOP = {"notebook", "cli", "sync", "__init__", "__main__"}
#: There is no way up by import: a ``view()`` or ``report()`` asks ``cdpnb.views``,
#: which the notebook layer and the report room fill when they load.
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
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            target = _resolve(module, node)
            found.append((node.lineno, target))
            # `from cdpnb import supervisor` imports a submodule too
            found += [(node.lineno, f"{target}.{alias.name}") for alias in node.names]
    return found


def _room_files(room: str, root: Path = ROOT) -> list[Path]:
    folder = root / "cdpnb" / room
    if folder.is_dir():
        return sorted(folder.rglob("*.py"))
    return [root / "cdpnb" / f"{room}.py"]


def _violations(layer: str, root: Path = ROOT) -> list[str]:
    out = []
    for path in _room_files(layer, root):
        for line, name in _imports(path, root):
            parts = name.split(".")
            if parts[0] in ASYNC_IO and layer in SANS_IO:
                out.append(f"{path.relative_to(root)}:{line} imports {name}")
            elif parts[0] == "cdpnb":
                room = parts[1] if len(parts) > 1 else "__init__"
                if room != layer and room not in MAY_IMPORT[layer]:
                    out.append(f"{path.relative_to(root)}:{line} imports {name}")
    return out


def test_every_room_has_a_place_in_the_layers() -> None:
    rooms = {p.stem if p.is_file() else p.name for p in PACKAGE.iterdir()
             if (p.is_dir() and (p / "__init__.py").exists()) or p.suffix == ".py"}
    assert rooms - set(MAY_IMPORT) - TOP == set()
    assert set(MAY_IMPORT) - rooms == set(), "a room of the table is gone from the package"


@pytest.mark.parametrize("layer", sorted(MAY_IMPORT))
def test_layer_sources_import_nothing_above_them(layer: str) -> None:
    assert all(f.exists() for f in _room_files(layer)), f"no sources found for cdpnb/{layer}"
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
        "    from cdpnb.notebook.views import V\n"  # no way up, not even in a view()
    )
    (fake.parent / "__init__.py").write_text("from .frames import fold\nfrom .. import notebook\n")
    found = _violations("state", tmp_path)
    flagged = {entry.split(" imports ")[0] for entry in found}
    assert flagged == {
        "cdpnb/state/__init__.py:2",
        *(f"cdpnb/state/bad.py:{line}" for line in (1, 2, 3, 4, 5, 9, 11)),
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


def _module_graph(room: str) -> dict[str, set[str]]:
    """Which modules of ``room`` each of its modules imports (at any level of the file,
    ``TYPE_CHECKING`` blocks and function bodies included: a circle drawn lazily is
    still a circle to a reader)."""
    graph: dict[str, set[str]] = {}
    for path in _room_files(room):
        if path.name == "__init__.py":
            continue  # a package's front re-exports its modules: not an arrow between them
        name = path.stem
        graph[name] = set()
        for _, imported in _imports(path):
            parts = imported.split(".")
            if len(parts) > 2 and parts[:2] == ["cdpnb", room] and parts[2] != name \
                    and (PACKAGE / room / f"{parts[2]}.py").exists():
                graph[name].add(parts[2])
    return graph


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every simple circle of ``graph``, each once, starting from its least module."""
    found: list[list[str]] = []

    def walk(start: str, path: list[str]) -> None:
        for nxt in sorted(graph.get(path[-1], ())):
            if nxt == start:
                found.append([*path, start])
            elif nxt not in path and nxt > start:
                walk(start, [*path, nxt])

    for start in sorted(graph):
        walk(start, [start])
    return found


@pytest.mark.parametrize("room", sorted(r for r in MAY_IMPORT if (PACKAGE / r).is_dir()))
def test_no_circle_of_imports_inside_a_room(room: str) -> None:
    assert _circles(_module_graph(room)) == []


# -- the drivers' rooms ------------------------------------------------------------------

DRIVERS = PACKAGE / "drivers"
#: What each driver's room may import of the others: none (each imports the session and
#: the layers below, as ``MAY_IMPORT["drivers"]`` says); WIP is CDP's driver with WIP's
#: words, so it builds on ``cdp``.
DRIVER_MAY_IMPORT: dict[str, set[str]] = {"cdp": set(), "bidi": set(), "classic": set(),
                                          "wip": {"cdp"}}
#: The one module above the drivers that names them: where the driver is chosen
#: (``DRIVERS``, one per protocol spec).
CHOOSES_THE_DRIVER = "cdpnb/supervisor/supervisor.py"


def _driver_room(module: str) -> str | None:
    parts = module.split(".")
    return parts[2] if parts[:2] == ["cdpnb", "drivers"] and len(parts) > 2 else None


def _driver_violations(root: Path = ROOT) -> list[str]:
    """Imports of one driver's room by another (but WIP's of CDP's), and of any driver
    from above but where the driver is chosen."""
    found = []
    for path in sorted((root / "cdpnb").rglob("*.py")):
        relative = path.relative_to(root).as_posix()
        parts = relative.split("/")
        room = parts[2] if parts[1] == "drivers" and len(parts) > 3 else None
        seen: set[int] = set()
        for line, imported in _imports(path, root):
            target = _driver_room(imported)
            if target is None or target == room or line in seen:
                continue
            allowed = (DRIVER_MAY_IMPORT.get(room, set()) if room is not None
                       else set(DRIVER_MAY_IMPORT) if relative == CHOOSES_THE_DRIVER
                       else set())
            if target not in allowed:
                seen.add(line)
                found.append(f"{relative}:{line} imports {imported}")
    return found


def test_every_driver_has_its_room() -> None:
    rooms = {p.name for p in DRIVERS.iterdir() if (p / "__init__.py").exists()}
    assert rooms == set(DRIVER_MAY_IMPORT)


def test_a_driver_imports_no_other_driver_and_only_the_supervisor_chooses_one() -> None:
    assert _driver_violations() == []


def test_the_driver_checker_catches_a_driver_reaching_into_another(tmp_path: Path) -> None:
    package = tmp_path / "cdpnb"
    for room in ("cdp", "bidi", "wip"):
        (package / "drivers" / room).mkdir(parents=True)
    (package / "supervisor").mkdir()
    (package / "drivers" / "bidi" / "driver.py").write_text(
        "from cdpnb.drivers.cdp.actions import click\nfrom cdpnb.session.core import Core\n")
    (package / "drivers" / "wip" / "driver.py").write_text(
        "from cdpnb.drivers.cdp.driver import CDPDriver\n")
    (package / "supervisor" / "page_control.py").write_text(
        "from cdpnb.drivers.bidi.driver import D\n")
    (package / "supervisor" / "supervisor.py").write_text(
        "from cdpnb.drivers.bidi.driver import D\n")
    assert _driver_violations(tmp_path) == [
        "cdpnb/drivers/bidi/driver.py:1 imports cdpnb.drivers.cdp.actions",
        "cdpnb/supervisor/page_control.py:1 imports cdpnb.drivers.bidi.driver"]
