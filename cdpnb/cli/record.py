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
from cdpnb.cli.counts import count
from cdpnb.cli.live import _record_status, _run_until_stopped, _stop_on_signals, command_parser
from cdpnb.cli.status import FAILED, OK
from cdpnb.errors import CdpnbError, NavigationError
from cdpnb.protocol.credentials import redact_url
from cdpnb.session.options import MAX_TIMEOUT_S
from cdpnb.state import PendingDialog
from cdpnb.supervisor import POLICIES, Policy, Supervisor
from cdpnb.terminal_text import inert
from cdpnb.trace import Recorder

__all__ = ["DIALOG_ANSWERS", "DIALOG_TIMEOUT_S", "RECORDABLE", "add_arguments",
           "check_record_args", "record_command"]

#: The kinds ``record --backend`` launches: every kind ``cdpnb.launch`` starts but the
#: runtimes (node, deno, bun: no page to open a URL in; Page.navigate answers -32601).
RECORDABLE = tuple(kind for kind in LAUNCHABLE if kind not in RUNTIME_KINDS)
#: ``--dialogs``: what each answer is as the supervisor's dialog policy.
DIALOG_ANSWERS: dict[str, Policy] = {"wait": "must_respond", "accept": "auto_accept",
                                     "dismiss": "auto_dismiss"}
#: ``--dialog-timeout``'s default: ``Supervisor.start``'s.
DIALOG_TIMEOUT_S = 300.0
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
                        help="record in a running browser instead of launching one: its "
                             "CDP or WebDriver BiDi ws://… endpoint, or http://host:port (a "
                             "DevTools port, or a WebDriver server: WebDriver classic)")
    parser.add_argument("--dialogs", default=None, choices=tuple(DIALOG_ANSWERS),
                        help="what to do when the page opens an alert, confirm or prompt: "
                             "accept it (OK; a prompt gets its default text), dismiss it "
                             "(Cancel), or wait for an answer from another client or a person "
                             "at the browser, and dismiss it after --dialog-timeout. Each "
                             "dialog and its answer is recorded (default wait)")
    # The supervisor's names for the same choices (the option's name before --dialogs).
    parser.add_argument("--policy", default=None, choices=POLICIES, help=argparse.SUPPRESS)
    parser.add_argument("--dialog-timeout", type=float, default=None, metavar="S",
                        help=f"with --dialogs wait: seconds a dialog waits for an answer "
                             f"before cdpnb dismisses it (default {DIALOG_TIMEOUT_S:g})")
    parser.add_argument("--bridge", default="auto", choices=("auto", "on", "off"),
                        help="answer dialogs from inside the page instead of through the "
                             "browser, for a browser driven by a client that closes them "
                             "itself (Playwright does); auto: for chromium+playwright, and "
                             "once such a client is seen (default auto)")
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
    if args.dialogs is not None and args.policy is not None:
        parser.error("--policy is the old name of --dialogs: give one of them")
    if args.dialog_timeout is not None:
        _check_dialog_timeout(parser, args)
    if args.duration is not None and not 0 < args.duration < math.inf:
        parser.error(f"--duration must be a positive number of seconds, got "
                     f"{args.duration:g}")


