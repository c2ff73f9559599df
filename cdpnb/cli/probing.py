"""``cdpnb probe`` and ``cdpnb matrix``."""

from __future__ import annotations

import argparse
import asyncio
import json
import shlex
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
from rich.table import Column

from cdpnb.cli import output
from cdpnb.cli.status import FAILED, OK, SURPRISES
from cdpnb.probes import CHECKS, ProbeResult, available_backends, probe, recorded_probes
from cdpnb.probes.run import STEP_BUDGET_S
from cdpnb.probes.specs import BackendSpec
from cdpnb.supervisor.options import check_timeout
from cdpnb.terminal_text import inert

__all__ = ["check_args", "check_timeout_option", "matrix_command", "probe_command",
           "retry_command"]


def check_args(parser: argparse.ArgumentParser, args: argparse.Namespace,
               parse: Callable[[str], BackendSpec]) -> None:
    """Usage errors (exit 2) before anything starts."""
    for backend in (args.backends or "").split(","):
        if backend.strip():
            try:
                parse(backend)
            except ValueError as exc:
                parser.error(str(exc))
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    check_timeout_option(parser, args)


def check_timeout_option(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """``--timeout`` is a number of seconds > 0 (usage error, exit 2, otherwise)."""
    try:
        check_timeout("--timeout", getattr(args, "timeout", None), allow_none=True)
    except (TypeError, ValueError) as exc:
        parser.error(str(exc))


def _choose_backends(args: argparse.Namespace) -> list[str]:
    """The backends to probe; what is installed is said on stderr, apart from results."""
    if args.backends:
        return [b.strip() for b in args.backends.split(",") if b.strip()]
    console = output.err()
    found = available_backends()
    console.print("backends on this machine:")
    console.print(output.lines((kind, "available" if why is None else why)
                               for kind, why in found.items()))
    chosen = [kind for kind, why in found.items() if why is None]
    if chosen:
        return chosen
    replays = recorded_probes(args.datasets) if args.datasets.is_dir() else []
    if not replays:
        console.print(f"No backend is installed and no recorded probes are in "
                      f"{args.datasets}.")
        return []
    console.print("No browser backend is installed on this machine (apt-get install "
                  "chromium chromium-headless-shell nodejs). Showing the matrix REPLAYED "
                  f"from the probe traces recorded in {args.datasets}:")
    return [f"replay:{next(iter(spec.traces.values()))}" for spec in replays]


@contextmanager
def _progress(total: int) -> Iterator[Callable[[str], None]]:
    """A bar on stderr that fits the terminal (nothing when stderr is not one), and
    below it the check that runs, whole."""
    bar = output.LabelledProgress(
        TextColumn("probe"), BarColumn(bar_width=None, table_column=Column(
            ratio=1, min_width=10)), MofNCompleteColumn(), TimeElapsedColumn(),
        console=output.err(), transient=True, expand=True)
    task = bar.add_task("probe", total=total)

    def tick(text: str) -> None:
        bar.label = inert(text)
        bar.update(task, advance=1)

    with bar:
        yield tick


def _report(result: ProbeResult, args: argparse.Namespace, written: Path | None) -> int:
    """Print the result (table, or JSON) and return the exit status."""
    unprobed = result.unprobed()
    surprises = result.surprises()
    status = FAILED if unprobed else (SURPRISES if args.strict and not surprises.empty
                                      else OK)
    if args.json:
        data: dict[str, Any] = json.loads(result.to_json())
        data["matrix"] = result.matrix_text().T.to_dict()
        data["unreachable"] = unprobed
        data["retry"] = {name: retry_command(result, name) for name in unprobed}
        data["surprises"] = surprises[["backend", "check", "status", "expected",
                                       "detail"]].astype(str).to_dict("records")
        data["exit_status"] = status
        output.print_json(data)
        return status
    console = output.out()
    for i, table in enumerate(output.matrix_tables(result, console.width)):
        if i:
            console.print()
        console.print(table)
    console.print(output.LEGEND, style="dim")
    if args.reasons:
        console.print()
        console.print(output.reasons_table(result))
    if unprobed:
        console.print()
        console.print("Could not be probed (its checks are ✗, none is a surprise):",
                      style="bold red")
        console.print(output.lines(
            (name, f"{reason}{_twice(result, name)} — to try again: "
                   f"{retry_command(result, name)}")
            for name, reason in unprobed.items()))
    retried = {name: info["retried"] for name, info in result.backends.items()
               if info.get("retried") and name not in unprobed}
    if retried:
        console.print()
        console.print("Probed on the second attempt:", style="bold")
        console.print(output.lines(retried.items()))
    if not surprises.empty:
        console.print()
        console.print("Different from what the measured facts predict:", style="bold")
        console.print(output.lines(
            (f"{row.backend} {row.check}", f"{row.status} (expected {row.expected}): "
                                           f"{row.detail}") for row in surprises.itertuples()))
    if written is not None:
        console.print(f"\nresults written to {written}/probe.json and {written}/matrix.md")
    if result.traces:
        console.print("\ntraces (cdpnb.Trace.load, or cdpnb compare A B):")
        console.print(output.lines((name, ", ".join(traces.values()))
                                   for name, traces in result.traces.items()))
    return status


def _twice(result: ProbeResult, name: str) -> str:
    return " (tried twice)" if result.backends.get(name, {}).get("retried") else ""


def retry_command(result: ProbeResult, unprobed: str) -> str:
    """The command that probes one unprobed backend again, with budgets twice as long
    as the ones it had (``unprobed`` as :meth:`ProbeResult.unprobed` names it)."""
    name = unprobed.split(" (", 1)[0] if unprobed not in result.backends else unprobed
    used = result.backends.get(name, {}).get("budget_s")
    budget = 2 * float(used) if isinstance(used, int | float) else 4 * STEP_BUDGET_S
    return f"cdpnb probe --backends {shlex.quote(name)} --timeout {budget:g}"


def probe_command(args: argparse.Namespace) -> int:
    backends = _choose_backends(args)
    if not backends:
        return FAILED
    with _progress(len(backends) * len(CHECKS) * args.repeat) as tick:
        result = asyncio.run(probe(backends, repeat=args.repeat, progress=tick, out=args.out,
                                   timeout=args.timeout))
    written = result.save(args.out) if args.out else None
    return _report(result, args, written)


def load_result(path: Path) -> ProbeResult:
    """A saved probe result: ``probe.json`` or the folder holding it."""
    if path.is_dir():
        path = path / "probe.json"
    return ProbeResult.from_json(path.read_text(encoding="utf-8"))


def matrix_command(args: argparse.Namespace) -> int:
    try:
        result = load_result(args.result)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        output.err().print(f"cdpnb matrix: cannot read a probe result from {args.result}: "
                           f"{output.reason(exc)}")
        return FAILED
    return _report(result, args, None)
