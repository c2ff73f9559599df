"""A campaign's results, read where they lie: DuckDB over the Parquet files.

Thousands of cells are thousands of small files; DuckDB scans them (only the columns a
query names) and aggregates before anything reaches pandas. The plain one-liner works
on any campaign folder, with nothing from cdpnb::

    duckdb.sql("SELECT backend, scenario, median(value_ms) FROM 'OUT/checks/**/*.parquet' "
               "GROUP BY ALL").df()

(DuckDB reads ``backend=``/``scenario=`` folder names as columns by itself.)
:meth:`CampaignResult.sql` runs a query with the views ``checks`` and ``latencies``
already made, their partition columns typed as text.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import pandas as pd
import pyarrow as pa

from cdpnb.campaign import stats
from cdpnb.campaign.layout import CHECKS_SCHEMA, LATENCIES_SCHEMA, Layout
from cdpnb.render import badge, table, text
from cdpnb.trace.dtypes import with_text_dtype
from cdpnb.views import REPORTS

if TYPE_CHECKING:
    import duckdb
    from matplotlib.figure import Figure

__all__ = ["CampaignResult", "RunSummary", "load"]

Table = Literal["checks", "latencies"]
Grouping = Literal["capability", "scenario"]
_SCHEMAS = {"checks": CHECKS_SCHEMA, "latencies": LATENCIES_SCHEMA}
_CATEGORIES = ("backend", "scenario", "capability", "mode", "kind", "status", "expected")


@dataclass(frozen=True)
class _Group:
    """One backend × capability (or scenario) of the checks table."""

    backend: str
    name: str
    cells: int  # that ran (status ok / partial / fail)
    ok: int
    errors: int  # that could not run
    values: list[float]  # value_ms of each cell that has one, by repeat


@dataclass(frozen=True)
class RunSummary:
    """What one ``cdpnb.campaign(...)`` call did; ``backends``, ``scenarios`` and
    ``repeats`` are what it asked for (its cells: those the statistics of the
    :class:`CampaignResult` it returned are about)."""

    run_id: str
    cells: int
    ran: int  # finished by this run
    skipped: int  # finished before (resumed), not run again
    failed: int  # out of retries, recorded with the reason
    retried: int
    seconds: float
    workers: int
    cluster: str  # "local" (in-process) or the scheduler's address
    dashboard: str | None = None
    backends: tuple[str, ...] = ()  # as the checks table names them (a kind, a CDP URL)
    scenarios: tuple[str, ...] = ()
    repeats: int = 0

    @property
    def cells_per_minute(self) -> float:
        return self.ran / self.seconds * 60 if self.seconds > 0 else 0.0


def _literal(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def connect(root: str | os.PathLike[str]) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB with the views ``checks`` and ``latencies`` over the
    campaign's Parquet files (an empty table of the right columns if there are none)."""
    import duckdb

    layout = Layout(root)
    con = duckdb.connect()
    for name, schema in _SCHEMAS.items():
        if next((layout.root / name).glob("backend=*/scenario=*/*.parquet"), None) is None:
            empty = pa.schema([("backend", pa.string()), ("scenario", pa.string()),
                               *zip(schema.names, schema.types, strict=True)]).empty_table()
            con.register(f"{name}_empty", empty)
            con.execute(f"CREATE VIEW {name} AS SELECT * FROM {name}_empty")
            continue
        con.execute(
            f"CREATE VIEW {name} AS SELECT backend, scenario, * EXCLUDE (backend, scenario) "
            f"FROM read_parquet({_literal(layout.glob(name))}, hive_partitioning = true, "
            "union_by_name = true, hive_types = {'backend': VARCHAR, 'scenario': VARCHAR})")
    return con


def _typed(frame: pd.DataFrame, which: Table) -> pd.DataFrame:
    for column in _CATEGORIES:
        if column in frame:
            frame[column] = frame[column].astype("category")
    for column in ("repeat", "attempts", "browser_cells", "sample"):
        if column in frame:
            frame[column] = frame[column].astype("Int64")
    for column in ("value_ms", "ms", "check_seconds", "cell_seconds"):
        if column in frame:
            frame[column] = frame[column].astype("Float64")
    if "browser_launched" in frame:
        frame["browser_launched"] = frame["browser_launched"].astype("boolean")
    order = ["backend", "scenario", "repeat"] if which == "checks" else [
        "backend", "scenario", "repeat", "sample"]
    return with_text_dtype(frame.sort_values(order, ignore_index=True))


