"""``result.view()``: the capability matrix as a grid; a chosen cell shows its checks."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import ipywidgets as widgets
import pandas as pd

from cdpnb.probes.display import cell_kind, cell_symbol
from cdpnb.render import table, text

if TYPE_CHECKING:
    from cdpnb.probes import ProbeResult

__all__ = ["ProbeView"]

_STYLES = {"ok": "success", "fail": "danger", "partial": "warning", "none": ""}


class ProbeView:
    """One button per (backend, capability); clicking one fills ``detail``.

    ``cells`` maps (backend, capability) to its button, ``selected`` is the chosen
    pair, ``detail`` the HTML widget with that cell's checks (every run, status,
    expected status, reason, measured value) and the traces behind them.
    """

    def __init__(self, result: ProbeResult) -> None:
        self.result = result
        self.matrix = result.matrix_text()
        self.detail = widgets.HTML("<i>choose a cell to see its checks</i>")
        self.selected: tuple[str, str] | None = None
        self.cells: dict[tuple[str, str], widgets.Button] = {}
        capabilities = [str(c) for c in self.matrix.columns]
        items: list[widgets.Widget] = [widgets.HTML("<b>backend</b>")]
        items += [widgets.HTML(f"<b>{text(c, 30)}</b>") for c in capabilities]
        for backend, row in self.matrix.iterrows():
            items.append(widgets.HTML(text(backend, 40)))
            for capability in capabilities:
                cell = str(row[capability])
                button = widgets.Button(description=cell_symbol(cell), tooltip=cell[:500],
                                        button_style=_STYLES[cell_kind(cell)],
                                        layout=widgets.Layout(width="auto"))
                key = (str(backend), capability)
                button.on_click(lambda _, key=key: self.select(*key))
                self.cells[key] = button
                items.append(button)
        self.grid = widgets.GridBox(items, layout=widgets.Layout(
            grid_template_columns=f"10em repeat({len(capabilities)}, minmax(3em, 1fr))",
            grid_gap="2px"))
        self.widget = widgets.VBox([self.grid, self.detail])

    def select(self, backend: str, capability: str) -> None:
        """Show the checks behind one cell (what clicking it does)."""
        if (backend, capability) not in self.cells:
            raise KeyError(f"no cell ({backend!r}, {capability!r}); backends: "
                           f"{list(self.matrix.index)}, capabilities: "
                           f"{list(self.matrix.columns)}")
        self.selected = (backend, capability)
        checks = self.result.checks()
        mine = checks[(checks["backend"].astype(str) == backend)
                      & (checks["capability"].astype(str) == capability)]
        rows = [[r.check, r.run, r.status, r.expected, r.as_expected, r.detail,
                 _number(r.value),
                 f"{r.seconds:.2f}"] for r in mine.itertuples(index=False)]
        traces = self.result.traces.get(backend, {})
        trace_list = "".join(f"<li>{text(mode)}: <code>{text(path, 300)}</code></li>"
                             for mode, path in traces.items())
        self.detail.value = (
            f"<b>{text(backend)}</b> · <b>{text(capability)}</b> — "
            f"{text(self.matrix.loc[backend, capability], 1000)}"
            + table(("check", "run", "status", "expected", "as expected", "detail",
                     "value", "seconds"), rows, max_rows=40)
            + (f"traces:<ul>{trace_list}</ul>" if trace_list else ""))

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        bundle = self.widget._repr_mimebundle_(**kwargs)
        if isinstance(bundle, dict):  # the widget's own text is its whole child list
            bundle["text/plain"] = repr(self)
        return bundle

    def __repr__(self) -> str:
        return (f"<ProbeView {len(self.matrix)} backends × {len(self.matrix.columns)} "
                f"capabilities, selected={self.selected}>")


def _number(value: Any) -> str:
    return "" if value is None or pd.isna(value) else f"{float(value):.2f}"
