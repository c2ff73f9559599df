"""``cdpnb probe`` and ``cdpnb matrix``.

Progress goes to stderr: a bar redrawn in place on a terminal, plain lines (one as each
backend starts and ends) where stderr is no terminal or cannot redraw (a CI log,
``TERM=dumb``). Ctrl-C ends the probe (its browsers closed) and prints the matrix of
the checks that finished, marked partial, then exits 130.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shlex
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
from rich.table import Column

from cdpnb.backends import kind_protocol
from cdpnb.cli import output
from cdpnb.cli.live import command_parser
from cdpnb.cli.status import FAILED, INTERRUPTED, OK, SURPRISES
from cdpnb.probes import (
    CHECKS,
    ProbeResult,
    available_backends,
    parse_backend,
    probe,
    recorded_probes,
)
from cdpnb.probes.run import STEP_BUDGET_S
from cdpnb.probes.specs import BackendSpec
from cdpnb.session.options import check_timeout
from cdpnb.terminal_text import inert
from cdpnb.trace.private_files import make_private_dirs, write_private_text

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["NOT_RUN", "UNFINISHED", "check_args", "check_matrix_args", "check_timeout_option",
           "mark_not_run",
           "matrix_command", "partial_matrix", "probe_command", "retry_command",
           "traces_line"]

#: A cell of a partial matrix whose checks did not run (the probe was interrupted).
NOT_RUN = "—"
#: After a cell's mark: some of its checks ran, the others did not.
UNFINISHED = "…"


def check_args(parser: argparse.ArgumentParser, args: argparse.Namespace,
               parse: Callable[[str], BackendSpec]) -> None:
    """Usage errors (exit 2) before anything starts."""
    parser = command_parser(parser, "probe")
    for backend in (args.backends or "").split(","):
        if backend.strip():
            try:
                parse(backend)
            except ValueError as exc:
                parser.error(str(exc))
    if args.repeats < 1:
        parser.error("--repeats must be at least 1")
    if args.out and Path(args.out).exists() and not Path(args.out).is_dir():
        parser.error(f"--out must name a folder, got the file {inert(args.out)!r}")
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
def _progress(labels: list[str], per_backend: int) -> Iterator[Callable[[str], None]]:
    """A bar on stderr that fits the terminal, and below it the check that runs, whole;
    plain lines where stderr cannot redraw (see :func:`output.redraws`)."""
    console = output.err()
    if not output.redraws(console):
        with _plain_progress(console, labels, per_backend) as line_per_backend:
            yield line_per_backend
        return
    total = len(labels) * per_backend
    bar = output.LabelledProgress(
        TextColumn("probe"), BarColumn(bar_width=None, table_column=Column(
            ratio=1, min_width=10)), MofNCompleteColumn(), TimeElapsedColumn(),
        console=console, transient=True, expand=True)
    task = bar.add_task("probe", total=total)

    def tick(text: str) -> None:
        bar.label = inert(text)
        bar.update(task, advance=1)

    with bar:
        yield tick


@contextmanager
def _plain_progress(console: Console, labels: list[str], per_backend: int
                    ) -> Iterator[Callable[[str], None]]:
    """One line as each backend starts and one as it ends (``probed chromium: 30/30
    checks in 12.3 s``), no cursor control: a CI log reads what ran and how long it
    took. A tick's label is ``BACKEND: CHECK`` (:func:`cdpnb.probe`'s progress)."""
    began = [time.monotonic()]
    done = [0] * len(labels)
    current = [0]

    def start(i: int) -> None:
        current[0] = i
        began[0] = time.monotonic()
        where = f" ({i + 1} of {len(labels)})" if len(labels) > 1 else ""
        console.print(f"probing {labels[i]}{where} …", soft_wrap=True)

    def end(i: int) -> None:
        console.print(f"probed {labels[i]}: {done[i]}/{per_backend} checks in "
                      f"{time.monotonic() - began[0]:.1f} s", soft_wrap=True)

    def tick(label: str) -> None:
        i = current[0]
        # (a backend that ended in fewer ticks than planned: the next one's label)
        later = next((j for j in range(i, len(labels))
                      if label.startswith(f"{labels[j]}: ")), i)
        if later != i:
            end(i)
            start(later)
        done[later] += 1
        if done[later] == per_backend:
            end(later)
            if later + 1 < len(labels):
                start(later + 1)

    if labels:
        start(0)
    yield tick


def mark_not_run(result: ProbeResult, backends: list[str], repeats: int) -> None:
    """After an interrupt: note in each backend's info the checks that did not run
    (``not_run``, in :data:`CHECKS` order), a backend not reached yet added with all of
    them; the saved result (``probe.json``) says so too."""
    for backend in backends:
        spec = parse_backend(backend)
        ran = {(r.check, r.run) for r in result.results if r.backend == spec.label}
        missing = [c.name for c in CHECKS if any((c.name, run) not in ran
                                                  for run in range(repeats))]
        if not missing:
            continue
        info = result.backends.setdefault(spec.label, {
            "kind": spec.name if spec.kind == "launch" else spec.kind, "version": "",
            "protocol": kind_protocol(spec.name) if spec.kind == "launch" else None})
        info["not_run"] = missing


def partial_matrix(result: ProbeResult) -> pd.DataFrame:
    """``result.matrix_text(reasons=False)``, where a backend's info lists checks that
    did not run (:func:`mark_not_run`): a capability none of whose checks ran is
    :data:`NOT_RUN` (as in ``matrix_text``), one of which some ran (or some runs) has
    :data:`UNFINISHED` after its mark."""
    matrix = result.matrix_text(reasons=False)  # capabilities × backends
    for backend, info in result.backends.items():
        not_run = set(info.get("not_run") or ())
        for capability, checks in result.capabilities().items():
            if not_run & set(checks):
                cell = str(matrix.at[capability, backend])  # NOT_RUN: no check ran
                if cell != NOT_RUN:
                    matrix.at[capability, backend] = cell + UNFINISHED
    return matrix


def _not_run(result: ProbeResult) -> dict[str, list[str]]:
    return {name: list(info["not_run"]) for name, info in result.backends.items()
            if info.get("not_run")}


def _report(result: ProbeResult, args: argparse.Namespace,
            written: tuple[Path, Path] | None, interrupted: bool = False) -> int:
    """Print the result (table, or JSON) and return the exit status: 130 when the
    probe was interrupted (the result is partial), else what the result says."""
    unprobed = result.unprobed()
    surprises = result.surprises()
    not_run = _not_run(result)
    status = INTERRUPTED if interrupted else FAILED if unprobed else (
        SURPRISES if args.strict and not surprises.empty else OK)
    if args.json:
        _print_json(result, status, unprobed, surprises, not_run)
        return status
    console = output.out()
    _print_matrix(console, result, not_run)
    if args.reasons:
        console.print()
        console.print(output.reasons_table(result))
    _print_unprobed(console, result, unprobed)
    if not surprises.empty:
        console.print()
        console.print("Different from what the measured facts predict:", style="bold")
        console.print(output.lines(
            (f"{row.backend} {row.check}", f"{row.status} (expected {row.expected}): "
                                           f"{row.detail}") for row in surprises.itertuples()))
    if not_run:
        console.print()
        console.print("Not run (interrupted):", style="bold yellow")
        console.print(output.lines(
            (name, "every check" if len(checks) == len(CHECKS) else
             f"{len(checks)} of {len(CHECKS)} checks")
            for name, checks in not_run.items()))
    _print_where(console, result, args, written)
    return status


def _print_json(result: ProbeResult, status: int, unprobed: dict[str, str],
                surprises: pd.DataFrame, not_run: dict[str, list[str]]) -> None:
    data: dict[str, Any] = json.loads(result.to_json())
    # (partial: a cell none of whose checks ran is "—"; not_run names the checks)
    data["matrix"] = result.matrix_text().to_dict()  # {backend: {capability: cell}}
    data["partial"] = bool(not_run)
    data["not_run"] = not_run
    data["unreachable"] = unprobed
    data["retry"] = {name: retry_command(result, name) for name in unprobed}
    data["surprises"] = surprises[["backend", "check", "status", "expected",
                                   "detail"]].astype(str).to_dict("records")
    data["exit_status"] = status
    output.print_json(data)


def _print_matrix(console: Console, result: ProbeResult,
                  not_run: dict[str, list[str]]) -> None:
    """The matrix (partial: said above it, and its marks under it) and its legend."""
    if not_run:  # above the matrix: its first line says what the matrix is
        console.print("Partial matrix: the probe was interrupted (Ctrl-C) before every "
                      "check ran.", style="bold yellow")
    shown = partial_matrix(result) if not_run else result.matrix_text(reasons=False)
    for i, table in enumerate(output.matrix_tables(result, console.width, shown)):
        if i:
            console.print()
        console.print(table)
    console.print(output.legend(shown), style="dim")
    if not_run:
        console.print(f"{NOT_RUN} not run  ✓{UNFINISHED} some of its checks did not run",
                      style="dim")


def _print_unprobed(console: Console, result: ProbeResult, unprobed: dict[str, str]) -> None:
    """The backends that could not be probed (and how to try again), then those probed
    on the second attempt."""
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


def _print_where(console: Console, result: ProbeResult, args: argparse.Namespace,
                 written: tuple[Path, Path] | None) -> None:
    """Where the results and the traces are."""
    if written is not None:
        console.print(f"\nresults written to {written[0]} and {written[1]}")
    if result.traces and getattr(args, "verbose", False):
        console.print("\ntraces (cdpnb.Trace.load, or cdpnb compare A B):")
        console.print(output.lines((name, ", ".join(traces.values()))
                                   for name, traces in result.traces.items()))
    elif result.traces:
        console.print("\n" + traces_line(result.traces))


def traces_line(traces: dict[str, dict[str, str]]) -> str:
    """Where a probe's traces are and how to open one, in one line (``--verbose`` and
    ``probe.json``'s ``traces`` list them): a probe of fourteen backends writes 27."""
    paths = [Path(path) for modes in traces.values() for path in modes.values()]
    folders = list(dict.fromkeys(str(path.parent) for path in paths))
    where = (f"in {folders[0]}" if len(folders) == 1
             else f"in {len(folders)} folders ({folders[0]}, …)")
    count = f"{len(paths)} trace" + ("s" if len(paths) != 1 else "")
    return (f"{count} (BACKEND.MODE.jsonl.gz) {where}: open one with "
            f"cdpnb.Trace.load(path), compare two with cdpnb compare A B; --verbose "
            f"lists them")


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
    if args.out:
        try:
            make_private_dirs(args.out)  # (0700: the owner's, as the files in it)
        except OSError as exc:
            output.err().print(f"cdpnb probe: cannot write to --out {args.out}: "
                               f"{output.reason(exc)}", style="red")
            return FAILED
    labels = [parse_backend(b).label for b in backends]
    result = ProbeResult()
    interrupted = False
    try:
        with _progress(labels, len(CHECKS) * args.repeats) as tick:
            # asyncio.run cancels the probe on Ctrl-C: its browsers are closed as the
            # cancellation unwinds, then KeyboardInterrupt; ``result`` keeps what finished.
            asyncio.run(probe(backends, repeats=args.repeats, progress=tick, out=args.out,
                              timeout=args.timeout, into=result))
    except KeyboardInterrupt:
        interrupted = True
        mark_not_run(result, backends, args.repeats)
    written = _save(result, Path(args.out), interrupted) if args.out else None
    return _report(result, args, written, interrupted)


