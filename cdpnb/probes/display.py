"""The HTML repr of a probe result: the matrix, coloured, every cell escaped; and its
pandas Styler (``result.style``), coloured alike, missing cells shown as the CLI shows
them. Both have capabilities as rows and backends as columns, as ``result.matrix()``.

Cell text can come from the far end (an endpoint's error message), so it is
treated as untrusted like any page text.
"""

from __future__ import annotations

from collections.abc import Sized
from typing import TYPE_CHECKING, Protocol

from cdpnb.render import CSS, WRAP, badge, clip, text

if TYPE_CHECKING:
    import pandas as pd
    from pandas.io.formats.style import Styler

__all__ = ["NOWRAP", "VERTICAL", "ProbeResultParts", "backend_header", "cell_colour",
           "cell_kind", "cell_symbol", "header_lines", "probe_html", "probe_styler",
           "short_version", "upright_name"]


class ProbeResultParts(Protocol):
    """What the reprs read of a probe result (``cdpnb.probes.run.ProbeResult``, whose
    ``_repr_html_`` and ``style`` call them: so this module does not import it back)."""

    @property
    def results(self) -> Sized: ...
    @property
    def backends(self) -> Sized: ...
    def matrix(self) -> pd.DataFrame: ...
    def matrix_text(self, *, reasons: bool = ...) -> pd.DataFrame: ...
    def surprises(self) -> pd.DataFrame: ...
    def latency_capabilities(self) -> list[str]: ...
    def version_label(self, backend: str) -> str: ...

_COLOURS = {"ok": "#dff3e6", "fail": "#f8dddd", "partial": "#fbefd5", "none": "#eeeeee",
            "info": "#e3ecf7"}


def cell_kind(cell: str) -> str:
    """``ok`` (✓ or a latency figure), ``fail``, ``partial``, ``none`` (not run), or
    ``info``: a word that says what the backend is or does (its protocol, site
    isolation), neither good nor bad."""
    if cell == "—":
        return "none"
    if cell.startswith("✗"):
        return "fail"
    if cell.startswith(("partial", "~")):
        return "partial"
    if cell == "✓" or cell[:1].isdigit():
        return "ok"
    return "info"


def cell_colour(cell: str) -> str:
    return _COLOURS[cell_kind(cell)]


def cell_symbol(cell: str) -> str:
    """What a matrix cell shows in a narrow grid: ✓, ✗, ~, a word, or the latency figure;
    a dialog seen and answered whose frame its protocol does not name (WebDriver
    classic's "seen, frame unknown") shows as ``frame?``, its words in the cell's title."""
    if cell.startswith("seen, frame unknown"):
        return "frame?"
    return {"fail": "✗", "partial": "~", "none": "—"}.get(cell_kind(cell), clip(cell, 8))


#: A backend's column header, upright text turned to read upwards: fourteen backends'
#: names side by side (``chromium+chromedriver+bidi``) do not fit a notebook, and a
#: header squeezed to its column's width broke them mid-word ("chromiu m").
VERTICAL = ("writing-mode:vertical-rl;transform:rotate(180deg);white-space:nowrap;"
            "text-align:left;line-height:1.15;display:inline-block")
#: A cell's mark, word or figure on one line, never cut or broken.
NOWRAP = "white-space:nowrap"


def short_version(version: str) -> str:
    """A column header's version: the number after the product's name, its major only
    when that has two digits or more (``Chrome/156.0.8078.108`` -> ``156``,
    ``WebKitGTK/2.50.6`` -> ``2.50``, ``Lightpanda/1.0`` -> ``1.0``).

    >>> short_version("Chrome/156.0.8078.108"), short_version("WebKitGTK/2.50.6")
    ('156', '2.50')
    """
    number = version.rpartition("/")[2].split(" ", 1)[0]
    parts = number.split(".")
    if len(parts[0].lstrip("v")) >= 2 or len(parts) == 1:
        return parts[0]
    return ".".join(parts[:2])


def header_lines(backend: str, version: str) -> list[str]:
    """A backend's header as lines: its name broken after each ``+`` (where it breaks
    naturally: ``chromium+``, ``chromedriver+``, ``bidi``), then its short version
    (``Chrome/156.0.8078.108`` -> ``156``; nothing when it said none).

    >>> header_lines("chromium+chromedriver+bidi", "Chrome/156.0.8078.108")
    ['chromium+', 'chromedriver+', 'bidi', '156']
    >>> header_lines("node", "")
    ['node']
    """

    parts = backend.replace("+", "+\n").split("\n")
    short = short_version(version) if version else ""
    return [*parts, *([short] if short else [])]


