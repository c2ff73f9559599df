"""matplotlib plots of dialogs (from a trace) and latencies (from probe results).

Dialogs last from under a millisecond to minutes, so their durations go on a log
axis: a 2 ms dialog is as visible as a 2 s one. Latencies vary 2–4× from run to run
on a small VM, so every sample is drawn (with its box), never the median alone.
"""

from __future__ import annotations

import base64
import io
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from cdpnb.probes import ProbeResult
    from cdpnb.trace import Trace

__all__ = ["DPI", "figure_html", "figure_png", "latencies", "plot_dialogs", "plot_latencies"]

#: Pixels per inch of the PNGs cdpnb makes: twice the 96 CSS px of a plain screen, so
#: they are shown at half their pixel size and stay crisp on a retina display.
DPI = 192
CLOSED_BY_COLOURS = {"agent": "#22aa77", "auto_policy": "#2277aa", "watchdog": "#cc7700",
                     "remote": "#aa3333", "browser": "#777777", "cdpnb": "#7744aa",
                     # a proxy's recording: the client's own answer, a fault rule's
                     "client": "#22aa77", "fault": "#cc33aa", "open": "#999999"}
TYPE_MARKERS = {"alert": "o", "confirm": "s", "prompt": "D", "beforeunload": "^"}
LATENCY_CHECKS = {
    "latency.command_rtt": "command round trip",
    "latency.dialog_seen": "alert() → seen",
    "latency.dialog_closed": "respond() → closed",
}


def _plain_log_ticks(ax: Axes, axis: str = "y") -> None:
    """Log-axis tick labels as plain numbers (``2``, ``5``, ``10``), not ``2×10⁰``."""
    from matplotlib.ticker import FuncFormatter

    def major(value: float, _: int) -> str:
        return f"{value:g}"

    def minor(value: float, _: int) -> str:  # 2 and 5 of each decade, so labels never crowd
        return f"{value:g}" if f"{value:e}"[0] in "25" else ""

    scale = ax.yaxis if axis == "y" else ax.xaxis
    scale.set_major_formatter(FuncFormatter(major))
    scale.set_minor_formatter(FuncFormatter(minor))


def _axes(ax: Axes | None, size: tuple[float, float]) -> Axes:
    if ax is not None:
        return ax
    import matplotlib.pyplot as plt  # pyplot only when asked for a fresh figure

    _, new = plt.subplots(figsize=size)
    return new


def plot_dialogs(source: Trace | pd.DataFrame, ax: Axes | None = None) -> Axes:
    """One point per dialog: when it opened (x, seconds since the trace began) and how
    long it stayed open (y, ms, log scale), coloured by who closed it, shaped by its
    type. A dialog still open at the end is drawn up to the end of the trace.

    ``source`` is a trace or its ``dialogs()`` DataFrame.
    """
    from matplotlib.lines import Line2D

    dialogs = source if isinstance(source, pd.DataFrame) else source.dialogs()
    ax = _axes(ax, (8, 3.2))
    end = float(dialogs["t"].max()) if len(dialogs) else 1.0
    if not isinstance(source, pd.DataFrame):
        end = max(end, source.duration_s)
    closed_by = dialogs["closed_by"].astype("string").fillna("open")
    open_ms = dialogs["open_ms"].astype("Float64").astype(float).to_numpy(na_value=np.nan)
    still_open = np.isnan(open_ms)
    open_ms = np.where(still_open, (end - dialogs["t"].astype(float).to_numpy()) * 1000,
                       open_ms)
    open_ms = np.maximum(open_ms, 0.01)  # a log axis has no 0
    kinds = dialogs["type"].astype(str).to_numpy()
    for who in CLOSED_BY_COLOURS:
        for kind, marker in TYPE_MARKERS.items():
            mask = (closed_by.to_numpy() == who) & (kinds == kind)
            if mask.any():
                ax.scatter(dialogs["t"].astype(float).to_numpy()[mask], open_ms[mask], s=28,
                           marker=marker, color=CLOSED_BY_COLOURS[who], alpha=0.8,
                           edgecolors="white", linewidths=0.5)
    ax.set_yscale("log")
    _plain_log_ticks(ax)
    ax.grid(True, which="major", axis="y", alpha=0.3)
    ax.set_xlabel("opened at: seconds since the trace began")
    ax.set_ylabel("open for, ms (log)")
    ax.set_title(f"{len(dialogs)} dialogs: when each opened, how long it stayed open")
    seen_who = [w for w in CLOSED_BY_COLOURS if (closed_by == w).any()]
    seen_kinds = [k for k in TYPE_MARKERS if (kinds == k).any()]
    handles = [Line2D([], [], marker="o", linestyle="", color=CLOSED_BY_COLOURS[w],
                      label=f"closed by {w}" if w != "open" else "still open")
               for w in seen_who]
    handles += [Line2D([], [], marker=TYPE_MARKERS[k], linestyle="", color="#555555",
                       label=k) for k in seen_kinds]
    if handles:
        ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.0, 1.0),
                  frameon=False, fontsize="small")
    return ax


