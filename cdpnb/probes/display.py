"""The HTML repr of a probe result: the matrix, coloured, every cell escaped; and its
pandas Styler (``result.style``), coloured alike, missing cells shown as the CLI shows
them.

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

__all__ = ["ProbeResultParts", "cell_colour", "cell_kind", "cell_symbol", "probe_html",
           "probe_styler"]


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


def probe_html(result: ProbeResultParts) -> str:
    # Capabilities as rows, backends as columns: a handful of columns fits any width.
    matrix = result.matrix_text().T
    head = "".join(f'<th style="padding:1px 6px;text-align:center;{WRAP}" '
                   f'title="{text(result.version_label(str(b)), 200)}">{text(b, 40)}</th>'
                   for b in matrix.columns)
    rows = []
    for capability, row in matrix.iterrows():
        cells = "".join(
            f'<td style="padding:1px 6px;text-align:center;background:{cell_colour(str(v))}" '
            f'title="{text(v, 1000)}">{text(cell_symbol(str(v)))}</td>' for v in row)
        rows.append(f'<tr><td style="padding:1px 6px;text-align:left">{text(capability)}</td>'
                    f"{cells}</tr>")
    surprises = len(result.surprises())
    note = (badge(f"{surprises} surprises", "#a33") if surprises
            else badge("as expected", "#2a7"))
    return (f'<div style="font-family:var(--jp-ui-font-family,sans-serif);font-size:12px">'
            f"<b>cdpnb probe</b> {len(result.backends)} backends, {len(result.results)} "
            f"checks {note} (hover a cell for its reason; <code>.view()</code> to browse)"
            f'<table style="{CSS}"><thead><tr><th style="padding:1px 6px;text-align:left">'
            f"capability</th>{head}</tr></thead>"
            f'<tbody>{"".join(rows)}</tbody></table></div>')


def probe_styler(result: ProbeResultParts) -> Styler:
    """``result.matrix()`` as a pandas Styler: each cell coloured as in the HTML repr,
    latencies with two decimals, and a cell with no value (NA in the typed matrix)
    showing what the CLI and ``view()`` show there (``✗`` for a check that failed,
    ``—`` for one that did not run) instead of pandas' ``nan``. Every label and cell is
    HTML-escaped (backend names can be URLs)."""
    import pandas as pd

    matrix = result.matrix()
    marks = result.matrix_text(reasons=False)
    latency = [c for c in result.latency_capabilities() if c in matrix.columns]
    styler = matrix.style.format(escape="html").format_index(escape="html", axis=0)
    styler = styler.format_index(escape="html", axis=1)
    if latency:
        styler = styler.format("{:.2f}", subset=pd.IndexSlice[:, latency], escape="html")
    for backend, capability in zip(*_missing(matrix), strict=True):
        styler = styler.format(na_rep=str(marks.loc[backend, capability]),
                               subset=pd.IndexSlice[[backend], [capability]])

    def colours(frame: pd.DataFrame) -> pd.DataFrame:
        return marks.loc[frame.index, frame.columns].map(
            lambda cell: f"background-color:{cell_colour(str(cell))};text-align:center")

    return styler.apply(colours, axis=None)


def _missing(matrix: pd.DataFrame) -> tuple[list[str], list[str]]:
    """(backends, capabilities) of the matrix's NA cells, pairwise."""
    na = matrix.isna().to_numpy()
    rows, columns = na.nonzero()
    return ([str(matrix.index[int(r)]) for r in rows],
            [str(matrix.columns[int(c)]) for c in columns])
