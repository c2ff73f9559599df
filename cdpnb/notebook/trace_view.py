"""``trace.view()``: a trace's timeline per session, and its dialogs as a plot.

Its output's static snapshot shows the session chosen last (``snapshot.py``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import ipywidgets as widgets
import pandas as pd

from cdpnb.notebook.plots import DPI, figure_html, figure_png, plot_dialogs, png_size
from cdpnb.notebook.snapshot import SnapshotDisplay
from cdpnb.notebook.static import widget_bundle
from cdpnb.render import MAX_TEXT, WRAP, badge, clip, table, text

if TYPE_CHECKING:
    from cdpnb.trace import Trace

__all__ = ["TraceView"]

ALL_SESSIONS = ""
#: Timeline rows shown at once; the DataFrame (``view.timeline``) has them all.
ROWS_SHOWN = 60


class TraceView:
    """Timeline of dialogs and frame events, filtered by session, plus a dialog plot.

    ``timeline`` is the whole ``trace.timeline()`` DataFrame; ``shown`` the rows
    the table shows for the chosen session; ``sessions`` the dropdown; ``snapshot``
    its output in the notebook.
    """

    def __init__(self, trace: Trace) -> None:
        self.trace = trace
        self.timeline = trace.timeline()
        counts = self.timeline["session_id"].astype(str).value_counts(sort=False)
        options: list[tuple[str, str]] = [(f"all sessions ({len(self.timeline)} events)",
                                           ALL_SESSIONS)]
        options += [(f"session {clip(s, 12)} ({n} events)", str(s))
                    for s, n in counts.items() if s not in ("<NA>", "nan")]
        self.sessions = widgets.Dropdown(options=options, value=ALL_SESSIONS,
                                         description="session")
        self.table = widgets.HTML()
        summary = trace.summary()
        state = badge("complete", "#2a7") if trace.complete else badge("not complete", "#a33")
        opened = int((self.timeline["event"] == "dialog_opened").sum())
        self.header = widgets.HTML(
            f'<div style="{WRAP}"><b>{text(trace.label)}</b> {state} · {summary["messages"]} '
            f"records · {summary['duration_s']:.1f} s · {opened} dialogs</div>")
        png = self._plot_png()
        width, _ = png_size(png)
        # Made at DPI, shown at 96 px per inch: crisp on a retina screen.
        self.plot = widgets.Image(value=png, format="png",
                                  layout=widgets.Layout(width=f"{round(width * 96 / DPI)}px",
                                                        max_width="100%", height="auto"))
        self.shown = self.timeline.iloc[0:0]
        self.sessions.observe(lambda _: self._draw(), names="value")
        self.widget = widgets.VBox([self.header, self.sessions, self.table, self.plot])
        self.snapshot = SnapshotDisplay(self.widget, self._snapshot)
        self._draw()

    def select(self, session_id: str | None) -> None:
        """Show one session's events (None for every session)."""
        value = session_id or ALL_SESSIONS
        known = [v for _, v in self.sessions.options]
        if value not in known:
            raise ValueError(f"session_id {session_id!r} is not in this trace; "
                             f"known: {known[1:]}")
        self.sessions.value = value

    def _plot_png(self) -> bytes:
        from matplotlib.figure import Figure

        fig = Figure(figsize=(8, 3.2))
        plot_dialogs(self.trace, ax=fig.add_subplot())
        return figure_png(fig)

    def _draw(self) -> None:
        chosen = self.sessions.value
        rows = self.timeline
        if chosen != ALL_SESSIONS:
            rows = rows[rows["session_id"].astype(str) == chosen]
        self.shown = rows
        self.table.value = table(
            ("t (s)", "session", "event", "frame", "dialog", "detail", "closed by", "open ms"),
            (_cells(r) for r in rows.head(ROWS_SHOWN).itertuples(index=False)),
            max_rows=ROWS_SHOWN, total=len(rows))
        self.snapshot.changed()

    def static_html(self) -> str:
        """What the view shows, as HTML: header, the chosen session's timeline, the plot."""
        chosen = next(label for label, value in self.sessions.options
                      if value == self.sessions.value)
        return (f"<div>{self.header.value}</div><div>{text(chosen)}</div>{self.table.value}"
                f"<div>{figure_html(self.plot.value)}</div>")

    def _snapshot(self) -> tuple[str, str]:
        return repr(self), self.static_html()

    def _ipython_display_(self) -> None:
        self.snapshot.show()

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        return widget_bundle(self.widget, repr(self), self.static_html(), **kwargs)

    def __repr__(self) -> str:
        return (f"<TraceView {self.trace.label!r} {len(self.timeline)} timeline events, "
                f"showing {len(self.shown)}>")


def _cells(row: Any) -> list[object]:
    def blank(value: Any) -> Any:
        return "" if value is None or (not isinstance(value, str) and pd.isna(value)) else value

    open_ms = blank(row.open_ms)
    return [f"{row.t:.3f}", clip(blank(row.session_id), 8), row.event,
            clip(blank(row.frame_id), 8), blank(row.dialog_id), clip(blank(row.detail), MAX_TEXT),
            blank(row.closed_by), f"{open_ms:.1f}" if open_ms != "" else ""]
