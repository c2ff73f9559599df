"""The ``cdpnb`` command: probe backends, record and replay traces, show results.

``main(argv)`` returns the exit status (see :data:`EXIT_STATUSES`; each command's own:
:data:`COMMAND_STATUSES`).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import textwrap
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from cdpnb._version import __version__
from cdpnb.backends import LAUNCHABLE
from cdpnb.cli import output
from cdpnb.cli.status import (
    COMMAND_STATUSES,
    EXIT_STATUSES,
    FAILED,
    INTERRUPTED,
    OK,
    SURPRISES,
    USAGE,
)
from cdpnb.errors import CdpnbWarning
from cdpnb.probes import available_backends, parse_backend

__all__ = ["COMMAND_STATUSES", "DATASETS", "EXIT_STATUSES", "FAILED", "INTERRUPTED", "OK",
           "SURPRISES", "USAGE", "available_backends", "build_parser", "main"]

#: The recorded probes shipped with the repository.
DATASETS = Path(__file__).resolve().parent.parent.parent / "datasets" / "probes"

DESCRIPTION = """\
cdpnb: a research tool for browser debugging protocols (the Chrome DevTools
Protocol, WebDriver BiDi, WebDriver classic, the WebKit Inspector Protocol).

  cdpnb probe               probe every backend installed here, print the matrix
  cdpnb record URL --out F  supervise a page and record every message to F
  cdpnb replay TRACE        serve a recorded trace, with no browser
  cdpnb proxy --backend K   record any client's session (Playwright, Puppeteer,
                            Selenium, ...), inject faults, replay it offline
  cdpnb matrix RESULT       show a saved probe result (probe.json)
  cdpnb compare A B         what two traces did, side by side
  cdpnb campaign --out DIR  scenarios × backends × repeats, with statistics
  cdpnb report R --out F    an HTML report: every matrix cell opens its evidence

