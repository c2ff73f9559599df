"""``cdpnb record`` and ``cdpnb replay``: run until Ctrl-C (SIGINT), SIGTERM or
``--duration``, with a one-line status on stderr that fits the terminal, redrawn in
place; where stderr is no terminal (a CI log, a pipe) or cannot redraw (``TERM=dumb``),
the status as a plain line every :data:`PLAIN_STATUS_S` seconds (``record``'s command
itself: ``cdpnb.cli.record``)."""

from __future__ import annotations

import argparse
import asyncio
import math
import signal
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress

from rich.live import Live
from rich.text import Text

from cdpnb.cli import output
from cdpnb.cli.counts import count
from cdpnb.cli.status import FAILED, OK
from cdpnb.playback.backend import ReplayBackend, replay
from cdpnb.runtime.waits import wait_for
from cdpnb.supervisor import Supervisor
from cdpnb.trace import TraceFormatError

__all__ = ["PLAIN_STATUS_S", "check_replay_args", "command_parser", "replay_command"]

#: Seconds between status-line redraws.
TICK_S = 0.25
#: Seconds between two plain status lines (stderr no terminal): a log that shows the
#: command is alive without a line per redraw.
PLAIN_STATUS_S = 5.0


def command_parser(parser: argparse.ArgumentParser, name: str) -> argparse.ArgumentParser:
    """Command ``name``'s own parser under ``cdpnb``'s (its usage line is the one a usage
    error shows), or ``parser`` itself."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            found = action.choices.get(name)
            if isinstance(found, argparse.ArgumentParser):
                return found
    return parser


def check_replay_args(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """What ``replay`` cannot use is a usage error (exit 2) that names it."""
    parser = command_parser(parser, "replay")
    if args.speed is not None and not 0 < args.speed < math.inf:
        parser.error(f"--speed must be a positive number (1.0: the recorded pace), got "
                     f"{args.speed:g}")
    if args.duration is not None and not 0 < args.duration < math.inf:
        parser.error(f"--duration must be a positive number of seconds, got "
                     f"{args.duration:g}")


def _stop_on_signals() -> asyncio.Event:
    """An event set by SIGINT or SIGTERM (the normal way to end record and replay)."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    return stop


@contextmanager
def _status_line() -> Iterator[Callable[[str], None]]:
    """One status line on stderr, redrawn in place (a terminal), or printed as a plain
    line every :data:`PLAIN_STATUS_S` seconds (no terminal, or ``TERM=dumb``); broken
    between its `` · `` parts where the terminal is narrower, never cut."""
    console = output.err()
    if not output.redraws(console):
        last = time.monotonic()

        def plain(line: str) -> None:
            nonlocal last
            if time.monotonic() - last >= PLAIN_STATUS_S:
                last = time.monotonic()
                console.print(output.Words(line))

        yield plain
        return
    live = Live(Text(""), console=console, transient=True, auto_refresh=False)
    with live:
        yield lambda line: live.update(output.Words(line), refresh=True)


async def _run_until_stopped(stop: asyncio.Event, duration: float | None,
                             status: Callable[[], str], hints: Callable[[], list[str]]) -> None:
    began = time.monotonic()
    shown = 0
    with _status_line() as show:
        while not stop.is_set():
            new = hints()[shown:]
            for hint in new:  # apart from the status line: printed above it, once
                output.err().print(f"hint: {hint}", style="yellow")
            shown += len(new)
            show(status())
            if duration is not None and time.monotonic() - began >= duration:
                return
            with suppress(TimeoutError):
                await wait_for(stop.wait(), TICK_S)


def _record_status(sup: Supervisor, began: float) -> str:
    state = sup.state
    recorded = sum(sup.recorder.counts.values()) if sup.recorder else 0
    oopifs = sum(f.is_oopif for f in state.frames.values())
    link = "connected" if sup.connected else ("reconnecting" if sup.alive else "down")
    return (f"recording {time.monotonic() - began:5.1f} s · {count(recorded, 'message')} · "
            f"{count(len(state.frames), 'frame')} ({count(oopifs, 'OOPIF')}) · "
            f"{count(state.dialog_seq, 'dialog')} ({len(state.pending_dialogs)} open) · "
            f"{count(state.console_errors_total, 'console error')} · {link}")


def _replay_status(backend: ReplayBackend, began: float) -> str:
    return (f"serving {time.monotonic() - began:5.1f} s · "
            f"{count(backend.connections, 'connection')} · "
            f"{count(len(backend.unmatched), 'unmatched command')}")


async def _replay(args: argparse.Namespace) -> int:
    stop = _stop_on_signals()
    try:
        backend = await replay(args.trace, speed=args.speed)
    except (OSError, TraceFormatError, TypeError, ValueError) as exc:
        output.err().print(f"cdpnb replay: cannot serve {args.trace}: {output.reason(exc)}",
                           style="red")
        return FAILED
    # A WebDriver classic recording is served in CDP's framing, which only cdpnb's own
    # replay connector speaks (no WebDriver client, and not Supervisor.start(url)): its
    # URL alone is of no use, so what is printed is how it is replayed.
    usage = None
    if not backend.trace.protocol_spec.own_socket:  # (WebDriver classic: HTTP only)
        usage = (f"async with cdpnb.replay({str(args.trace)!r}) as backend:\n"
                 f"    sup = await cdpnb.Supervisor.start(backend)")
    info = {"cdp_url": backend.cdp_url, "http_url": backend.http_url,
            "trace": str(args.trace), "recorded": backend.trace.label,
            "messages": len(backend.trace.messages), "protocol": backend.trace.protocol,
            "replay_with": usage}
    if args.json:
        output.print_json(info)
    else:
        console = output.out()
        console.print(f"serving {info['trace']} ({info['recorded']}, "
                      f"{count(len(backend.trace.messages), 'message')})", overflow="fold")
        if usage is None:
            console.print(info["cdp_url"], overflow="fold", soft_wrap=True)
        else:
            console.print("a WebDriver classic recording replays to cdpnb itself, not to a "
                          "URL; in a notebook:")
            # Whole lines (the terminal wraps what is wider), so each pastes as it is.
            pasted = [f"  {line}" for line in usage.splitlines()]
            pasted += ["or probe it:", f"  cdpnb probe --backends replay:{args.trace}"]
            for line in pasted:
                console.print(output.text(line), soft_wrap=True)
        console.file.flush()
    output.err().print("serving until Ctrl-C or SIGTERM")
    began = time.monotonic()
    try:
        await _run_until_stopped(stop, args.duration, lambda: _replay_status(backend, began),
                                 lambda: [])
    finally:
        await backend.aclose()
    return OK


def replay_command(args: argparse.Namespace) -> int:
    return asyncio.run(_replay(args))
