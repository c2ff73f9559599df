"""``cdpnb compare``."""

from __future__ import annotations

import argparse

from cdpnb.cli import output
from cdpnb.cli.status import FAILED, OK
from cdpnb.trace import Trace, TraceFormatError, compare

__all__ = ["compare_command"]


def compare_command(args: argparse.Namespace) -> int:
    traces = []
    for path in args.traces:
        try:
            traces.append(Trace.load(path))
        except (OSError, TraceFormatError) as exc:
            output.err().print(f"cdpnb compare: cannot read {path}: {output.reason(exc)}")
            return FAILED
    frame = compare(*traces)
    if args.json:
        output.print_json({"traces": [str(p) for p in args.traces],
                           "labels": [str(c) for c in frame.columns],
                           "rows": [{"section": key[0], "item": key[1], **row}
                                    for key, row in zip(frame.index, frame.to_dict("records"),
                                                        strict=True)]})
        return OK
    output.out().print(output.compare_table(frame))
    return OK