def latencies(result: ProbeResult) -> pd.DataFrame:
    """Median latency (ms) per backend and latency check, from a probe result;
    ``result.latency_samples()`` has every sample."""
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


def _strip(ax: Axes, position: float, values: np.ndarray, colour: str, width: float) -> None:
    """A horizontal box of ``values`` at ``position`` (y) with every sample on it,
    jittered up and down."""
    if len(values) >= 3:
        ax.boxplot([values], positions=[position], widths=width, showfliers=False,
                   orientation="horizontal", medianprops={"color": colour},
                   boxprops={"color": colour}, whiskerprops={"color": colour},
                   capprops={"color": colour})
    jitter = np.random.default_rng(0).uniform(-width / 3, width / 3, len(values))
    ax.scatter(values, position + jitter, s=10, color=colour, alpha=0.6, linewidths=0)


#: Inches per backend row, and per character of the longest backend name (10 pt).
_ROW_IN, _CHAR_IN = 0.3, 0.085
#: A panel's width (inches): three of them beside fourteen backends' names make 9.3 in,
#: shown at matplotlib's 100 px per inch in a notebook: 930 px, which an output area
#: shows whole (the figure before, 20.7 in, was shrunk to under half, its labels too).
_PANEL_IN = 2.2


def plot_latencies(result: ProbeResult, compare_with: ProbeResult | None = None,
                   labels: tuple[str, str] = ("now", "recorded")) -> Figure:
    """Every latency sample per backend (ms, log scale), with its box: one panel per
    latency check, side by side, a row per backend named once at the left in words
    that read across (fourteen backends' names under a column each had to be turned
    and shrunk). ``compare_with`` (another run, e.g. a recorded one) is drawn in
    another colour just below each row, so a change shows as two distributions, not
    two numbers."""
    from matplotlib.figure import Figure
    from matplotlib.patches import Patch

    runs = [(labels[0], result, "#2277aa")]
    if compare_with is not None:
        runs.append((labels[1], compare_with, "#cc7700"))
    samples = {name: run.latency_samples() for name, run, _ in runs}
    backends = list(dict.fromkeys(b for s in samples.values()
                                  for b in s["backend"].astype(str)))
    checks = [c for c in LATENCY_CHECKS
              if any((s["check"].astype(str) == c).any() for s in samples.values())]
    names_in = _CHAR_IN * max((len(b) for b in backends), default=8)
    rows_in = _ROW_IN * max(1, len(backends)) * (1.0 if len(runs) == 1 else 1.5)
    fig = Figure(figsize=(names_in + 0.5 + _PANEL_IN * max(1, len(checks)), 1.3 + rows_in),
                 layout="constrained")
    if not checks:
        fig.suptitle("no latency measured (no backend answered the latency checks)")
        return fig
    axes = fig.subplots(1, len(checks), squeeze=False, sharey=True)[0]
    width = 0.8 / len(runs)
    for ax, check in zip(axes, checks, strict=True):
        measured: set[int] = set()
        for i, (name, _, colour) in enumerate(runs):
            mine = samples[name][samples[name]["check"].astype(str) == check]
            for y, backend in enumerate(backends):
                values = mine.loc[mine["backend"].astype(str) == backend, "ms"].to_numpy(float)
                if len(values):
                    _strip(ax, y + (i - (len(runs) - 1) / 2) * width, values, colour, width)
                    measured.add(y)
        for y in sorted(set(range(len(backends))) - measured):  # (an empty row says why)
            ax.text(0.03, y, "not measured", transform=ax.get_yaxis_transform(),
                    va="center", color="#999999", fontsize="small")
        ax.set_xscale("log")
        _plain_log_ticks(ax, axis="x")
        ax.set_yticks(range(len(backends)), backends)
        ax.set_ylim(len(backends) - 0.5, -0.5)  # the first backend at the top
        ax.grid(True, axis="x", which="both", alpha=0.25)
        ax.set_title(LATENCY_CHECKS[check])
        ax.set_xlabel("ms (log scale)")
    for ax in axes[1:]:
        ax.tick_params(axis="y", left=False)
    if compare_with is not None:
        fig.legend(handles=[Patch(color=c, label=n) for n, _, c in runs],
                   loc="outside lower center", ncols=len(runs), frameon=False)
    return fig


def figure_png(fig: Figure, dpi: int = DPI) -> bytes:
    """A figure as PNG bytes (for an ``ipywidgets.Image``), without pyplot."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(fig)
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=dpi, bbox_inches="tight")
    return buffer.getvalue()


def png_size(png: bytes) -> tuple[int, int]:
    """(width, height) in pixels, from the PNG header."""
    return int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")


def figure_html(png: bytes, dpi: int = DPI) -> str:
    """An ``<img>`` of a PNG made at ``dpi``, sized in CSS px (crisp on retina)."""
    width, height = png_size(png)
    scale = 96 / dpi
    return (f'<img src="data:image/png;base64,{base64.b64encode(png).decode()}" '
            f'width="{round(width * scale)}" height="{round(height * scale)}" '
            f'style="max-width:100%;height:auto" alt="plot">')
