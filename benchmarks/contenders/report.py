"""The figures of bench_contenders.py: per repeat, over repeats, and the table."""

from __future__ import annotations

import statistics
import textwrap
from typing import Any

from contenders.harness import CONTENDERS, OP_TITLES, OPS, REFERENCE

__all__ = ["repeat_figures", "summarise", "table"]


def pass_figures(by_name: dict[str, list[float]], reference_name: str = REFERENCE,
                 ) -> dict[str, dict[str, float]]:
    """Per contender of one pass: median and p90 in ms, and the ratio to its bare."""
    reference = by_name.get(reference_name)
    bare_ms = statistics.median(reference) * 1000 if reference else None
    figures = {}
    for name, samples in by_name.items():
        median_ms = statistics.median(samples) * 1000
        row = {"median_ms": round(median_ms, 4),
               "p90_ms": round(statistics.quantiles(samples, n=10)[-1] * 1000, 4),
               "samples": len(samples)}
        if bare_ms:
            row["ratio_to_bare"] = round(median_ms / bare_ms, 4)
        figures[name] = row
    return figures


def repeat_figures(passes: list[dict[str, dict[str, list[float]]]],
                   reference: str = REFERENCE) -> dict[str, dict[str, dict[str, float]]]:
    """Per operation and contender, over the passes: each row's ratio is to the bare
    client beside it; a contender of a later pass also gets the median of that bare
    (``bare_beside_ms``) and its ratio to the first pass's (``ratio_to_shared_bare``)."""
    figures: dict[str, dict[str, dict[str, float]]] = {
        op: {} for samples in passes for op in samples}
    for index, samples in enumerate(passes):
        for op, by_name in samples.items():
            rows = pass_figures(by_name, reference)
            shared = figures[op].get(reference)
            for name, row in rows.items():
                if index and name == reference:
                    continue
                if index and reference in rows:
                    row["bare_beside_ms"] = rows[reference]["median_ms"]
                if index and shared:
                    row["ratio_to_shared_bare"] = round(
                        row["median_ms"] / shared["median_ms"], 4)
                figures[op][name] = row
    return figures


def summarise(repeats: list[dict[str, Any]], ops: tuple[str, ...] = OPS) -> dict[str, Any]:
    """Over the repeats of one backend and phase: the median of the per-repeat
    medians, the median and the range of the per-repeat ratios to bare."""
    runnable = [r["runnable_median"] for r in repeats if r["runnable_median"] is not None]
    summary: dict[str, Any] = {
        "load_1min": [round(r["load_after"][0], 2) for r in repeats],
        "runnable_median": statistics.median(runnable) if runnable else None}
    for op in ops:
        names = dict.fromkeys(n for r in repeats for n in r["figures"].get(op, {}))
        summary[op] = {}
        for name in names:
            rows = [r["figures"][op][name] for r in repeats if name in r["figures"][op]]
            ratios = [row["ratio_to_bare"] for row in rows if "ratio_to_bare" in row]
            summary[op][name] = {
                "median_ms": round(statistics.median(row["median_ms"] for row in rows), 4),
                "repeats": len(rows)}
            if ratios:
                summary[op][name] |= {"ratio_to_bare": round(statistics.median(ratios), 3),
                                      "ratio_range": [min(ratios), max(ratios)]}
            apart = [row["ratio_to_shared_bare"] for row in rows
                     if "ratio_to_shared_bare" in row]
            if apart:
                summary[op][name] |= {
                    "bare_beside_ms": round(statistics.median(
                        row["bare_beside_ms"] for row in rows if "bare_beside_ms" in row), 4),
                    "ratio_to_shared_bare": round(statistics.median(apart), 3),
                    "ratio_to_shared_bare_range": [min(apart), max(apart)]}
    return summary


def table(results: dict[str, Any]) -> str:
    """Median ms and × bare per backend and phase, with the range over repeats."""
    lines = ["median ms of each contender's operations, × the median of the bare client "
             "beside it in the same",
             "repeat (the median over repeats, and their range); Playwright runs in a pass "
             "of its own (it",
             "attaches to every page). load: the 1-minute load average after each repeat; "
             "run: tasks running",
             "or ready, sampled each round (the harness's one included); n=2: from 2 repeats "
             "only (see below)"]
    labels = {c.name: c.labels for c in CONTENDERS}
    repeats = results["settings"]["repeats"]
    for backend, by_phase in results["summary"].items():
        phases = list(by_phase)
        lines.append(f"\n{backend} ({results['browsers'][backend]})")
        loads = [f"{phase} (load {min(s['load_1min']):.1f}–{max(s['load_1min']):.1f}"
                 + (f", run {s['runnable_median']:.0f})" if s["runnable_median"] else ")")
                 for phase, s in by_phase.items()]
        for op in OPS:
            lines.append(f"  {OP_TITLES[op]}")
            lines.append((f"  {'':<36}" + "".join(f" {load:<30}" for load in loads)).rstrip())
            lines.append((f"  {'':<36}" + "".join(f"{'ms':>9} {'×bare':>6} {'range':<14}"
                                                   for _ in phases)).rstrip())
            present = {n for s in by_phase.values() for n in s[op]}
            for name in (c.name for c in CONTENDERS if c.name in present):
                rows = [by_phase[phase][op].get(name) for phase in phases]
                lines.append(table_row(labels[name][op], rows, "median_ms", "ratio_to_bare",
                                       "ratio_range", repeats))
                if any(row and "ratio_to_shared_bare" in row for row in rows):
                    lines.append(table_row("  ↳ its own bare client, beside it", rows,
                                           "bare_beside_ms", "", "", repeats))
                    lines.append(table_row("  ↳ × the bare client without it", rows,
                                           "median_ms", "ratio_to_shared_bare",
                                           "ratio_to_shared_bare_range", repeats))
    lines.extend(textwrap.fill(note, 100, subsequent_indent="    ")
                 for note in results["not_measured"])
    return "\n".join(lines)


def table_row(label: str, rows: list[dict[str, Any] | None], ms: str, ratio: str,
              spread: str, repeats: int) -> str:
    cells = []
    for row in rows:
        if row is None or ms not in row:
            cells.append(f"{'—':>9} {'':>6} {'':<14}")
            continue
        low, high = row.get(spread, [0, 0])
        span = f"{low:.2f}–{high:.2f}" if spread in row and row["repeats"] > 1 else ""
        if row["repeats"] < repeats:  # it failed or was skipped in the others
            span += f" n={row['repeats']}"
        times = f"{row[ratio]:>6.2f}" if ratio in row else f"{'':>6}"
        cells.append(f"{row[ms]:>9.3f} {times} {span:<14}")
    return f"  {label[:36]:<36}" + "".join(cells).rstrip()