#: What a partial result is saved as, beside (never over) a whole one.
PARTIAL_JSON, PARTIAL_MARKDOWN = "probe.partial.json", "matrix.partial.md"


def _save(result: ProbeResult, folder: Path, interrupted: bool) -> tuple[Path, Path]:
    """Write the result to ``folder``: ``probe.json`` and ``matrix.md``, or, for an
    interrupted probe, ``probe.partial.json`` and ``matrix.partial.md`` — a partial
    result never replaces a whole one (``cdpnb probe --out datasets/probes`` stopped
    half-way must not drop the backends it did not reach from the shipped result)."""
    if not interrupted:
        result.save(folder)
        return folder / "probe.json", folder / "matrix.md"
    json_path, markdown_path = folder / PARTIAL_JSON, folder / PARTIAL_MARKDOWN
    write_private_text(json_path, result.to_json())
    write_private_text(markdown_path,
                       f"**Partial matrix**: the probe was interrupted (Ctrl-C) before "
                       f"every check ran; {NOT_RUN} not run.\n\n"
                       + result.to_markdown(reasons=True) + "\n")
    return json_path, markdown_path


def load_result(path: Path) -> ProbeResult:
    """A saved probe result: ``probe.json`` or the folder holding it."""
    if path.is_dir():
        path = path / "probe.json"
    return ProbeResult.from_json(path.read_text(encoding="utf-8"))


def check_matrix_args(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Usage errors (exit 2): ``--format`` and ``--json`` are two outputs, not one."""
    if getattr(args, "format", None) and args.json:
        command_parser(parser, "matrix").error("--format and --json cannot be used together")


def matrix_command(args: argparse.Namespace) -> int:
    try:
        result = load_result(args.result)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        output.err().print(f"cdpnb matrix: cannot read a probe result from {args.result}: "
                           f"{output.reason(exc)}")
        return FAILED
    if getattr(args, "format", None):
        # A table for a paper, printed as it is (its words already inert): no wrapping.
        table = result.to_markdown(footnotes=True) if args.format == "md" else result.to_latex()
        sys.stdout.write(table + "\n")
        if result.unprobed():
            return FAILED
        return SURPRISES if args.strict and not result.surprises().empty else OK
    return _report(result, args, None)
