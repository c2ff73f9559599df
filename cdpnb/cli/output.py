"""What the CLI prints: rich tables that fit the terminal, JSON, status lines.

Tables go to stdout; progress, hints and status lines to stderr, so ``--json``
output (and a table piped to a file) stays clean. rich fits every table to the
terminal's width (``COLUMNS`` when there is no terminal) by wrapping cells.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from cdpnb.probes.display import cell_kind
from cdpnb.terminal_text import inert

if TYPE_CHECKING:
    import pandas as pd

    from cdpnb.probes import ProbeResult

__all__ = ["InertConsole", "compare_table", "err", "matrix_table", "matrix_tables", "out",
           "print_json", "reason", "reasons_table", "show_warning", "text"]

_MARKS = {"✓": "green", "✗": "red", "~": "yellow"}
LEGEND = ("✓ works  ~ partly  ✗ does not  words: how the engine does it  figures: median ms\n"
          "(--reasons says why, cdpnb matrix --json has every check)")
#: Columns each backend column costs beyond its widest line: rich's padding (1 on each
#: side) and one more; with 2, seven backends were laid out for 120 columns that needed
#: 123, and rich folded the capability names (measured with rich 15).
_GAP = 3


class InertConsole(Console):
    """A console on which no printed string can steer the terminal: every string it
    renders goes through :func:`cdpnb.terminal_text.inert`, and none is read as rich
    markup or emoji codes (page text such as ``[link=…]`` stays text). cdpnb styles
    its own output with ``style=``, never with markup."""

    def __init__(self, **options: Any) -> None:
        super().__init__(markup=False, emoji=False, highlight=False, **options)

    def render_str(self, text: str, **options: Any) -> Text:
        return super().render_str(inert(text), **options)


def text(value: str, **options: Any) -> Text:
    """A rich ``Text`` of ``value`` made inert (for text built outside ``print``)."""
    return Text(inert(value), **options)


def reason(exc: BaseException) -> str:
    """Why something failed, in words (no Python class names): an OSError's own words
    (``No such file or directory``), a missing key named, else the message."""
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    if isinstance(exc, KeyError):
        return f"it has no {exc.args[0]!r}" if exc.args else "a key is missing"
    text = str(exc)
    return text or type(exc).__name__


def show_warning(message: Warning | str, category: type[Warning], filename: str,
                 lineno: int, file: Any = None, line: str | None = None) -> None:
    """``warnings.showwarning`` for the CLI: ``warning: …`` on stderr, not a source line."""
    err().print(f"warning: {message}", style="yellow")


def out() -> Console:
    """The console for results (stdout)."""
    return InertConsole(file=sys.stdout, soft_wrap=False)


def err() -> Console:
    """The console for progress, hints and status (stderr)."""
    return InertConsole(file=sys.stderr, soft_wrap=False)


def print_json(value: Any) -> None:
    """One JSON document on stdout (NaN and NA as null)."""
    sys.stdout.write(json.dumps(_plain(value), indent=1, ensure_ascii=False) + "\n")
    sys.stdout.flush()


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if value is None or isinstance(value, str | int | float | bool):
        return value
    try:
        import pandas as pd

        if pd.isna(value):
            return None
    except (TypeError, ValueError):
        pass
    if hasattr(value, "item"):  # numpy scalars
        return _plain(value.item())
    return str(value)


def _header_parts(result: ProbeResult, backend: str) -> tuple[str, str, bool]:
    """(name, broken where it breaks naturally; version number; replayed)."""
    info = result.backends.get(backend, {})
    version = str(info.get("version", "")).rpartition("/")[2]
    # Long names break where they break naturally: "chromium+", "playwright".
    name = backend.replace("+", "+\n").replace("-", "-\n") if len(backend) > 10 else backend
    return name, version, bool(info.get("replayed"))


def _header_lines(result: ProbeResult, backend: str) -> list[str]:
    name, version, replayed = _header_parts(result, backend)
    return [*name.split("\n"), version, "replayed" if replayed else ""]


def _backend_header(result: ProbeResult, backend: str) -> Text:
    name, version, replayed = _header_parts(result, backend)
    label = text(name, style="bold")
    if version:
        label.append(inert(f"\n{version}"), style="dim")
    if replayed:
        label.append("\nreplayed", style="dim")
    return label


def _mark(cell: str) -> Text:
    return text(cell, style=_MARKS.get(cell[:1], ""))


def matrix_tables(result: ProbeResult, width: int) -> list[Table]:
    """The matrix as tables no wider than ``width``: as many backends side by side as
    fit (each table repeats the capability column), so eight backends read well at
    80 columns as two tables of four."""
    matrix = result.matrix_text(reasons=False)
    label = max([len("capability"), *(len(str(c)) for c in matrix.columns)])
    chunks: list[list[str]] = [[]]
    used = label
    for backend in (str(b) for b in matrix.index):
        cells = [str(v) for v in matrix.loc[backend]]
        needed = max(len(line) for line in [*_header_lines(result, backend), *cells]) + _GAP
        if chunks[-1] and used + needed > width:
            chunks.append([])
            used = label
        chunks[-1].append(backend)
        used += needed
    return [matrix_table(result, chunk) for chunk in chunks]


def matrix_table(result: ProbeResult, backends: list[str] | None = None) -> Table:
    """Capabilities as rows, backends (all, or ``backends``) as columns: the protocol,
    ✓ / ~ / ✗, the words of findings (site isolation) and latency figures."""
    matrix = result.matrix_text(reasons=False)
    if backends is not None:
        matrix = matrix.loc[backends]
    latency = set(result.latency_capabilities())
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False, expand=False)
    table.add_column("capability", overflow="fold")
    for backend in matrix.index:
        table.add_column(_backend_header(result, str(backend)), justify="center",
                         overflow="fold")
    rows = [c for c in matrix.columns if c not in latency]
    for i, capability in enumerate([*rows, *[c for c in matrix.columns if c in latency]]):
        table.add_row(str(capability), *(_mark(str(v)) for v in matrix[capability]),
                      end_section=i == len(rows) - 1)
    return table


def reasons_table(result: ProbeResult) -> Table:
    """Why each cell is not ✓, wrapped; capabilities failing for the same reason on
    one backend share a row."""
    matrix = result.matrix_text(reasons=True)
    table = Table(box=None, show_header=True, pad_edge=False, expand=False)
    table.add_column("backend", overflow="fold", ratio=1)
    table.add_column("capabilities", overflow="fold", ratio=1)
    table.add_column("why", overflow="fold", ratio=3)
    for backend, row in matrix.iterrows():
        grouped: dict[str, list[str]] = {}
        for capability, cell in row.items():
            text = str(cell)
            if cell_kind(text) in ("fail", "partial"):  # a mark, a word or a figure needs no why
                grouped.setdefault(text, []).append(str(capability))
        for text, capabilities in grouped.items():
            table.add_row(str(backend), ", ".join(capabilities), _mark(text))
    return table


def compare_table(frame: pd.DataFrame) -> Table:
    """``cdpnb.compare``'s table: one row per (section, item), one column per trace."""
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False, expand=False)
    table.add_column("section", overflow="fold")
    table.add_column("item", overflow="fold", ratio=3)
    for label in frame.columns:
        table.add_column(str(label), overflow="fold", ratio=2)
    last = None
    for key, row in frame.iterrows():
        section, item = key if isinstance(key, tuple) else ("", key)
        shown = section if section != last else ""
        if last is not None and section != last:
            table.add_section()
        last = section
        table.add_row(str(shown), str(item), *(_cell(v) for v in row))
    return table


def _cell(value: Any) -> str:
    plain = _plain(value)
    return "—" if plain is None else str(plain)


def lines(items: Iterable[tuple[str, str]], width: int = 20) -> Table:
    """Two wrapped columns without borders (``name  what``)."""
    table = Table(box=None, show_header=False, pad_edge=False)
    table.add_column(min_width=min(width, 20), overflow="fold")
    table.add_column(overflow="fold", ratio=1)
    for name, what in items:
        table.add_row(name, what)
    return table
