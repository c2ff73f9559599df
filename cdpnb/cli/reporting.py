"""``cdpnb report RESULT… --out report.html``: the evidence report of saved results."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from cdpnb.cli import output
from cdpnb.cli.counts import count
from cdpnb.cli.live import command_parser
from cdpnb.cli.status import FAILED, OK
from cdpnb.terminal_text import inert

__all__ = ["add_arguments", "check_report_args", "report_command"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("results", type=Path, nargs="+", metavar="RESULT",
                        help="probe.json, its folder (e.g. datasets/probes), or a campaign "
                             "folder; two or more are compared in order, each with the one "
                             "before it")
    parser.add_argument("--out", type=Path, required=True, metavar="FILE",
                        help="the HTML file to write (0600: it quotes the traces)")


def check_report_args(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Usage errors (exit 2) before anything is read."""
    parser = command_parser(parser, "report")
    if args.out.is_dir():
        parser.error(f"--out must name a file, got the folder {inert(str(args.out))!r}")
    seen: set[Path] = set()
    for path in args.results:
        # (a folder and its probe.json are one result)
        key = (path / "probe.json" if (path / "probe.json").is_file() else path).resolve()
        if key in seen:
            parser.error(f"{inert(str(path))!r} is given twice")
        seen.add(key)


def report_command(args: argparse.Namespace) -> int:
    from cdpnb.report import changed_cells, load_source, write_report

    began = time.monotonic()
    try:
        sources = [load_source(path) for path in args.results]
    except (OSError, ValueError) as exc:
        output.err().print(f"cdpnb report: {output.reason(exc)}", style="red")
        return FAILED
    try:
        written = write_report(sources, args.out)
    except OSError as exc:
        output.err().print(f"cdpnb report: cannot write --out {args.out}: "
                           f"{output.reason(exc)}", style="red")
        return FAILED
    seconds = time.monotonic() - began
    changed = changed_cells(sources) if len(sources) > 1 else []
    size = written.stat().st_size
    if args.json:
        output.print_json({"out": str(written), "bytes": size, "seconds": round(seconds, 2),
                           "results": [s.label for s in sources],
                           "changed": [{"backend": c.backend, "capability": c.capability,
                                        "before": c.before, "after": c.after}
                                       for c in changed]})
        return OK
    console = output.out()
    console.print(f"report written to {written} ({size / 1024:.0f} KB, "
                  f"{count(len(sources), 'result')}, {seconds:.1f} s)")
    if len(sources) > 1:
        console.print(f"{count(len(changed), 'cell')} changed"
                      + (":" if changed else ""))
        console.print(output.lines((f"{c.backend} · {c.capability}", f"{c.before} → {c.after}")
                                   for c in changed))
    return OK
