"""matplotlib plots of dialogs (from a trace) and latencies (from a probe result)."""

from __future__ import annotations

import io
from typing import TYPE_CHECKING

import pandas as pd

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from cdpnb.probes import ProbeResult
    from cdpnb.trace import Trace

__all__ = ["figure_png", "latencies", "plot_dialogs", "plot_latencies"]

CLOSED_BY_COLOURS = {"agent": "#22aa77", "auto_policy": "#2277aa", "watchdog": "#cc7700",
                     "remote": "#aa3333", "open": "#999999"}
LATENCY_CHECKS = {
    "latency.command_rtt": "command round trip",
    "latency.dialog_seen": "alert() → seen",
    "latency.dialog_closed": "respond() → closed",
}


def _axes(ax: Axes | None, size: tuple[float, float]) -> Axes:
    if ax is not None:
        return ax
    import matplotlib.pyplot as plt  # pyplot only when asked for a fresh figure

    _, new = plt.subplots(figsize=size)
    return new


def plot_dialogs(source: Trace | pd.DataFrame, ax: Axes | None = None) -> Axes:
    """When each dialog opened (x, seconds since the trace began) and how long it
    stayed open (bar length), one lane per frame, coloured by who closed it.

    ``source`` is a trace or its ``dialogs()`` DataFrame.
    """
    dialogs = source if isinstance(source, pd.DataFrame) else source.dialogs()
    lanes = list(dict.fromkeys(str(f)[:8] for f in dialogs["frame_id"].astype(str)))
    ax = _axes(ax, (8, 1.0 + 0.5 * max(1, len(lanes))))
    end = float(dialogs["t"].max()) if len(dialogs) else 1.0
    for _, row in dialogs.iterrows():
        lane = lanes.index(str(row["frame_id"])[:8])
        closed_by = "open" if pd.isna(row["closed_by"]) else str(row["closed_by"])
        # A dialog still open at the end runs to the end of the plot.
        width = (float(row["open_ms"]) / 1000.0 if not pd.isna(row["open_ms"])
                 else max(end - float(row["t"]), 0.0))
        ax.barh(lane, max(width, 0.002), left=float(row["t"]), height=0.6,
                color=CLOSED_BY_COLOURS.get(closed_by, "#555555"))
    ax.set_yticks(range(len(lanes)), [f"frame {lane}" for lane in lanes])
    ax.set_xlabel("seconds since the trace began")
    ax.set_title(f"{len(dialogs)} dialogs: opened at, open for")
    from matplotlib.patches import Patch

    seen = [c for c in CLOSED_BY_COLOURS if c in set(dialogs["closed_by"].astype(str))
            or (c == "open" and dialogs["closed_by"].isna().any())]
    if seen:
        ax.legend(handles=[Patch(color=CLOSED_BY_COLOURS[c], label=c) for c in seen],
                  title="closed by", loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return ax


def latencies(result: ProbeResult) -> pd.DataFrame:
    """Median latency (ms) per backend and latency check, from a probe result."""
    checks = result.checks()
    mine = checks[checks["check"].astype(str).isin(list(LATENCY_CHECKS))
                  & checks["value"].notna()]
    if mine.empty:
        return pd.DataFrame(columns=list(LATENCY_CHECKS.values()), dtype=float)
    table = (mine.assign(check=mine["check"].astype(str), backend=mine["backend"].astype(str),
                         value=mine["value"].astype(float))
             .pivot_table(index="backend", columns="check", values="value", aggfunc="median"))
    table = table.reindex(columns=[c for c in LATENCY_CHECKS if c in table.columns])
    return table.rename(columns=LATENCY_CHECKS)


def plot_latencies(result: ProbeResult, ax: Axes | None = None) -> Axes:
    """Grouped bars: median command round trip and dialog latencies per backend (ms)."""
    table = latencies(result)
    ax = _axes(ax, (8, 3.5))
    if table.empty:
        ax.set_title("no latency measured (no backend answered the latency checks)")
        return ax
    table.plot.bar(ax=ax, rot=0)
    ax.set_ylabel("median, ms")
    ax.set_title("latencies per backend")
    return ax


def figure_png(fig: Figure, dpi: int = 80) -> bytes:
    """A figure as PNG bytes (for an ``ipywidgets.Image``), without pyplot."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(fig)
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=dpi, bbox_inches="tight")
    return buffer.getvalue()

