"""``cdpnb proxy``: stand in front of a browser (recording every client's session,
applying fault rules) or serve a recording to a client with no browser (``--replay``).

The first line on stdout is the endpoint a client connects to (CDP: the
``http://127.0.0.1:PORT`` it discovers from; BiDi: the ``ws://…/session``), so a script
can read it with ``head -n 1``; the second is the WebSocket itself.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import time
from pathlib import Path

from cdpnb.cli import output
from cdpnb.cli.counts import count
from cdpnb.cli.live import _run_until_stopped, _stop_on_signals, command_parser
from cdpnb.cli.status import DIVERGED, FAILED, OK
from cdpnb.errors import CdpnbError
from cdpnb.protocol import protocol_spec
from cdpnb.proxy import FaultRuleError, Proxy, parse_faults, proxy
from cdpnb.proxy.faults import RULE_SHAPES
from cdpnb.trace import TraceFormatError

__all__ = ["add_arguments", "check_proxy_args", "proxy_command"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--backend", metavar="KIND",
                       help="launch this backend (chromium, headless-shell, firefox, "
                            "chromium+bidi, ...) and stand in front of it")
    where.add_argument("--url", metavar="URL",
                       help="stand in front of a running browser: its http://HOST:PORT or "
                            "ws://… endpoint (BiDi: ws://HOST:PORT/session)")
    where.add_argument("--replay", type=Path, metavar="TRACE",
                       help="serve a recording made by cdpnb proxy, with no browser")
    parser.add_argument("--record", type=Path, metavar="PATH",
                        help="record client connection 1 to PATH (.jsonl, .jsonl.gz or "
                             ".jsonl.zst; connection N to PATH with .N before the suffixes)")
    parser.add_argument("--fault", action="append", default=[], metavar="RULE",
                        help="a fault rule, repeatable: " + ", ".join(RULE_SHAPES))
    parser.add_argument("--seed", type=int, default=None,
                        help="seed of the rules' chances (@P%%), for a repeatable run")
    parser.add_argument("--loose", action="store_true",
                        help="--replay: match a command by method, session and param names "
                             "when its params differ (a client's fresh random values)")


def check_proxy_args(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """What ``proxy`` cannot use is a usage error (exit 2) that names it."""
    parser = command_parser(parser, "proxy")
    try:
        args.faults = parse_faults(args.fault)
    except FaultRuleError as exc:
        parser.error(str(exc))
    if args.replay is not None and (args.faults or args.record is not None):
        parser.error("--replay serves a recording as it is: it takes no --fault or --record")
    if args.loose and args.replay is None:
        parser.error("--loose goes with --replay")
    if args.duration is not None and not 0 < args.duration < math.inf:
        parser.error(f"--duration must be a positive number of seconds, got "
                     f"{args.duration:g}")


def proxy_command(args: argparse.Namespace) -> int:
    return asyncio.run(_serve(args))


def _status(px: Proxy, began: float) -> str:
    line = f"{'replaying' if px.mode == 'replay' else 'proxying'} " \
           f"{time.monotonic() - began:5.1f} s · {count(px.connections, 'connection')}"
    if px.mode == "record":
        return line + f" · recording {count(len(px.recordings), 'file')}"
    return line + (" · diverged" if px.divergence is not None else " · matching")


async def _serve(args: argparse.Namespace) -> int:
    stop = _stop_on_signals()
    opener = (proxy(replay=args.replay, match="loose" if args.loose else "strict")
              if args.replay is not None
              else proxy(args.backend or args.url, record=args.record, faults=args.faults,
                         seed=args.seed))
    try:
        px = await opener
    except (OSError, TraceFormatError, ValueError, CdpnbError) as exc:
        what = args.replay or args.backend or args.url
        output.err().print(f"cdpnb proxy: cannot serve {what}: {output.reason(exc)}",
                           style="red")
        return FAILED
    # The address a client of its protocol is given: HTTP where it discovers or speaks
    # HTTP, else (WebDriver BiDi) the WebSocket.
    first = px.url if protocol_spec(px.protocol).clients_start_at_http else px.ws_url
    info = {"url": first, "ws_url": px.ws_url, "protocol": px.protocol, "mode": px.mode,
            "record": str(args.record) if args.record else None}
    if args.json:
        output.print_json(info)
    else:
        console = output.out()
        console.print(first, overflow="fold", soft_wrap=True)
        console.print(px.ws_url, overflow="fold", soft_wrap=True)
        console.file.flush()
    output.err().print("serving until Ctrl-C or SIGTERM")
    began = time.monotonic()
    try:
        await _run_until_stopped(stop, args.duration, lambda: _status(px, began), lambda: [])
    finally:
        await px.aclose()
    if px.mode == "record":
        for path in px.recordings:
            output.err().print(f"recorded {path!s}")
    if px.divergence is not None:
        output.err().print(f"cdpnb proxy: {px.divergence!s}", style="red")
        return DIVERGED
    return OK
