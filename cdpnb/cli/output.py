"""What the CLI prints: rich tables that fit the terminal, JSON, status lines.

Tables go to stdout; progress, hints and status lines to stderr, so ``--json``
output (and a table piped to a file) stays clean.

Every string printed passes :func:`cdpnb.terminal_text.inert` (:class:`InertConsole`,
:func:`print_json`, :class:`InertLogHandler`): a page, an endpoint or a trace cannot
steer the terminal.

Output is laid out for the terminal's width (``COLUMNS`` when there is no terminal) so
that copy-paste keeps every token whole: a :class:`Grid` narrows its columns by wrapping
at spaces, never below a column's longest word (a trace path, a method name, a version);
when that does not fit it turns sections into heading rows, then splits the value
columns into tables side by side, then prints each row as indented lines; a word wider
than the terminal goes whole on a line of its own (the terminal wraps it softly, and a
copy of it is one line). Status lines break between their `` · `` parts, never in one.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import re
import sys
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rich import box
from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, RenderableType, RenderResult
from rich.file_proxy import FileProxy
from rich.progress import Progress
from rich.segment import Segment
from rich.style import Style
from rich.table import Table
from rich.text import Text

from cdpnb.probes.checks import FRAME_UNKNOWN
from cdpnb.probes.display import cell_kind, header_lines
from cdpnb.terminal_text import inert, inert_json

if TYPE_CHECKING:
    import pandas as pd
    from _typeshed import SupportsWrite

    from cdpnb.probes import ProbeResult

__all__ = ["Grid", "InertConsole", "InertLogHandler", "InertParser", "LabelledProgress",
           "Paragraphs", "Words", "compare_table", "err", "fit_widths", "legend", "lines",
           "logging_to_stderr", "matrix_table", "matrix_tables", "out", "print_json", "reason",
           "reasons_table", "redraws", "show_warning", "text"]

_MARKS = {"✓": "green", "✗": "red", "~": "yellow", "—": "dim"}
LEGEND = ("✓ works  ~ partly  ✗ does not  words: how the engine does it  figures: median ms\n"
          "(--reasons says why, cdpnb matrix --json has every check)")
#: The legend's line for a matrix that shows ``frame?`` (:func:`legend`).
FRAME_LEGEND = "frame?: seen and answered, its frame unknown (WebDriver classic names none)"
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

    def _render_buffer(self, buffer: Iterable[Segment]) -> str:
        """What rich writes, each line without the spaces rich pads it with (a table's
        cells are padded to their column's width): piped to a file or ``diff``, a line
        ends where its text does. A redrawn progress bar or status line (cursor
        control in it) is left as drawn."""
        segments = list(buffer)
        rendered = super()._render_buffer(segments)
        if any(segment.control for segment in segments):
            return rendered
        return _TRAILING.sub(lambda m: "".join(_SGR.findall(m.group())), rendered)

    def print(self, *objects: Any, sep: str = " ", crop: bool = False,
              soft_wrap: bool | None = None, **options: Any) -> None:
        """rich's ``print``, but words stay whole: strings are wrapped at spaces only,
        with or without ``soft_wrap`` (rich folds a word wider than the terminal, a trace
        path, into pieces; ``soft_wrap`` leaves the terminal to cut a line anywhere), and
        a line wider than the terminal is printed whole (one word too wide for any line:
        the terminal wraps it, a copy of it is one line), not cropped, which would lose
        it silently."""
        if objects and all(isinstance(o, str) for o in objects):
            objects = (Paragraphs(sep.join(objects)),)
            options.pop("overflow", None)
        proxy = self._file
        if isinstance(proxy, FileProxy):
            # Made while a status line or a progress bar is drawn (rich's Live puts a
            # FileProxy on sys.stderr): a Console writes past the proxy to the terminal,
            # onto the drawn line; the proxy prints it above the drawing instead.
            with self.capture() as captured:
                super().print(*objects, sep=sep, crop=crop, soft_wrap=soft_wrap, **options)
            proxy.write(captured.get())
            return
        super().print(*objects, sep=sep, crop=crop, soft_wrap=soft_wrap, **options)


#: Styles are rendered as SGR sequences (``ESC[1m``), made by rich itself: what a page
#: sends is made inert before, so every ESC in the rendered text is one of these.
_SGR = re.compile(r"\x1b\[[0-9;]*m")
#: A line's trailing spaces, with the style changes among them (kept, without spaces).
_TRAILING = re.compile(r"(?:[ \t]|\x1b\[[0-9;]*m)*[ \t](?:[ \t]|\x1b\[[0-9;]*m)*(?=\n)")


class InertParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose every message (a usage error quoting an argument as
    typed, ``unrecognized arguments: <ESC>[31m``; the usage line; ``-h``) goes through
    :func:`cdpnb.terminal_text.inert`: an argument cannot steer the terminal either.
    Its subcommands' parsers are of this class too (``add_subparsers`` makes them of the
    parser's own type); the exit statuses are argparse's (2 for a usage error)."""

    def _print_message(self, message: str, file: SupportsWrite[str] | None = None) -> None:
        # Every message argparse prints (error, exit, print_usage, print_help, the
        # version action) goes through here.
        super()._print_message(inert(message) if message else message, file)


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


def redraws(console: Console) -> bool:
    """Whether a progress bar or status line can be redrawn in place on ``console``: a
    terminal that takes cursor control (not ``TERM=dumb``). Elsewhere (a CI log, a pipe)
    progress is plain lines, one per event; colour follows ``NO_COLOR`` (rich's own)."""
    return console.is_terminal and not console.is_dumb_terminal


def print_json(value: Any) -> None:
    """One JSON document on stdout (NaN and NA as null), inert: the characters that
    could steer a terminal written as ``\\uXXXX`` escapes (the same JSON)."""
    sys.stdout.write(inert_json(json.dumps(_plain(value), indent=1, ensure_ascii=False))
                     + "\n")
    sys.stdout.flush()


class InertLogHandler(logging.Handler):
    """cdpnb's log records as ``cdpnb: …`` lines on stderr, inert: a record quotes what
    the far end sent (a bad frame, a method name, a URL), and Python's last-resort
    handler would print it raw."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            line = self.format(record)
            err().print(line, style="yellow" if record.levelno < logging.ERROR else "red",
                        soft_wrap=True)
        except Exception:  # a log line must not end the command
            self.handleError(record)


@contextmanager
def logging_to_stderr() -> Iterator[None]:
    """While the CLI runs: the ``cdpnb`` logger's warnings and errors through
    :class:`InertLogHandler` (and no longer to the last-resort handler)."""
    logger = logging.getLogger("cdpnb")
    handler = InertLogHandler(logging.WARNING)
    logger.addHandler(handler)
    try:
        yield
    finally:
        logger.removeHandler(handler)


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


def _header_lines(result: ProbeResult, backend: str) -> list[str]:
    """A backend's column header: its name broken after each ``+``, its short version
    (``156``, not ``156.0.8078.108``: the narrower, the more backends side by side),
    and ``replayed`` for a replayed one."""
    info = result.backends.get(backend, {})
    lines = header_lines(backend, str(info.get("version", "")))
    return [*lines, *(["replayed"] if info.get("replayed") else [])]


def _backend_header(result: ProbeResult, backend: str) -> Text:
    lines = _header_lines(result, backend)
    named = len(header_lines(backend, ""))  # the name's lines; the rest are dim
    label = text("\n".join(lines[:named]), style="bold")
    for line in lines[named:]:
        label.append(inert(f"\n{line}"), style="dim")
    return label


def legend(matrix: pd.DataFrame) -> str:
    """What the marks under ``matrix`` mean (:data:`LEGEND`), and ``frame?`` where a
    cell shows it."""
    if any(str(cell).startswith(FRAME_UNKNOWN) for cell in matrix.to_numpy().ravel()):
        first, rest = LEGEND.split("\n", 1)
        return f"{first}\n{FRAME_LEGEND}\n{rest}"
    return LEGEND


def _mark(cell: str) -> Text:
    return text(cell, style=_MARKS.get(cell[:1], ""))


def _shown(cell: str) -> str:
    """A mark as the matrix shows it: WebDriver classic's ``seen, frame unknown`` as
    ``frame?`` (as the HTML shows it; the legend says what it means), anything after
    it (``…``: some of its checks did not run) kept."""
    if cell.startswith(FRAME_UNKNOWN):
        return "frame?" + cell[len(FRAME_UNKNOWN):]
    return cell


#: The capability column's width at most: a longer name wraps between its words
#: (``evaluate RTT with`` / ``Debugger on ms``), and the room goes to backends.
_CAPABILITY_WIDTH = 20


def _capability_width(matrix: pd.DataFrame) -> int:
    names = [str(c) for c in matrix.index]
    longest_word = max((len(w) for name in names for w in name.split()), default=0)
    widest = max([len("capability"), *(len(name) for name in names)])
    return min(widest, max(_CAPABILITY_WIDTH, longest_word))


def matrix_tables(result: ProbeResult, width: int, matrix: pd.DataFrame | None = None
                  ) -> list[Table]:
    """The matrix as tables no wider than ``width``: as many backends side by side as
    fit (each table repeats the capability column), so fourteen backends read well at
    80 columns as three tables. ``matrix``: the cells to show, capabilities × backends
    (default ``result.matrix_text(reasons=False)``; a partial probe marks what did not
    run)."""
    if matrix is None:
        matrix = result.matrix_text(reasons=False)
    label = _capability_width(matrix) + _GAP
    chunks: list[list[str]] = [[]]
    used = label
    for backend in (str(b) for b in matrix.columns):
        cells = [_shown(str(v)) for v in matrix[backend]]
        needed = max(len(line) for line in [*_header_lines(result, backend), *cells]) + _GAP
        if chunks[-1] and used + needed > width:
            chunks.append([])
            used = label
        chunks[-1].append(backend)
        used += needed
    return [matrix_table(result, chunk, matrix) for chunk in chunks]


def matrix_table(result: ProbeResult, backends: list[str] | None = None,
                 matrix: pd.DataFrame | None = None) -> Table:
    """Capabilities as rows, backends (all, or ``backends``) as columns: the protocol,
    ✓ / ~ / ✗, the words of findings (site isolation; ``frame?``: seen and answered,
    its frame unknown) and latency figures, the latencies below a rule (``matrix``: as
    in :func:`matrix_tables`)."""
    if matrix is None:
        matrix = result.matrix_text(reasons=False)
    if backends is not None:
        matrix = matrix[backends]
    latency = set(result.latency_capabilities())
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False, expand=False)
    table.add_column("capability", overflow="fold", max_width=_capability_width(matrix),
                     vertical="middle")
    for backend in matrix.columns:
        table.add_column(_backend_header(result, str(backend)), justify="center",
                         overflow="fold", vertical="middle")
    rows = [c for c in matrix.index if c not in latency]
    for i, capability in enumerate([*rows, *[c for c in matrix.index if c in latency]]):
        table.add_row(str(capability),
                      *(_mark(_shown(str(v))) for v in matrix.loc[capability]),
                      end_section=i == len(rows) - 1)
    return table


def reasons_table(result: ProbeResult) -> Grid:
    """Why each cell is not ✓, wrapped; capabilities failing for the same reason on
    one backend share a row."""
    matrix = result.matrix_text(reasons=True)
    rows: list[tuple[Text, ...]] = []
    for backend, column in matrix.items():
        grouped: dict[str, list[str]] = {}
        for capability, cell in column.items():
            why = str(cell)
            if cell_kind(why) in ("fail", "partial"):  # a mark, a word or a figure needs no why
                grouped.setdefault(why, []).append(str(capability))
        for why, capabilities in grouped.items():
            rows.append((text(str(backend)), text(", ".join(capabilities)), _mark(why)))
    return Grid(rows, headers=(text("backend"), text("capabilities"), text("why")),
                sections=True, keys=2, weights=(1, 1, 3))


def compare_table(frame: pd.DataFrame) -> Grid:
    """``cdpnb.compare``'s table: one row per (section, item), one column per trace (side
    by side as far as the width allows: see :class:`Grid`)."""
    rows = []
    for key, row in frame.iterrows():
        section, item = key if isinstance(key, tuple) else ("", key)
        rows.append((text(str(section)), text(str(item)), *(text(_cell(v)) for v in row)))
    return Grid(rows, headers=(text("section"), text("item"),
                               *(text(str(label)) for label in frame.columns)),
                boxed=True, sections=True, keys=2,
                weights=(1, 3, *([2] * len(frame.columns))))


def _cell(value: Any) -> str:
    plain = _plain(value)
    return "—" if plain is None else str(plain)


def lines(items: Iterable[tuple[str, str]]) -> Grid:
    """Two wrapped columns without borders (``name  what``), or, when the words of both
    do not fit side by side, each name on a line with what it says indented below."""
    return Grid([(text(name), text(what)) for name, what in items])


# -- layout --------------------------------------------------------------------------------

#: Columns between two cells: rich's padding of 1 on each side, and SIMPLE_HEAD's rule.
_PLAIN_GAP, _BOXED_GAP = 2, 3


def fit_widths(naturals: Sequence[int], floors: Sequence[int], room: int,
               weights: Sequence[float] | None = None) -> list[int] | None:
    """Column widths summing to at most ``room``: each column's natural width (its widest
    line), the widest (for its ``weight``) narrowed first, none below its floor (its
    longest word); None when the floors alone do not fit.

    >>> fit_widths([40, 10], [12, 4], 30)
    [20, 10]
    >>> fit_widths([40, 40], [4, 4], 40, weights=[1, 3])
    [10, 30]
    >>> fit_widths([40, 10], [32, 4], 30) is None
    True
    """
    weights = [1.0] * len(naturals) if weights is None else list(weights)
    if not len(naturals) == len(floors) == len(weights):
        raise ValueError(f"naturals, floors and weights differ in length: {len(naturals)}, "
                         f"{len(floors)} and {len(weights)}")
    if any(w <= 0 for w in weights):
        raise ValueError(f"weights must be > 0, got {weights}")
    floors = [min(floor, natural) for floor, natural in zip(floors, naturals, strict=True)]
    if sum(floors) > room:
        return None
    widths = list(naturals)
    while sum(widths) > room:
        narrowable = [i for i, w in enumerate(widths) if w > floors[i]]
        widest = max(narrowable, key=lambda i: widths[i] / weights[i])
        widths[widest] -= 1
    return widths


def _widest_line(cell: Text) -> int:
    return max((cell_len(line) for line in cell.plain.split("\n")), default=0)


def _longest_word(cell: Text) -> int:
    return max((cell_len(word) for word in cell.plain.split()), default=0)


def _wrapped(value: str, width: int, indent: str = "") -> list[str]:
    """``value`` wrapped at spaces to ``width`` terminal cells, every word whole (one
    wider than ``width`` on a line of its own), each line after ``indent``; a line's
    leading spaces and the spaces between words kept.

    >>> _wrapped("  median ms: Page.setLifecycleEventsEnabled 27.9", 24)
    ['  median ms:', 'Page.setLifecycleEventsEnabled', '27.9']
    """
    out: list[str] = []
    for paragraph in value.expandtabs().split("\n"):
        line, space, started = indent, "", False
        for piece in _PIECES.findall(paragraph):
            if piece.isspace():
                space = piece
                continue
            if started and cell_len(line + space + piece) > width:
                out.append(line)
                line, space = indent, ""
            line += space + piece
            space, started = "", True
        out.append(line if started else indent.rstrip())
    return out


_PIECES = re.compile(r"\S+|\s+")


@dataclass(frozen=True)
class Paragraphs:
    """Text wrapped when printed, at spaces only (every word whole), made inert."""

    text: str

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield _Lines(tuple((line, "") for line in _wrapped(inert(self.text),
                                                            options.max_width)))


@dataclass(frozen=True)
class _Lines:
    """Lines printed as they are (inert): none is wrapped or cut by rich."""

    lines: tuple[tuple[str, Style | str], ...]

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        for line, style in self.lines:
            yield Segment(inert(line), console.get_style(style) if style else None)
            yield Segment.line()


@dataclass(frozen=True)
class Grid:
    """Rows of cells, laid out when printed for the width they get, every word whole.

    In order, the first that fits: (1) one table, each column as wide as its widest
    line, narrowed (wrapping at spaces) down to its longest word at most; (2) with
    ``sections``, column 0 (a section name, shown where it changes) as a heading row
    instead of a column; (3) the value columns (those after the ``keys`` columns that
    name a row) split into tables that each repeat the keys; (4) each row as lines: its
    keys, then each value indented (``header: value``), words whole. ``weights`` share
    out the narrowing (a column of weight 3 keeps three times the width of one of 1).
    """

    rows: Sequence[Sequence[Text]]
    headers: Sequence[Text] | None = None
    boxed: bool = False
    sections: bool = False
    keys: int = 1
    weights: Sequence[float] | None = None

    def __post_init__(self) -> None:
        if self.keys < 1:
            raise ValueError(f"keys must be at least 1, got {self.keys}")
        object.__setattr__(self, "rows", [tuple(row) for row in self.rows])

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield from self.layout(options.max_width)

    @property
    def _columns(self) -> int:
        if self.headers is not None:
            return len(self.headers)
        return max((len(row) for row in self.rows), default=0)

    def layout(self, width: int) -> list[RenderableType]:
        """What is printed at ``width`` columns: tables, or lines (see the class)."""
        every = list(range(self._columns))
        whole = self._table(every, width, headings=False)
        if whole is not None:
            return [whole]
        keys = every[1:self.keys] if self.sections else every[:self.keys]
        if self.sections and len(every) > 1:
            headed = self._table(every[1:], width, headings=True)
            if headed is not None:
                return [headed]
        values = every[self.keys:]
        if len(values) > 1 and keys:
            chunks: list[list[int]] = [[]]
            for value in values:
                if chunks[-1] and self._widths([*keys, *chunks[-1], value], width,
                                               self.sections) is None:
                    chunks.append([])
                chunks[-1].append(value)
            tables = [self._table([*keys, *chunk], width, self.sections) for chunk in chunks]
            fitted = [t for t in tables if t is not None]
            if len(fitted) == len(tables):
                parts: list[RenderableType] = []
                for i, table in enumerate(fitted):
                    parts += [Text(""), table] if i else [table]
                return parts
        return [self._stacked(width)]

    def _cells(self, column: int, headings: bool, first: bool) -> list[Text]:
        cells = [row[column] for row in self.rows if column < len(row)]
        if self.headers is not None:
            cells.append(self.headers[column])
        if headings and first:
            cells += [row[0] for row in self.rows]
        return cells

    def _widths(self, columns: list[int], width: int, headings: bool) -> list[int] | None:
        naturals, floors = [], []
        for i, column in enumerate(columns):
            cells = self._cells(column, headings, i == 0)
            naturals.append(max((_widest_line(c) for c in cells), default=0))
            floors.append(max((_longest_word(c) for c in cells), default=0))
        gap = _BOXED_GAP if self.boxed else _PLAIN_GAP
        weights = None if self.weights is None else [self.weights[c] for c in columns]
        return fit_widths(naturals, floors, width - gap * (len(columns) - 1), weights)

    def _table(self, columns: list[int], width: int, headings: bool) -> Table | None:
        widths = self._widths(columns, width, headings)
        if widths is None:
            return None
        table = Table(box=box.SIMPLE_HEAD if self.boxed else None, pad_edge=False,
                      show_edge=False, expand=False, show_header=self.headers is not None)
        for column, column_width in zip(columns, widths, strict=True):
            header = self.headers[column] if self.headers is not None else ""
            table.add_column(header, width=column_width, overflow="fold")
        last: str | None = None
        for n, row in enumerate(self.rows):
            cells = [row[c] if c < len(row) else Text("") for c in columns]
            if self.sections:
                section = row[0].plain
                if n and section != last:
                    table.add_section()
                if headings and section and section != last:
                    table.add_row(Text(section, style="bold"), *[""] * (len(columns) - 1))
                if not headings and section == last:
                    cells[0] = Text("")
                last = section
            table.add_row(*cells)
        return table

    def _stacked(self, width: int) -> _Lines:
        out: list[tuple[str, Style | str]] = []
        last: str | None = None
        first_key = 1 if self.sections else 0
        for row in self.rows:
            if self.sections and row[0].plain != last:
                if last is not None:
                    out.append(("", ""))
                last = row[0].plain
                out += [(line, "bold") for line in _wrapped(last, width)]
            name = " ".join(c.plain for c in row[first_key:self.keys] if c.plain)
            indent = "  " if self.sections else ""
            out += [(line, "") for line in _wrapped(name, width, indent)]
            for column in range(self.keys, len(row)):
                header = self.headers[column].plain if self.headers is not None else ""
                label = f"{' '.join(header.split())}: " if header else ""
                out += [(line, row[column].style) for line in
                        _wrapped(label + row[column].plain, width, indent + "  ")]
        return _Lines(tuple(out))


@dataclass(frozen=True)
class Words:
    """A status line, broken between its parts (``separator``) where the terminal is
    narrower, never inside one: ``recording 3.1 s · 1204 messages · …``."""

    line: str
    separator: str = " · "
    style: str = ""

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        lines: list[str] = []
        for part in inert(self.line).split(self.separator):
            joined = f"{lines[-1]}{self.separator}{part}" if lines else part
            if lines and cell_len(joined) <= options.max_width:
                lines[-1] = joined
            else:
                lines.append(part)
        yield _Lines(tuple((line, self.style) for line in lines))


class LabelledProgress(Progress):
    """A rich progress bar with a line below it that says what runs now (``label``),
    broken at spaces, never cut: a column beside the bar had room for half of
    ``http://127.0.0.1:9222: dialog.confirm.cross_site`` at 80 columns."""

    label: str = ""

    def get_renderables(self) -> Iterable[RenderableType]:
        yield from super().get_renderables()
        if self.label:
            yield Words(self.label, separator=" ", style="dim")