def _check_dialog_timeout(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    if _policy(args) != "must_respond":
        parser.error(f"--dialog-timeout is how long a dialog waits for an answer: it goes "
                     f"with --dialogs wait, not --dialogs {args.dialogs or args.policy}")
    if not 0 < args.dialog_timeout < math.inf:
        parser.error(f"--dialog-timeout must be a positive number of seconds, got "
                     f"{args.dialog_timeout:g}")
    if args.dialog_timeout > MAX_TIMEOUT_S:  # (milliseconds meant: the shared check says so)
        parser.error(f"--dialog-timeout is in seconds: {args.dialog_timeout:g} s is more "
                     f"than the {MAX_TIMEOUT_S:g} s cdpnb takes; did you mean "
                     f"{args.dialog_timeout / 1000:g}?")


def _policy(args: argparse.Namespace) -> Policy:
    """The supervisor's dialog policy for ``--dialogs`` (or the old ``--policy``)."""
    if args.policy is not None:
        policy: Policy = args.policy
        return policy
    return DIALOG_ANSWERS[args.dialogs or "wait"]


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
    wait_s = DIALOG_TIMEOUT_S if args.dialog_timeout is None else args.dialog_timeout
    sup = await _start(args, backend, wait_s)
    if isinstance(sup, str):
        return _say_failed(args, sup, summary)
    recorder = sup.recorder
    assert recorder is not None  # record= was given
    _stop_when_unwritable(recorder, stop)
    output.err().print(f"recording to {args.out} until Ctrl-C or SIGTERM", overflow="fold")
    began = time.monotonic()
    try:
        unloadable = await _record_page(
            args, sup, stop, began, wait_s if _policy(args) == "must_respond" else None)
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
    return _say_recorded(args, recorder, unloadable, summary)


async def _start(args: argparse.Namespace, backend: Backend | None, wait_s: float
                 ) -> Supervisor | str:
    """The supervisor recording to ``--out``, or why it could not start (the browser
    launched for it closed)."""
    bridge: Any = {"auto": "auto", "on": True, "off": False}[args.bridge]
    try:
        return await Supervisor.start(
            backend if backend is not None else args.connect, policy=_policy(args),
            dialog_timeout_s=wait_s, bridge=bridge, record=args.out,
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
    if backend is not None:
        await backend.aclose()
    return why


async def _record_page(args: argparse.Namespace, sup: Supervisor, stop: asyncio.Event,
                       began: float, wait_s: float | None) -> str:
    """Open the page and record until stopped; returns why the page could not load
    ("" when it did). ``wait_s``: how long a dialog waits for an answer (None: none
    does)."""
    recorder = sup.recorder
    assert recorder is not None  # record= was given
    unloadable = ""
    try:
        await sup.navigate(args.url)
    except NavigationError as exc:  # the browser could not load it: nothing to record
        unloadable = str(exc)
    except CdpnbError as exc:  # still worth recording: a dialog may hold the load
        output.err().print(f"{exc} (recording goes on)", style="yellow")
    if not unloadable and not stop.is_set():
        await _run_until_stopped(stop, args.duration, lambda: _record_status(sup, began),
                                 _Notices(sup, recorder, wait_s))
    return unloadable


def _say_recorded(args: argparse.Namespace, recorder: Recorder, unloadable: str,
                  summary: dict[str, Any]) -> int:
    """What the recording kept (or lost, first), and its exit status."""
    if recorder.failure is not None:  # first: recorded data was lost
        return _say_failed(args, f"{recorder.failure} "
                                 f"({count(recorder.write_errors, 'message')} lost)", summary)
    if unloadable:
        return _say_failed(args, f"{unloadable}; the trace so far "
                                 f"({count(recorder.written, 'message')}) is in {args.out}",
                           summary)
    if args.json:
        output.print_json({**summary, "error": None})
    else:
        output.out().print(f"recorded {count(recorder.written, 'message')} in "
                           f"{summary['duration_s']:.1f} s to {args.out} "
                           f"({count(summary['dialogs'], 'dialog')}, "
                           f"{count(summary['frames'], 'frame')})")
    return OK


class _Notices:
    """What ``record`` says above its status line, each once and in order (the status
    line asks for the whole list and prints what is new): the supervisor's hints but the
    trace's failure (said as the reason the recording ended), and, when dialogs wait for
    an answer (``--dialogs wait``), that the first one does and how to answer instead."""

    def __init__(self, sup: Supervisor, recorder: Recorder, wait_s: float | None) -> None:
        self.sup = sup
        self.recorder = recorder
        self.wait_s = wait_s
        self.said: list[str] = []
        self._hints = 0
        self._told_waiting = wait_s is None

    def __call__(self) -> list[str]:
        hints = self.sup.hints
        self.said += [hint for hint in hints[self._hints:] if hint != self.recorder.failure]
        self._hints = len(hints)
        if not self._told_waiting and self.wait_s is not None:
            waiting = next((d for d in self.sup.state.pending_dialogs
                            if d.answerable and d.answering is None), None)
            if waiting is not None:
                self._told_waiting = True  # (once: the status line counts the open ones)
                self.said.append(_waiting_notice(waiting, self.wait_s))
        return self.said


def _waiting_notice(dialog: PendingDialog, wait_s: float) -> str:
    kind = "a dialog" if dialog.type == "unknown" else (
        f"{'an' if dialog.type[0] in 'aeiou' else 'a'} {dialog.type}")
    return (f"the page opened {kind} ({dialog.id}); it waits for an answer from another "
            f"client or a person at the browser, and cdpnb dismisses it after {wait_s:g} s. "
            "To answer each dialog at once: --dialogs accept, or --dialogs dismiss.")


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
