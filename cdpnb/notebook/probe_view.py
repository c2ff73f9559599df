"""``result.view()``: the capability matrix as a grid; a chosen cell shows its checks.

Capabilities are rows and backends columns (as ``result.matrix()``), each backend's
name upright above its column and each column as wide as its widest mark, so fourteen
backends fit a notebook at ordinary widths with nothing cut, broken mid-word or
overlapping. Its output's static snapshot shows the matrix and the cell chosen last
(``snapshot.py``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import ipywidgets as widgets
import pandas as pd

from cdpnb.notebook.snapshot import SnapshotDisplay
from cdpnb.notebook.static import widget_bundle
from cdpnb.probes.display import cell_kind, cell_symbol, probe_html, upright_name
from cdpnb.render import table, text

if TYPE_CHECKING:
    from cdpnb.probes import ProbeResult

__all__ = ["ProbeView"]

_STYLES = {"ok": "success", "fail": "danger", "partial": "warning", "none": "", "info": "info"}
_WRAP = "white-space:normal;line-height:1.25;word-break:break-word"
#: A capability's name wraps between its words only (its column is never narrower
#: than its longest word).
_WORDS = "white-space:normal;line-height:1.25"


class ProbeView:
    """One button per (backend, capability); clicking one fills ``detail``.

    ``cells`` maps (backend, capability) to its button, ``selected`` is the chosen
    pair, ``detail`` the HTML widget with that cell's checks (every run, status,
    expected status, reason, measured value) and the traces behind them; ``snapshot``
    is its output in the notebook.
    """

    def __init__(self, result: ProbeResult) -> None:
        self.result = result
        self.matrix = result.matrix_text()  # capabilities × backends, as displayed
        self.detail = widgets.HTML("<i>choose a cell to see its checks</i>",
                                   layout=widgets.Layout(width="100%"))
        self.selected: tuple[str, str] | None = None
        self.cells: dict[tuple[str, str], widgets.Button] = {}
        backends = [str(b) for b in self.matrix.columns]
        auto = widgets.Layout(height="auto", width="auto")
        items: list[widgets.Widget] = [widgets.HTML(
            '<div style="display:flex;align-items:flex-end;height:100%"><b>capability</b>'
            "</div>", layout=auto)]
        for backend in backends:
            label = f"{backend} {result.version_label(backend)}".strip()
            items.append(widgets.HTML(
                f'<div style="text-align:center" title="{text(label, 200)}">'
                f"{upright_name(result, backend)}</div>",
                layout=widgets.Layout(height="auto", width="auto", align_self="flex-end")))
        for capability in self.matrix.index:
            items.append(widgets.HTML(f'<div style="{_WORDS}">{text(capability, 40)}</div>',
                                      layout=auto))
            for backend in backends:
                cell = str(self.matrix.loc[capability, backend])
                button = widgets.Button(description=cell_symbol(cell), tooltip=cell[:500],
                                        button_style=_STYLES[cell_kind(cell)],
                                        layout=widgets.Layout(width="auto", height="24px",
                                                              padding="0 5px", margin="0"))
                key = (backend, str(capability))
                button.on_click(lambda _, key=key: self.select(*key))
                self.cells[key] = button
                items.append(button)
        # Each backend's column as wide as its widest button (its whole word: "unknown",
        # "classic"), never narrower: a fixed minimum cut them to "clas…" in a notebook
        # of ordinary width. The grid scrolls sideways where it is wider than the cell.
        self.grid = widgets.GridBox(items, layout=widgets.Layout(
            grid_template_columns=f"minmax(10em, max-content) repeat({len(backends)}, "
                                  "max-content)",
            grid_gap="2px 3px", align_items="center", width="100%", overflow="auto"))
        self.widget = widgets.VBox([self.grid, self.detail])
        self.snapshot = SnapshotDisplay(self.widget, self._snapshot)

    def select(self, backend: str, capability: str) -> None:
        """Show the checks behind one cell (what clicking it does)."""
        if (backend, capability) not in self.cells:
            raise KeyError(f"no cell ({backend!r}, {capability!r}); backends: "
                           f"{list(self.matrix.columns)}, capabilities: "
                           f"{list(self.matrix.index)}")
        self.selected = (backend, capability)
        checks = self.result.checks()
        mine = checks[(checks["backend"].astype(str) == backend)
                      & (checks["capability"].astype(str) == capability)]
        rows = [[r.check, r.run, r.status, r.expected, r.as_expected, r.detail,
                 _number(r.value), f"{r.seconds:.2f}"] for r in mine.itertuples(index=False)]
        traces = self.result.traces.get(backend, {})
        trace_list = "".join(f"<li>{text(mode)}: <code>{text(path, 300)}</code></li>"
                             for mode, path in traces.items())
        self.detail.value = (
            f'<div style="{_WRAP}"><b>{text(backend)}</b> · <b>{text(capability)}</b> — '
            f"{text(self.matrix.loc[capability, backend], 1000)}</div>"
            + table(("check", "run", "status", "expected", "as expected", "detail",
                     "value", "seconds"), rows, max_rows=40)
            + (f"traces:<ul>{trace_list}</ul>" if trace_list else ""))
        self.snapshot.changed()

    def static_html(self) -> str:
        """What the view shows, as HTML: the matrix, and the chosen cell's checks."""
        chosen = self.detail.value if self.selected is not None else ""
        return probe_html(self.result) + chosen

    def _snapshot(self) -> tuple[str, str]:
        return repr(self), self.static_html()

    def _ipython_display_(self) -> None:
        self.snapshot.show()

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        return widget_bundle(self.widget, repr(self), self.static_html(), **kwargs)

    def __repr__(self) -> str:
        return (f"<ProbeView {len(self.matrix)} capabilities × {len(self.matrix.columns)} "
                f"backends, selected={self.selected}>")


def _number(value: Any) -> str:
    return "" if value is None or pd.isna(value) else f"{float(value):.2f}"
