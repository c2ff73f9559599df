"""Plots of a campaign: distributions, not bars of averages.

One panel per capability with a latency: every cell's value (one point per run, ms on
a log axis: a 2 ms backend next to a 60 ms one stays readable), and each backend's
median with its bootstrap interval as a bar beside the points. A last panel has the
success rates with their Wilson intervals. Figures are made without pyplot (no
global state, nothing shown twice in a notebook); with ``%config
InlineBackend.figure_formats = ["retina"]`` a notebook shows them at twice the pixels.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["BACKEND_COLOURS", "plot_campaign"]

BACKEND_COLOURS = ("#2277aa", "#cc7700", "#22aa77", "#aa3377", "#666666", "#7755cc")
PANEL_INCHES = (3.2, 3.3)


def _log_axis(ax: Axes) -> None:
    from matplotlib.ticker import LogLocator, StrMethodFormatter

    ax.set_yscale("log")
    # labels at 1, 2, 5 of each decade, written as plain numbers
    ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0), numticks=30))
    ax.yaxis.set_major_formatter(StrMethodFormatter("{x:g}"))
    ax.yaxis.set_minor_formatter(StrMethodFormatter(""))
    ax.grid(True, axis="y", which="major", alpha=0.3)


def _backend_ticks(ax: Axes, backends: list[str]) -> None:
    ax.set_xticks(range(len(backends)), backends, fontsize="small", rotation=20,
                  ha="right", rotation_mode="anchor")
    ax.set_xlim(-0.6, len(backends) - 0.4)


def plot_campaign(checks: pd.DataFrame, summary: pd.DataFrame,
                  capabilities: list[str] | None = None) -> Figure:
    """The figure of :meth:`CampaignResult.plot` (``checks`` and ``summary`` are its
    tables)."""
    from matplotlib.figure import Figure

    measured = checks[checks["value_ms"].notna() & (checks["status"] != "error")]
    backends = [str(b) for b in dict.fromkeys(checks["backend"].astype(str))]
    colours = {b: BACKEND_COLOURS[i % len(BACKEND_COLOURS)] for i, b in enumerate(backends)}
    chosen = capabilities or [str(c) for c in dict.fromkeys(
        measured["capability"].astype(str))]
    panels = len(chosen) + 1
    fig = Figure(figsize=(PANEL_INCHES[0] * panels, PANEL_INCHES[1]), layout="constrained")
    axes = fig.subplots(1, panels, squeeze=False)[0]
    medians = {(str(r["backend"]), str(r["capability"])): (
        float(r["median_ms"]), float(r["median_low"]), float(r["median_high"]))
        for r in summary.reset_index().to_dict("records")}
    rng = np.random.default_rng(0)
    for ax, capability in zip(axes, chosen, strict=False):
        mine = measured[measured["capability"].astype(str) == capability]
        for x, backend in enumerate(backends):
            values = mine.loc[mine["backend"].astype(str) == backend, "value_ms"].to_numpy(float)
            if not len(values):
                continue
            jitter = rng.uniform(-0.18, 0.18, len(values))
            ax.scatter(x - 0.08 + jitter, values, s=14, color=colours[backend], alpha=0.55,
                       linewidths=0)
            middle, low, high = medians.get((backend, capability), (np.nan,) * 3)
            if not np.isnan(middle):
                ax.errorbar([x + 0.28], [middle], yerr=[[middle - low], [high - middle]],
                            fmt="D", color=colours[backend], markersize=5, capsize=3,
                            elinewidth=1.5)
        _log_axis(ax)
        _backend_ticks(ax, backends)
        ax.set_title(f"{capability}\n(n per backend: {_counts(mine, backends)})",
                     fontsize="medium")
    axes[0].set_ylabel("ms per run (log); ◆ median, 95% CI")
    _plot_success(axes[-1], summary, backends, colours)
    return fig


def _counts(frame: pd.DataFrame, backends: list[str]) -> str:
    counts = frame["backend"].astype(str).value_counts()
    return ", ".join(str(int(counts.get(b, 0))) for b in backends)


def _plot_success(ax: Axes, summary: pd.DataFrame, backends: list[str],
                  colours: dict[str, str]) -> None:
    """Success rate per backend over every capability's cells, Wilson interval."""
    from cdpnb.campaign.stats import wilson_interval

    for x, backend in enumerate(backends):
        if backend not in summary.index.get_level_values(0):
            continue
        rows = summary.loc[backend]
        cells = int(rows["cells"].sum())
        ok = round(float((rows["success_rate"].fillna(0) * rows["cells"]).sum()))
        if not cells:
            continue
        low, high = wilson_interval(ok, cells)
        ax.errorbar([x], [ok / cells], yerr=[[ok / cells - low], [high - ok / cells]],
                    fmt="o", color=colours[backend], capsize=4, elinewidth=1.5)
        ax.annotate(f"{ok}/{cells}", (x, ok / cells), textcoords="offset points",
                    xytext=(8, -3), fontsize="small")
    ax.set_ylim(-0.05, 1.05)
    ax.yaxis.set_major_formatter("{x:.0%}")
    ax.grid(True, axis="y", alpha=0.3)
    _backend_ticks(ax, backends)
    ax.set_title("cells ok, all capabilities\n(95% Wilson interval)", fontsize="medium")