def upright_name(result: ProbeResultParts, backend: str) -> str:
    """A backend's name (bold) and short version (grey) upright, turned to read
    upwards (:data:`VERTICAL`), as HTML; escaped."""
    lines = header_lines(backend, result.version_label(backend))
    named = len(header_lines(backend, ""))
    shown = [f"<b>{text(line, 40)}</b>" for line in lines[:named]]
    shown += [f'<span style="color:#777;font-weight:normal">{text(line, 20)}</span>'
              for line in lines[named:]]
    return f'<div style="{VERTICAL}">{"<br>".join(shown)}</div>'


def backend_header(result: ProbeResultParts, backend: str) -> str:
    """A backend's column header: :func:`upright_name`, its whole version as the
    title; escaped."""
    label = f"{backend} {result.version_label(backend)}".strip()
    return (f'<th style="padding:2px 3px;text-align:center;vertical-align:bottom" '
            f'title="{text(label, 200)}">{upright_name(result, backend)}</th>')


def probe_html(result: ProbeResultParts) -> str:
    """The matrix as HTML: capabilities as rows (the latencies apart, below a rule),
    backends as columns under upright headers, every cell its mark, word or figure
    on one line (its reason as its title). Fourteen backends fit about 900 px."""
    matrix = result.matrix_text()
    latency = set(result.latency_capabilities())
    head = "".join(backend_header(result, str(b)) for b in matrix.columns)
    rows = []
    first_latency = True
    for capability, row in matrix.iterrows():
        cells = "".join(
            f'<td style="padding:1px 5px;text-align:center;{NOWRAP};'
            f'background:{cell_colour(str(v))}" title="{text(v, 1000)}">'
            f"{text(cell_symbol(str(v)))}</td>" for v in row)
        rule = ""
        if capability in latency and first_latency:
            rule, first_latency = "border-top:1px solid #999;", False
        rows.append(f'<tr style="{rule}"><td style="padding:1px 6px;text-align:left;'
                    f'white-space:normal;min-width:11em">{text(capability)}</td>{cells}</tr>')
    surprises = len(result.surprises())
    note = (badge(f"{surprises} surprises", "#a33") if surprises
            else badge("as expected", "#2a7"))
    return (f'<div style="font-family:var(--jp-ui-font-family,sans-serif);font-size:12px">'
            f'<div style="{WRAP}"><b>cdpnb probe</b> {len(result.backends)} backends, '
            f"{len(result.results)} checks {note} (hover a cell for its reason; "
            f"<code>.view()</code> to browse)</div>"
            f'<div style="overflow-x:auto"><table style="{CSS}"><thead><tr>'
            f'<th style="padding:1px 6px;text-align:left;vertical-align:bottom">'
            f"capability</th>{head}</tr></thead>"
            f'<tbody>{"".join(rows)}</tbody></table></div></div>')


def probe_styler(result: ProbeResultParts) -> Styler:
    """``result.matrix()`` as a pandas Styler (capabilities as rows, backends as
    columns): each cell coloured as in the HTML repr, latencies with two decimals, and
    a cell with no value (NA) showing what the CLI and ``view()`` show there (``✗`` for
    a check that failed, ``—`` for one that did not run) instead of pandas' ``nan``.
    Every label and cell is HTML-escaped (backend names can be URLs)."""
    import pandas as pd

    matrix = result.matrix()
    marks = result.matrix_text(reasons=False)
    latency = [c for c in result.latency_capabilities() if c in matrix.index]
    styler = matrix.style.format(escape="html").format_index(escape="html", axis=0)
    # Backends' names upright, broken after each "+", as the HTML repr's (escaped first:
    # pandas escapes a label before the formatter sees it; the <br> is ours).
    styler = styler.format_index(lambda name: "<br>".join(str(name).replace("+", "+\n")
                                                          .split("\n")),
                                 escape="html", axis=1)
    styler = styler.set_table_styles([
        {"selector": "th.col_heading", "props": f"{VERTICAL};display:table-cell;"
                                                 "vertical-align:bottom;padding:2px 3px"}])
    if latency:
        styler = styler.format("{:.2f}", subset=pd.IndexSlice[latency, :], escape="html",
                               na_rep="")
    for capability, backend in zip(*_missing(matrix), strict=True):
        styler = styler.format(na_rep=str(marks.loc[capability, backend]),
                               subset=pd.IndexSlice[[capability], [backend]])

    def colours(frame: pd.DataFrame) -> pd.DataFrame:
        return marks.loc[frame.index, frame.columns].map(
            lambda cell: f"background-color:{cell_colour(str(cell))};text-align:center;"
                         f"{NOWRAP}")

    return styler.apply(colours, axis=None)


def _missing(matrix: pd.DataFrame) -> tuple[list[str], list[str]]:
    """(rows, columns) of the matrix's NA cells, pairwise: (capabilities, backends)."""
    na = matrix.isna().to_numpy()
    rows, columns = na.nonzero()
    return ([str(matrix.index[int(r)]) for r in rows],
            [str(matrix.columns[int(c)]) for c in columns])
