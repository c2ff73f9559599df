"""``cdpnb campaign``: backends × scenarios × repeats, here or on a Dask cluster.

Progress (a bar, and the cells running on each worker) and the dashboard's address
go to stderr; the statistics to stdout, as a table or (``--json``) one document.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from rich import box
from rich.console import Group
from rich.live import Live
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from cdpnb.campaign import CampaignProgress, CampaignResult, ClusterUnusable, run_campaign
from cdpnb.campaign.stats import plain, verdict_rule
from cdpnb.cli import output
from cdpnb.cli.counts import count
from cdpnb.cli.status import FAILED, OK
from cdpnb.probes import available_backends
from cdpnb.terminal_text import inert

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["add_arguments", "campaign_command", "check_campaign_args"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--backends", default=None, metavar="LIST",
                        help="comma-separated kinds or CDP URLs (default: every backend "
                             "installed here)")
    parser.add_argument("--scenarios", default=None, metavar="LIST",
                        help="comma-separated probe check names or globs, e.g. "
                             "'dialog.*.main,latency.*' (default: every check)")
    parser.add_argument("--repeats", type=int, default=1, metavar="N",
                        help="runs of every scenario on every backend (default 1)")
    parser.add_argument("--out", required=True, metavar="DIR",
                        help="the campaign's folder; cells already in it are skipped")
    parser.add_argument("--scheduler", default=None, metavar="ADDRESS",
                        help="a Dask scheduler, e.g. tcp://127.0.0.1:8786 (default: run "
                             "here, --concurrency cells at a time)")
    parser.add_argument("--concurrency", type=int, default=None, metavar="N",
                        help="cells at a time without --scheduler (default: one per core, "
                             "at most 4)")
    parser.add_argument("--retries", type=int, default=2, metavar="N",
                        help="further attempts at a failed cell before it is recorded as "
                             "failed (default 2)")
    parser.add_argument("--keep-browsers", type=int, default=None, metavar="N",
                        help="backends each worker keeps alive between cells (0: a fresh "
                             "one per cell)")
    parser.add_argument("--by", default="capability", choices=("capability", "scenario"),
                        help="group the statistics by (default capability)")
    parser.add_argument("--compare", default=None, metavar="A,B",
                        help="say whether B's latencies differ from A's beyond the "
                             "run-to-run noise (each verdict is B − A: negative when B "
                             "is faster)")
    parser.add_argument("--all", action="store_true", dest="all_cells",
                        help="summarise every cell in --out, also those of earlier runs "
                             "for other backends, scenarios or repeats (default: the "
                             "cells this call asks for)")
    parser.add_argument("--json", action="store_true",
                        help="print the result as JSON on stdout (human text goes to stderr)")


def check_campaign_args(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Usage errors (exit 2) before anything starts."""
    from cdpnb.campaign.cells import resolve_backends, resolve_scenarios

    try:
        if args.backends:
            resolve_backends(_split(args.backends))
        if args.scenarios:
            resolve_scenarios(_split(args.scenarios))
    except ValueError as exc:
        parser.error(str(exc))
    if args.repeats < 1 or args.retries < 0:
        parser.error("--repeats must be at least 1 and --retries at least 0")
    if args.scheduler and args.concurrency is not None:
        parser.error("--concurrency is for a campaign without --scheduler")
    if args.compare and len(_split(args.compare)) != 2:
        parser.error("--compare takes two backends: A,B")
    from cdpnb.cli.probing import check_timeout_option

    check_timeout_option(parser, args)


def _cells(n: int) -> str:
    return count(n, "cell")


def _split(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


@contextmanager
def _progress() -> Iterator[Callable[[CampaignProgress], None]]:
    """A bar and one line per busy worker on stderr (nothing when it is no terminal)."""
    console = output.err()
    bar = Progress(TextColumn("campaign"), BarColumn(bar_width=None), MofNCompleteColumn(),
                   TimeElapsedColumn(), TextColumn("{task.fields[counts]}", markup=False),
                   console=console, expand=True)
    task = bar.add_task("campaign", total=None, counts="")
    workers = Text("")
    announced = False
    with Live(Group(bar, workers), console=console, transient=True,
              auto_refresh=False) as live:
        def show(progress: CampaignProgress) -> None:
            nonlocal announced
            if progress.dashboard and not announced:
                console.print(f"Dask dashboard: {progress.dashboard}", soft_wrap=True)
                announced = True
            bar.update(task, total=progress.total, completed=progress.finished,
                       counts=f"failed {progress.failed} · retried {progress.retried}")
            workers.plain = inert("\n".join(
                f"  {worker}: {len(cells)} running ({cells[0]}{', …' if len(cells) > 1 else ''})"
                for worker, cells in progress.running.items()))
            live.refresh()

        yield show


def _with_interval(value: float, low: float, high: float, percent: bool = False) -> str:
    """``0.5 (0.42–0.51)``; a rate as ``100 (44–100)`` percent; ``—`` when unmeasured."""
    if math.isnan(value):
        return "—"
    if percent:
        return f"{value:.0%} ({low * 100:.0f}–{high * 100:.0f})"
    return f"{plain(value)} ({plain(low)}–{plain(high)})"


def _summary_table(summary: Any, by: str) -> Table:
    """One row per backend × capability: the intervals beside their figures (and the
    cells that could not run, when there are any)."""
    rows = summary.reset_index().to_dict("records")
    errors = any(row["errors"] for row in rows)
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False, expand=False)
    table.add_column("backend", overflow="fold", min_width=8)
    table.add_column(by, overflow="fold", min_width=10)
    table.add_column("n", justify="right")
    table.add_column("ok (95% CI)", no_wrap=True)
    table.add_column("median ms (CI)", no_wrap=True)
    table.add_column("p95 ms", justify="right")
    if errors:
        table.add_column("errors", justify="right")
    for row in rows:
        cells = [str(row["backend"]), str(row[by]), str(row["cells"]),
                 _with_interval(row["success_rate"], row["success_low"], row["success_high"],
                                percent=True),
                 _with_interval(row["median_ms"], row["median_low"], row["median_high"]),
                 plain(row["p95_ms"])]
        table.add_row(*cells, *([str(row["errors"])] if errors else []))
    return table