Every command takes --json (machine-readable output on stdout) and -h (its
options and the exit statuses it returns)."""


def _width() -> int:
    """argparse's own choice: the terminal's width (``COLUMNS``) less 2, at most 98."""
    return min(shutil.get_terminal_size().columns, 100) - 2


def _wrap(text: str) -> str:
    return textwrap.fill(text, _width())


def _epilog(statuses: dict[int, str]) -> str:
    """The exit statuses, wrapped to the terminal like argparse wraps its own text."""
    width = _width()
    lines = ["exit status:"]
    for code, what in statuses.items():
        lines += textwrap.wrap(what, width, initial_indent=f"  {code:<4} ",
                               subsequent_indent=" " * 7)
    return "\n".join(lines)


def _add_json(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true",
                        help="print the result as JSON on stdout (human text goes to stderr)")


def _add_matrix_options(parser: argparse.ArgumentParser) -> None:
    """What ``probe`` and ``matrix`` both print: the matrix, and these."""
    parser.add_argument("--reasons", action="store_true", help="say why each cell is not ✓")
    parser.add_argument("-v", "--verbose", action="store_true",
                        help="list every trace under the matrix (one per backend and mode; "
                             "else one line says where they are)")
    parser.add_argument("--strict", action="store_true",
                        help=f"exit {SURPRISES} when a result differs from what is expected")
    _add_json(parser)


def _command(commands: Any, name: str, summary: str, description: str
             ) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = commands.add_parser(
        name, help=summary, description=_wrap(description),
        epilog=_epilog(COMMAND_STATUSES[name]),
        formatter_class=argparse.RawDescriptionHelpFormatter)
    return parser


def _add_timeout(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--timeout", type=float, default=None, metavar="S",
        help="budget of each step (connect, session set-up, a command's reply) in seconds; "
             "a check gets three. Default: fitted to the machine (10 s, or 5x the "
             "backend's launch time if longer)")


def _add_duration(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--duration", type=float, default=None, metavar="S",
                        help="stop by itself after S seconds")
    _add_json(parser)


def build_parser() -> argparse.ArgumentParser:
    # (inert usage errors: an argument may hold terminal controls; subparsers inherit it)
    parser = output.InertParser(prog="cdpnb", description=DESCRIPTION,
                                epilog=_epilog(EXIT_STATUSES),
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-V", "--version", action="version", version=f"cdpnb {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    for add_command in _COMMANDS:  # (in the order -h lists them)
        add_command(commands)
    return parser


def _add_probe(commands: Any) -> None:
    p = _command(commands, "probe", "probe backends and print the capability matrix",
                 "Run the probe checks against each backend (one at a time) and print the "
                 "capability matrix. With no backend installed, replays the probes recorded "
                 "in datasets/probes/.")
    p.add_argument("--backends", default=None, metavar="LIST",
                   help=f"comma-separated: {', '.join(LAUNCHABLE)}, a CDP URL, or "
                        "replay:TRACE (default: every backend installed here)")
    p.add_argument("--repeats", "--repeat", type=int, default=1, dest="repeats", metavar="N",
                   help="runs of every check (default 1)")
    _add_timeout(p)
    p.add_argument("--out", default=None, metavar="DIR",
                   help="folder for probe.json, matrix.md and the traces")
    p.add_argument("--datasets", type=Path, default=DATASETS, metavar="DIR",
                   help="recorded probes to replay when no backend is installed")
    _add_matrix_options(p)


def _add_record(commands: Any) -> None:
    r = _command(commands, "record", "supervise a page and record a trace until interrupted",
                 "Open URL in a new page of a browser it launches (or of a running one, "
                 "with --connect) and record every message between cdpnb and the browser "
                 "(CDP, WebDriver BiDi or WebDriver classic) until Ctrl-C (SIGINT), SIGTERM "
                 "or --duration; a status line shows what was seen so far (a line every few "
                 "seconds when stderr is no terminal).")
    from cdpnb.cli.record import add_arguments as add_record_arguments

    add_record_arguments(r)
    _add_duration(r)


def _add_replay(commands: Any) -> None:
    s = _command(commands, "replay", "serve a trace as the endpoint it recorded, until "
                                     "interrupted",
                 "Serve a recorded trace on 127.0.0.1 as the endpoint it was recorded from "
                 "(CDP; WebDriver BiDi at ws://…/session) and print its URL: a supervisor "
                 "connected to it gets the recorded replies and events, with no browser. A "
                 "WebDriver classic trace replays to cdpnb itself: the command prints how. "
                 "(A client's session recorded by cdpnb proxy replays with cdpnb proxy "
                 "--replay.) Runs until Ctrl-C, SIGTERM or --duration.")
    s.add_argument("trace", type=Path, metavar="TRACE",
                   help="a trace: .jsonl, .jsonl.gz or .jsonl.zst")
    s.add_argument("--speed", type=float, default=None,
                   help="1.0 replays at the recorded pace (default: as fast as possible)")
    _add_duration(s)


def _add_proxy(commands: Any) -> None:
    x = _command(commands, "proxy", "record, fault and replay any client's session",
                 "Stand in front of a browser as a CDP or WebDriver BiDi endpoint on "
                 "127.0.0.1 and record every client connection (Playwright, Puppeteer, "
                 "Selenium, chrome-devtools-mcp) as a cdpnb trace, applying --fault rules; "
                 "or, with --replay, serve such a recording to the same client with no "
                 "browser. Prints the endpoint on its first line (CDP: the http:// a client "
                 "discovers from; BiDi: the ws://…/session) and runs until Ctrl-C, SIGTERM "
                 "or --duration.")
    from cdpnb.cli.proxy import add_arguments as add_proxy_arguments

    add_proxy_arguments(x)
    _add_duration(x)


def _add_matrix(commands: Any) -> None:
    m = _command(commands, "matrix", "show a saved probe result",
                 "Print the capability matrix of a probe result saved by cdpnb probe --out "
                 "DIR (DIR/probe.json), e.g. datasets/probes.")
    m.add_argument("result", type=Path, metavar="RESULT", help="probe.json, or its folder")
    m.add_argument("--format", choices=("md", "tex"), default=None,
                   help="print the matrix for a paper instead: Markdown or LaTeX, a row per "
                        "capability, footnotes saying why a cell is not ✓")
    _add_matrix_options(m)


def _add_compare(commands: Any) -> None:
    c = _command(commands, "compare", "what two (or more) traces did, side by side",
                 "Line up what each trace did, by content: dialogs and how they ended, "
                 "frames and OOPIFs, command latencies, console, faults. Each column is "
                 "named by its file (without .jsonl, .jsonl.gz or .jsonl.zst) and, where "
                 "two names are equal, the nearest folder that tells them apart: "
                 "'run (monday)', 'run (tuesday)'.")
    from cdpnb.cli.traces import add_arguments as add_compare_arguments

    add_compare_arguments(c)
    _add_json(c)


def _add_campaign(commands: Any) -> None:
    g = _command(commands, "campaign", "run scenarios × backends × repeats, print statistics",
                 "Run every scenario (a probe check) on every backend, --repeats times, each "
                 "run a Dask task: here (--concurrency at a time) or on a Dask cluster "
                 "(--scheduler). Each cell writes a row, its latencies and its trace to a "
                 "Parquet dataset in --out; cells already there are skipped, so the same "
                 "command resumes or extends a campaign. Prints success rates with Wilson "
                 "intervals and latency medians and p95 with bootstrap intervals.")
    from cdpnb.cli.campaign import add_arguments

    add_arguments(g)
    _add_timeout(g)


def _add_report(commands: Any) -> None:
    e = _command(commands, "report", "an HTML report: every matrix cell opens its evidence",
                 "Write one self-contained HTML file (no network, no script) of saved "
                 "results: the matrix, every cell a link to its evidence (the check's "
                 "messages from its trace, why it is not ✓, what it was expected to be); "
                 "outcomes over the runs with flake rates for repeats; the same dialog "
                 "scenario across protocols; and given two or more results, the cells that "
                 "changed, first, both proofs side by side.")
    from cdpnb.cli.reporting import add_arguments as add_report_arguments

    add_report_arguments(e)
    _add_json(e)


#: Each command's parser, added in this order (``cdpnb -h`` lists them so).
_COMMANDS = (_add_probe, _add_record, _add_replay, _add_proxy, _add_matrix, _add_compare,
             _add_campaign, _add_report)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:  # bare `cdpnb`: what it can do, not an error
        parser.print_help()
        return OK
    with warnings.catch_warnings(), output.logging_to_stderr():
        # The CLI shows a supervisor's hints itself, apart from the progress and status;
        # other warnings (a trace cut short) as one line, not a source location; log
        # records (which quote what the far end sent) inert.
        warnings.simplefilter("ignore", CdpnbWarning)
        warnings.showwarning = output.show_warning
        return _run(parser, args)


def _run(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    try:
        if args.command == "probe":
            from cdpnb.cli.probing import check_args, probe_command

            check_args(parser, args, parse_backend)
            return probe_command(args)
        if args.command == "matrix":
            from cdpnb.cli.probing import check_matrix_args, matrix_command

            check_matrix_args(parser, args)
            return matrix_command(args)
        if args.command == "compare":
            from cdpnb.cli.traces import check_compare_args, compare_command

            check_compare_args(parser, args)
            return compare_command(args)
        if args.command == "record":
            from cdpnb.cli.record import check_record_args, record_command

            check_record_args(parser, args)
            return record_command(args)
        if args.command == "replay":
            from cdpnb.cli.live import check_replay_args, replay_command

            check_replay_args(parser, args)
            return replay_command(args)
        if args.command == "proxy":
            from cdpnb.cli.proxy import check_proxy_args, proxy_command

            check_proxy_args(parser, args)
            return proxy_command(args)
        if args.command == "report":
            from cdpnb.cli.reporting import check_report_args, report_command

            check_report_args(parser, args)
            return report_command(args)
        if args.command == "campaign":
            from cdpnb.cli.campaign import campaign_command, check_campaign_args

            check_campaign_args(parser, args)
            return campaign_command(args)
    except KeyboardInterrupt as exc:
        # (a campaign says what it kept and how to resume: CampaignInterrupted)
        print(str(exc) or "interrupted", file=sys.stderr)
        return INTERRUPTED
    return USAGE  # pragma: no cover - argparse requires a command



