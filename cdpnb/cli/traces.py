"""``cdpnb compare``.

Its ``--json`` document, keyed by the paths as given on the command line (stable: they
do not change with the other traces compared, as the column names may)::

    {"traces": ["a/run.jsonl", "b/run.jsonl"],     # the paths, in order
     "labels": ["run (a)", "run (b)"],             # each one's column name in the table
     "only_differences": false,                    # --differences
     "rows": [{"section": "trace", "item": "messages",
               "values": {"a/run.jsonl": 1758, "b/run.jsonl": 1760}}, ...]}
"""

from __future__ import annotations

import argparse
from pathlib import Path

from cdpnb.cli import output
from cdpnb.cli.status import FAILED, OK
from cdpnb.trace import Trace, TraceFormatError, compare

__all__ = ["add_arguments", "check_compare_args", "compare_command"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("traces", type=Path, nargs="+", metavar="TRACE",
                        help="two or more traces (.jsonl, .jsonl.gz, .jsonl.zst)")
    parser.add_argument("-d", "--differences", action="store_true",
                        help="only the rows whose values differ between the traces (says "
                             "'no differences' when there are none)")


def check_compare_args(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Usage errors (exit 2): fewer than two traces, or one path given twice (its rows
    would be keyed by the same path in --json)."""
    if len(args.traces) < 2:
        parser.error("compare needs at least two traces")
    given = [str(path) for path in args.traces]
    twice = next((path for path in given if given.count(path) > 1), None)
    if twice is not None:
        parser.error(f"compare: {twice} is given twice")


def compare_command(args: argparse.Namespace) -> int:
    traces = []
    for path in args.traces:
        try:
            traces.append(Trace.load(path))
        except (OSError, TraceFormatError) as exc:
            output.err().print(f"cdpnb compare: cannot read {path}: {output.reason(exc)}")
            return FAILED
    frame = compare(*traces, only_differences=args.differences)
    paths = [str(p) for p in args.traces]
    if args.json:
        output.print_json({"traces": paths, "labels": [str(c) for c in frame.columns],
                           "only_differences": args.differences,
                           "rows": [{"section": key[0], "item": key[1],
                                     "values": dict(zip(paths, row, strict=True))}
                                    for key, row in zip(frame.index, frame.itertuples(
                                        index=False, name=None), strict=True)]})
        return OK
    if frame.empty:
        output.out().print(output.Paragraphs(
            f"no differences: the {len(traces)} traces agree on every row"))
        return OK
    output.out().print(output.compare_table(frame))
    return OK
