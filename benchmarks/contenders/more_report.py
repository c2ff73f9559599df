"""The figures of bench_contenders.py's ``--memory``, ``--bidi`` and ``--ingest``."""

from __future__ import annotations

import statistics
from typing import Any

from contenders.harness import (
    BIDI_CONTENDERS,
    BIDI_REFERENCE,
    CONTENDERS,
    INGEST_CONTENDERS,
    INGEST_REFERENCE,
    MEMORY_CONTENDERS,
)

__all__ = ["more_tables", "summarise_memory"]


def summarise_memory(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Per contender over the repeats: the medians of idle, after and growth (MB), and
    growth's range."""
    summary: dict[str, Any] = {"load_1min": [round(r["load_after"][0], 2) for r in runs]}
    for name in dict.fromkeys(n for r in runs for n in r["figures"]):
        rows = [r["figures"][name] for r in runs if name in r["figures"]]
        growth = [row["growth_mb"] for row in rows]
        summary[name] = {
            **{key: round(statistics.median(row[key] for row in rows), 1)
               for key in ("idle_mb", "after_mb", "growth_mb")},
            "growth_range_mb": [min(growth), max(growth)], "repeats": len(rows),
            "processes": max(row["processes"] for row in rows),
            "dialog_median_ms": round(statistics.median(
                row["dialog_median_ms"] for row in rows), 4)}
    return summary


def load_text(summary: dict[str, Any]) -> str:
    loads = summary["load_1min"]
    text = f"load {min(loads):.1f}–{max(loads):.1f}"
    if summary.get("runnable_median") is not None:
        text += f", run {summary['runnable_median']:.0f}"
    return text


def memory_table(memory: dict[str, Any]) -> list[str]:
    labels = {c.name: c.labels["dialog"] for c in CONTENDERS if "dialog" in c.labels}
    lines = [f"\nmemory: RSS of each contender's process tree (its descendants included), "
             f"idle after warm-up and after {memory['dialogs']} dialogs,",
             f"alone on a page of its own, headless-shell ({memory.get('browser', '?')}); "
             "medians over repeats, MB"]
    for phase, summary in memory["summary"].items():
        lines.append(f"  {phase} ({load_text(summary)})")
        lines.append(f"  {'':<40}{'idle':>8}{'after':>8}{'growth':>8}  {'range':<14}procs")
        for name in (n for n in MEMORY_CONTENDERS if n in summary):
            row = summary[name]
            low, high = row["growth_range_mb"]
            span = f"{low:+.1f}–{high:+.1f}" if row["repeats"] > 1 else ""
            lines.append(f"  {labels.get(name, name)[:40]:<40}{row['idle_mb']:>8.1f}"
                         f"{row['after_mb']:>8.1f}{row['growth_mb']:>+8.1f}  {span:<14}"
                         f"{row['processes']:>5}")
    return lines


def ratio_table(results: dict[str, Any], op: str, title: list[str],
                labels: dict[str, str], reference: str,
                messages: int | None = None) -> list[str]:
    """Per phase and contender: the median (ms, or messages/s for ingest), × its bare
    (for ingest: messages/s ÷ the bare loop's, so higher is faster) and the range; for
    BiDi also the median of the bare client beside it."""
    lines = ["", *title]
    unit = "msg/s" if messages else "ms"
    beside = "" if messages else f"{'bare ms':>9}"
    for phase, summary in results["summary"].items():
        lines.append(f"  {phase} ({load_text(summary)})")
        lines.append(f"  {'':<40}{unit:>10}{beside} {'×bare':>6}  range")
        rows = summary[op]
        for name in (n for n in labels if n in rows):
            row = rows[name]
            if messages:
                value = f"{messages / (row['median_ms'] / 1000):>10,.0f}"
            else:
                bare_ms = row.get("bare_beside_ms", rows.get(reference, {}).get("median_ms"))
                value = f"{row['median_ms']:>10.3f}" + (
                    f"{bare_ms:>9.3f}" if bare_ms and name != reference else f"{'':>9}")
            ratio, span = "", ""
            if "ratio_to_bare" in row:
                # A duration ratio; for ingest its inverse is the ratio of the rates.
                low: float = row["ratio_range"][0]
                high: float = row["ratio_range"][1]
                median: float = row["ratio_to_bare"]
                if messages:
                    low, high, median = 1 / high, 1 / low, 1 / median
                ratio = f"{median:>6.2f}"
                span = f"{low:.2f}–{high:.2f}" if row["repeats"] > 1 else ""
            lines.append(f"  {labels.get(name, name)[:40]:<40}{value} {ratio:>6}  {span}"
                         .rstrip())
    return lines


def more_tables(results: dict[str, Any]) -> str:
    lines: list[str] = []
    if "memory" in results:
        lines += memory_table(results["memory"])
    if "bidi" in results:
        lines += ratio_table(
            results["bidi"], "bidi",
            ["WebDriver BiDi script.evaluate of 1 round trip on Firefox (awaitPromise "
             "false; the evaluate rows",
             "send what sup.evaluate sends): median ms,",
             "the bare client's beside it, × that bare (each contender in a Firefox of its "
             "own, its bare client",
             "in another, the two swapping Firefoxes halfway; the median of the repeats' "
             "ratios and their range)"],
            {c.name: c.labels["bidi"] for c in BIDI_CONTENDERS}, BIDI_REFERENCE)
    if "ingest" in results:
        lines += ratio_table(
            results["ingest"], "ingest",
            [f"events taken in per second, {results['ingest']['messages']} per connection "
             "from bench_cdp.py's stream server",
             "(connect → the last event handled → closed), × the bare loop's rate in the "
             "same repeat",
             "(higher is faster; the median of the repeats' ratios and their range)"],
            {c.name: c.labels["ingest"] for c in INGEST_CONTENDERS}, INGEST_REFERENCE,
            messages=results["ingest"]["messages"])
    return "\n".join(lines)