def _report(result: CampaignResult, args: argparse.Namespace) -> int:
    scope = {"all_cells": args.all_cells}
    summary = result.summary(by=args.by, **scope)
    failures = result.failures(**scope)
    others = 0 if args.all_cells else result.other_cells()
    comparison = None
    if args.compare:
        comparison = _compare(result, args, summary, others)
        if comparison is None:
            return FAILED
    status = FAILED if not failures.empty else OK
    if args.json:
        output.print_json({
            "out": str(result.path), "run": asdict(result.run) if result.run else None,
            # the cells summarised: this call's (its backends × scenarios × repeats), or
            # with --all every cell in --out; other_cells: those left out
            "all_cells": args.all_cells, "other_cells": others,
            "summary": summary.reset_index().to_dict("records"),
            "failures": failures.to_dict("records"),
            "compare": None if comparison is None else
            comparison.reset_index().to_dict("records"),
            "compare_rule": None if comparison is None else verdict_rule(),
            "exit_status": status})
        return status
    _print_report(result, args, summary, failures, others, comparison)
    return status


def _compare(result: CampaignResult, args: argparse.Namespace, summary: pd.DataFrame,
             others: int) -> pd.DataFrame | None:
    """``--compare``'s verdicts, or None when they cannot be had (said on stderr)."""
    summarised = set(summary.index.get_level_values("backend").astype(str))
    missing = [name for name in _split(args.compare) if name not in summarised]
    if missing:
        where = "in --out" if args.all_cells or not others else (
            f"among the cells this call asks for (--all adds the {_cells(others)} "
            "of earlier runs in --out)")
        output.err().print(output.Paragraphs(
            f"cdpnb campaign --compare: no cells of backend {missing[0]!r} {where}"),
            style="red")
        return None
    try:
        return result.compare(*_split(args.compare), by=args.by, all_cells=args.all_cells)
    except ValueError as exc:
        output.err().print(output.Paragraphs(f"cdpnb campaign --compare: {exc}"),
                           style="red")
        return None


def _print_report(result: CampaignResult, args: argparse.Namespace, summary: pd.DataFrame,
                  failures: pd.DataFrame, others: int,
                  comparison: pd.DataFrame | None) -> None:
    """The report as text: the run, the summary, the verdicts, the failures."""
    console = output.out()
    if result.run is not None:
        run = result.run
        done = "was" if run.skipped == 1 else "were"
        console.print(f"{_cells(run.ran)} ran in {run.seconds:.1f} s "
                      f"({run.cells_per_minute:.1f}/min on {count(run.workers, 'worker')}), "
                      f"{run.skipped} {done} already done, {run.failed} failed",
                      overflow="fold")
    console.print(_summary_table(summary, args.by))
    if others:
        console.print(output.Paragraphs(
            f"({_cells(others)} of earlier runs in {result.path}, for other backends, "
            "scenarios or repeats, not in this summary: --all adds them)"))
    if comparison is not None:
        console.print()
        console.print(output.lines((str(group), str(verdict)) for group, verdict
                                   in comparison["verdict"].items()))
        console.print(output.Paragraphs(verdict_rule()), style="dim")
    if not failures.empty:
        console.print()
        console.print("Cells that failed every attempt:", style="bold red")
        console.print(output.lines(
            (f"{row['backend']} {row['scenario']} #{row['repeat']}", str(row["reason"]))
            for row in failures.to_dict("records")))
    console.print(f"\ndataset: {result.path} (cdpnb.campaign.load, or DuckDB over "
                  f"{result.path}/checks/**/*.parquet)", overflow="fold")


def campaign_command(args: argparse.Namespace) -> int:
    backends = _split(args.backends) if args.backends else [
        kind for kind, why in available_backends().items() if why is None]
    if not backends:
        output.err().print("cdpnb campaign: no backend is installed here; name one with "
                           "--backends (a CDP URL works too)", style="red")
        return FAILED
    scenarios = _split(args.scenarios) if args.scenarios else None
    try:
        with _progress() as show:
            result = run_campaign(backends, scenarios, args.repeats, out=args.out,
                                  client=args.scheduler, concurrency=args.concurrency,
                                  retries=args.retries, keep_browsers=args.keep_browsers,
                                  progress=show, timeout=args.timeout)
    except (OSError, TimeoutError, ClusterUnusable) as exc:
        # (a scheduler that cannot be reached, an --out it cannot write, a cluster with no
        # workers: one line in words, no traceback)
        where = f" ({exc.filename})" if isinstance(exc, OSError) and exc.filename else ""
        what = output.reason(exc) if str(exc) or isinstance(exc, OSError) else \
            "no answer in time"
        output.err().print(f"cdpnb campaign: cannot run: {what}{where}", style="red")
        return FAILED
    return _report(result, args)