def load(path: str | os.PathLike[str], table: Table = "checks") -> pd.DataFrame:
    """A campaign's ``checks`` (one row per cell: backend, scenario, repeat, status,
    value_ms, …) or ``latencies`` (one row per sample) as a typed DataFrame.

    For a question over thousands of cells, ask DuckDB instead (see
    :meth:`CampaignResult.sql`): it aggregates over the files without loading them.
    """
    if table not in _SCHEMAS:
        raise ValueError(f"table must be 'checks' or 'latencies', got {table!r}")
    if not Path(path).is_dir():
        raise FileNotFoundError(f"no campaign at {path}: not a folder")
    with connect(path) as con:
        frame = con.sql(f"SELECT * FROM {table}").to_arrow_table().to_pandas()
    return _typed(frame, table)


class CampaignResult:
    """A campaign's dataset: where it is, what the last run did, and its statistics.

    ``cdpnb.campaign(...)`` returns one; ``CampaignResult(path)`` opens any campaign
    folder (also one still being written: every cell file is whole).

    The statistics (:meth:`summary`, :meth:`compare`, :meth:`failures`, :meth:`plot`,
    the notebook view) of a result a call returned are about the cells that call asked
    for (its backends × scenarios × repeats, run now or found done): an earlier run
    into the same folder for other backends, scenarios or more repeats stays in the
    dataset but not in them, unless ``all_cells=True`` (:meth:`other_cells` counts
    those). A result opened from a folder is about every cell. :meth:`checks`,
    :meth:`latencies` and :meth:`sql` always read the whole dataset.
    """

    def __init__(self, path: str | os.PathLike[str], run: RunSummary | None = None) -> None:
        self.path = Path(path)
        self.run = run

    def checks(self) -> pd.DataFrame:
        """One row per cell (see :func:`load`)."""
        return load(self.path, "checks")

    def latencies(self) -> pd.DataFrame:
        """One row per latency sample (see :func:`load`)."""
        return load(self.path, "latencies")

    def failures(self, *, all_cells: bool = False) -> pd.DataFrame:
        """The cells that did not succeed in any attempt, with the last reason (this
        call's cells, or with ``all_cells`` every cell in the folder)."""
        where, parameters = self._scope(all_cells)
        with connect(self.path) as con:
            frame: pd.DataFrame = con.sql(
                "SELECT backend, scenario, repeat, attempts, detail AS reason, worker FROM "
                f"checks WHERE status = 'error' AND {where} ORDER BY ALL",
                params=parameters).to_arrow_table().to_pandas()
        return with_text_dtype(frame)

    def _scope(self, all_cells: bool) -> tuple[str, list[Any]]:
        """A DuckDB condition on ``checks`` (and its parameters) that holds for the cells
        the statistics are about (see the class)."""
        if not isinstance(all_cells, bool):
            raise TypeError(f"all_cells must be True or False, got {all_cells!r}")
        run = self.run
        if all_cells or run is None or not run.backends:
            return "true", []
        return ("list_contains(?, backend) AND list_contains(?, scenario) AND repeat < ?",
                [list(run.backends), list(run.scenarios), run.repeats])

    def other_cells(self) -> int:
        """Cells in the folder that the call which returned this result did not ask for
        (earlier runs' other backends, scenarios or repeats): the statistics leave them
        out unless ``all_cells=True``. 0 for a result opened from a folder."""
        where, parameters = self._scope(False)
        if not parameters:
            return 0
        with connect(self.path) as con:
            found = con.execute(f"SELECT count(*) FILTER (WHERE NOT ({where})) FROM checks",
                                parameters).fetchone()
        return int(found[0]) if found else 0

    def sql(self, query: str) -> pd.DataFrame:
        """Run ``query`` in DuckDB over the views ``checks`` and ``latencies``."""
        with connect(self.path) as con:
            # through Arrow: DuckDB's own .df() uses a pandas call pandas 3.1 deprecates
            frame: pd.DataFrame = con.sql(query).to_arrow_table().to_pandas()
        return frame

    def runs(self) -> list[dict[str, Any]]:
        """What every run of this campaign asked for and did (``campaign.json``)."""
        manifest = Layout(self.path).manifest
        if not manifest.exists():
            return []
        runs: list[dict[str, Any]] = json.loads(manifest.read_text(encoding="utf-8"))["runs"]
        return runs

    def _groups(self, by: Grouping, all_cells: bool) -> list[_Group]:
        if by not in ("capability", "scenario"):
            raise ValueError(f"by must be 'capability' or 'scenario', got {by!r}")
        where, parameters = self._scope(all_cells)
        with connect(self.path) as con:
            rows = con.execute(
                f"SELECT backend, {by}, count(*) FILTER (WHERE status <> 'error'), "
                "count(*) FILTER (WHERE status = 'ok'), count(*) FILTER (WHERE status = "
                "'error'), coalesce(list(value_ms ORDER BY repeat) FILTER (WHERE value_ms IS "
                f"NOT NULL AND status <> 'error'), []) FROM checks WHERE {where} "
                f"GROUP BY backend, {by} ORDER BY ALL", parameters).fetchall()
        return [_Group(str(backend), str(group), int(cells), int(ok), int(errors),
                       [float(v) for v in values])
                for backend, group, cells, ok, errors, values in rows]

    def summary(self, by: Grouping = "capability", confidence: float = 0.95,
                seed: int = 0, *, all_cells: bool = False) -> pd.DataFrame:
        """Per backend × capability (or scenario): cells, success rate with its Wilson
        interval, cells that failed to run (``errors``, not counted in the rate), and the
        latency median and p95 over the cells' values with bootstrap intervals.

        Over this call's cells, or with ``all_cells`` every cell in the folder (see the
        class)."""
        rows = []
        for group in self._groups(by, all_cells):
            values = group.values
            rate_low, rate_high = stats.wilson_interval(group.ok, group.cells, confidence)
            median_low, median_high = stats.bootstrap_interval(values, stats.median,
                                                               confidence, seed=seed)
            p95_low, p95_high = stats.bootstrap_interval(values, stats.p95, confidence,
                                                         seed=seed)
            rows.append({
                "backend": group.backend, by: group.name, "cells": group.cells,
                "success_rate": group.ok / group.cells if group.cells else math.nan,
                "success_low": rate_low, "success_high": rate_high, "errors": group.errors,
                "latency_n": len(values),
                "median_ms": float(np.median(values)) if values else math.nan,
                "median_low": median_low, "median_high": median_high,
                "p95_ms": float(np.percentile(values, 95)) if values else math.nan,
                "p95_low": p95_low, "p95_high": p95_high})
        frame = pd.DataFrame(rows, columns=[
            "backend", by, "cells", "success_rate", "success_low", "success_high", "errors",
            "latency_n", "median_ms", "median_low", "median_high", "p95_ms", "p95_low",
            "p95_high"])
        return with_text_dtype(frame).set_index(["backend", by])

    def compare(self, a: str, b: str, *, other: CampaignResult | None = None,
                by: Grouping = "capability", confidence: float = 0.95,
                seed: int = 0, all_cells: bool = False) -> pd.DataFrame:
        """Backend ``b`` against backend ``a``, per capability (or scenario), over the
        cells' values: is the difference of the medians beyond the run-to-run noise?

        One row per capability: the columns of :class:`~cdpnb.campaign.Comparison`
        (``difference_ms`` is median(b) − median(a): negative when ``b`` is faster) and
        its ``verdict`` in words, by the rule :func:`cdpnb.campaign.stats.verdict_rule`
        says. ``other``: ``b`` is read from another campaign (two versions of one
        backend: ``old.compare("chromium", "chromium", other=new)``). Over this call's
        cells, or with ``all_cells`` every cell in the folder (see the class).
        """
        values_a = {g.name: g.values for g in self._groups(by, all_cells) if g.backend == a}
        values_b = {g.name: g.values for g in (other or self)._groups(by, all_cells)
                    if g.backend == b}
        for name, found, result in ((a, values_a, self), (b, values_b, other or self)):
            if not found:
                others = 0 if all_cells else result.other_cells()
                where = (f"among the cells this call asked for (all_cells=True adds the "
                         f"{_cells(others)} of earlier runs)") if others else "in this campaign"
                raise ValueError(f"no cells of backend {name!r} {where}")
        labels = (a, b) if other is None else (f"{a} ({self.path.name})",
                                                f"{b} ({other.path.name})")
        rows = {name: stats.compare_samples(values, values_b[name], labels=labels,
                                            confidence=confidence, seed=seed).as_dict()
                for name, values in values_a.items()
                if name in values_b and (values or values_b[name])}
        return with_text_dtype(pd.DataFrame.from_dict(rows, orient="index").rename_axis(by))

    def plot(self, capabilities: list[str] | None = None, confidence: float = 0.95, *,
             all_cells: bool = False) -> Figure:
        """Every cell's value per backend, one panel per capability (log scale), with
        each median's bootstrap interval; and the success rates with Wilson intervals
        (this call's cells, or with ``all_cells`` every cell in the folder)."""
        from cdpnb.campaign.plots import plot_campaign

        checks = self.checks()
        run = self.run
        if not all_cells and run is not None and run.backends:
            checks = checks[checks["backend"].astype(str).isin(run.backends)
                            & checks["scenario"].astype(str).isin(run.scenarios)
                            & (checks["repeat"] < run.repeats)].reset_index(drop=True)
        return plot_campaign(checks, self.summary(confidence=confidence,
                                                  all_cells=all_cells), capabilities)

    def report(self, path: str | os.PathLike[str] | None = None) -> str | Path:
        """A self-contained HTML report of every cell in the folder: the matrix (each
        cell a link to its runs' traces), each check's outcomes over the repeats, its
        flake rate with a Wilson interval, its latencies plotted; the same scenario
        across protocols. Returns the HTML, or with ``path`` writes it there (0600)
        and returns the path (``cdpnb report FOLDER --out F`` does the same)."""
        report: str | Path = REPORTS.make(self, path)  # cdpnb.report, above campaign
        return report

    def _repr_html_(self) -> str:
        summary = self.summary().reset_index().to_dict("records")
        rows = [(r["backend"], r["capability"], r["cells"], _rate(r),
                 _ms(r["median_ms"], r["median_low"], r["median_high"]),
                 _ms(r["p95_ms"], r["p95_low"], r["p95_high"]), r["errors"]) for r in summary]
        head = f"<b>cdpnb campaign</b> {text(self.path, 120)}"
        if self.run is not None:
            run = self.run
            head += (f" — this run: {run.ran} cells in {run.seconds:.1f} s "
                     f"({run.cells_per_minute:.1f}/min on {run.workers} workers), "
                     f"{run.skipped} already done ")
            head += badge(f"{run.failed} failed", "#a33") if run.failed else badge("0 failed",
                                                                                   "#2a7")
            others = self.other_cells()
            if others:
                head += (f"<br>{_cells(others)} of earlier runs in this folder (other backends, "
                         "scenarios or repeats), not summarised here: "
                         "<code>summary(all_cells=True)</code>")
        return (f'<div style="font-family:var(--jp-ui-font-family,sans-serif);font-size:12px">'
                f"{head}"
                + table(["backend", "capability", "cells", "success (95% CI)",
                         "median ms (95% CI)", "p95 ms (95% CI)", "errors"], rows,
                        max_rows=60) + "</div>")

    def __repr__(self) -> str:
        if self.run is None:
            return f"<CampaignResult {self.path}>"
        run = self.run
        return (f"<CampaignResult {self.path}: {run.ran} ran, {run.skipped} skipped, "
                f"{run.failed} failed of {run.cells} cells>")


def _cells(n: int) -> str:
    return f"{n} cell" if n == 1 else f"{n} cells"


def _rate(row: dict[Any, Any]) -> str:
    if not row["cells"]:
        return "—"
    return f"{row['success_rate']:.0%} ({row['success_low']:.0%}–{row['success_high']:.0%})"


def _ms(value: float, low: float, high: float) -> str:
    if math.isnan(value):
        return "—"
    return f"{stats.plain(value)} ({stats.plain(low)}–{stats.plain(high)})"
