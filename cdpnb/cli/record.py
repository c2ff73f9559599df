"""``cdpnb record``: supervise a page and record every message until Ctrl-C, SIGTERM or
``--duration``; exit 0 only when the trace holds everything that was recorded.

What is wrong with the command line is a usage error (exit 2) naming the option; a
browser that cannot be launched or reached, a page that cannot load and a trace that
cannot be written end it with one line and exit 1, saying how many messages the trace
holds.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import time
from contextlib import suppress
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from cdpnb.backends import LAUNCHABLE, RUNTIME_KINDS, Backend, launch
from cdpnb.cli import output
from cdpnb.cli.live import _record_status, _run_until_stopped, _stop_on_signals, command_parser
from cdpnb.cli.status import FAILED, OK
from cdpnb.errors import CdpnbError, NavigationError
from cdpnb.protocol.credentials import redact_url
from cdpnb.supervisor import Supervisor
from cdpnb.supervisor.options import MAX_TIMEOUT_S
from cdpnb.terminal_text import inert
from cdpnb.trace import Recorder

__all__ = ["RECORDABLE", "add_arguments", "check_record_args", "record_command"]

#: The kinds ``record --backend`` launches: every kind ``cdpnb.launch`` starts but the
#: runtimes (node, deno, bun: no page to open a URL in; Page.navigate answers -32601).
RECORDABLE = tuple(kind for kind in LAUNCHABLE if kind not in RUNTIME_KINDS)
_PAGE_SCHEMES = ("http", "https", "file", "data", "about")
_ENDPOINT_SCHEMES = ("ws", "wss", "http", "https")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("url", metavar="URL", help="the page to open")
    parser.add_argument("--out", required=True, metavar="TRACE",
                        help="trace file to write: .jsonl, .jsonl.gz (gzip) or .jsonl.zst "
                             "(zstd), created readable by you alone (0600)")
    parser.add_argument("--backend", default=None, choices=RECORDABLE, metavar="KIND",
                        help=f"browser to launch: {', '.join(RECORDABLE)} (default "
                             "chromium)")
    parser.add_argument("--connect", default=None, metavar="ENDPOINT",
                        help="attach to a running browser's CDP or WebDriver BiDi endpoint "
                             "(ws://…, or http://host:port) instead of launching one")
    parser.add_argument("--policy", default="must_respond",
                        choices=("must_respond", "auto_dismiss", "auto_accept"),
                        help="what happens to dialogs nobody answers (default must_respond)")
    parser.add_argument("--dialog-timeout", type=float, default=300.0, metavar="S",
                        help="seconds before must_respond dismisses a dialog (default 300)")
    parser.add_argument("--bridge", default="auto", choices=("auto", "on", "off"),
                        help="answer dialogs through the dialog bridge (default auto)")
    parser.add_argument("--redact", action="store_true",
                        help="hide prompt answers, typed text, URL credentials, cookies "
                             "and authorization headers in the trace")


def check_record_args(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """What ``record`` cannot use is a usage error (exit 2) that names it."""
    parser = command_parser(parser, "record")
    parts = urlsplit(args.url)
    scheme = parts.scheme.lower()
    if scheme not in _PAGE_SCHEMES or (scheme in ("http", "https") and not parts.hostname):
        parser.error(f"URL must be an absolute http://, https://, file:, data: or about: "
                     f"URL, got {inert(redact_url(args.url))!r}")
    if args.connect is not None:
        if args.backend is not None:
            parser.error("--backend launches a browser and --connect attaches to one: "
                         "give one of them")
        endpoint = urlsplit(args.connect)
        if endpoint.scheme.lower() not in _ENDPOINT_SCHEMES or not endpoint.hostname:
            parser.error(f"--connect must be a ws://, wss://, http:// or https:// endpoint "
                         f"URL, got {inert(redact_url(args.connect))!r}")
    out = args.out
    if not out or out.endswith(("/", "\\")) or Path(out).is_dir():
        parser.error(f"--out must name a trace file, got the folder {inert(out)!r}")
    if not 0 < args.dialog_timeout < math.inf:
        parser.error(f"--dialog-timeout must be a positive number of seconds, got "
                     f"{args.dialog_timeout:g}")
    if args.dialog_timeout > MAX_TIMEOUT_S:  # (milliseconds meant: the shared check says so)
        parser.error(f"--dialog-timeout is in seconds: {args.dialog_timeout:g} s is more "
                     f"than the {MAX_TIMEOUT_S:g} s cdpnb takes; did you mean "
                     f"{args.dialog_timeout / 1000:g}?")
    if args.duration is not None and not 0 < args.duration < math.inf:
        parser.error(f"--duration must be a positive number of seconds, got "
                     f"{args.duration:g}")


def record_command(args: argparse.Namespace) -> int:
    return asyncio.run(_record(args))


def _say_failed(args: argparse.Namespace, why: str, summary: dict[str, Any]) -> int:
    """One message on stderr, in red; with --json, the summary with ``error`` on stdout
    too."""
    output.err().print(f"cdpnb record: {why}", style="red")
    if args.json:
        output.print_json({**summary, "error": why})
    return FAILED


async def _record(args: argparse.Namespace) -> int:
    stop = _stop_on_signals()
    kind = args.backend or "chromium"
    summary: dict[str, Any] = {"trace": args.out, "url": redact_url(args.url), "messages": 0}
    backend: Backend | None = None
    if args.connect is None:
        try:
            backend = await launch(kind)
        except (CdpnbError, OSError, ValueError) as exc:
            return _say_failed(args, f"cannot launch {kind}: {output.reason(exc)}", summary)
    bridge: Any = {"auto": "auto", "on": True, "off": False}[args.bridge]
    try:
        sup = await Supervisor.start(
            backend if backend is not None else args.connect, policy=args.policy,
            dialog_timeout_s=args.dialog_timeout, bridge=bridge, record=args.out,
            redact=args.redact, record_meta={"cdpnb_record": {"url": redact_url(args.url)}})
    except CdpnbError as exc:  # (an EndpointError is an OSError too: it comes first)
        why = f"cannot start: {exc}"
    except OSError as exc:  # the trace: not created, or its header not written
        why = f"cannot write the trace {args.out}: {output.reason(exc)}"
    except ValueError as exc:
        why = f"cannot start: {exc}"
    except BaseException:  # (anything else, an interrupt included: the browser ends too)
        if backend is not None:
            await backend.aclose()
        raise
    else:
        why = ""
    if why:
        if backend is not None:
            await backend.aclose()
        return _say_failed(args, why, summary)
    recorder = sup.recorder
    assert recorder is not None  # record= was given
    _stop_when_unwritable(recorder, stop)
    output.err().print(f"recording to {args.out} until Ctrl-C or SIGTERM", overflow="fold")
    began = time.monotonic()
    unloadable = ""
    try:
        try:
            await sup.navigate(args.url)
        except NavigationError as exc:  # the browser could not load it: nothing to record
            unloadable = str(exc)
        except CdpnbError as exc:  # still worth recording: a dialog may hold the load
            output.err().print(f"{exc} (recording goes on)", style="yellow")
        if not unloadable and not stop.is_set():
            await _run_until_stopped(
                stop, args.duration, lambda: _record_status(sup, began),
                # (the trace's failure is said below, as the reason the recording ended)
                lambda: [hint for hint in sup.hints if hint != recorder.failure])
    finally:
        duration_s = round(time.monotonic() - began, 3)
        try:
            await sup.stop()
        finally:  # (a stop that failed leaves no browser behind)
            if backend is not None:
                await backend.aclose()
    summary.update(
        duration_s=duration_s, messages=recorder.written,
        recorded=sum(recorder.counts.values()), write_errors=recorder.write_errors,
        dialogs=sup.state.dialog_seq, frames=len(sup.state.frames))
    if recorder.failure is not None:  # first: recorded data was lost
        return _say_failed(args, f"{recorder.failure} ({recorder.write_errors} messages "
                                 "lost)", summary)
    if unloadable:
        return _say_failed(args, f"{unloadable}; the trace so far ({recorder.written} "
                                 f"messages) is in {args.out}", summary)
    if args.json:
        output.print_json({**summary, "error": None})
    else:
        output.out().print(f"recorded {recorder.written} messages in {duration_s:.1f} s to "
                           f"{args.out} ({summary['dialogs']} dialogs, {summary['frames']} "
                           "frames)")
    return OK


def _stop_when_unwritable(recorder: Recorder, stop: asyncio.Event) -> None:
    """End the recording as soon as the trace cannot be written (a full disk): what
    would follow is lost. The Supervisor's own callback (its hints) still runs."""
    loop = asyncio.get_running_loop()
    told = recorder.on_error

    def on_error(failure: str) -> None:
        if told is not None:
            told(failure)
        with suppress(RuntimeError):  # (a loop that has ended has nothing to stop)
            loop.call_soon_threadsafe(stop.set)  # (called on the thread that wrote)

    recorder.on_error = on_error
