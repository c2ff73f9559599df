"""Throttled widget refreshes on the thread that owns the widgets.

ipykernel 7 drops (or garbles) comm messages sent from other threads, so a live
view never touches its widgets from cdpnb's engine thread. Instead it polls on the
loop of the thread that created it (in a notebook: the kernel's own loop, which
runs between and during awaiting cells): each tick compares the supervisor's state
object by identity — the reducers build a new one per change, so this costs
nothing when idle — and redraws at most once per period. While a cell blocks the
kernel's thread, ticks wait; the supervisor keeps folding on its own thread and the
next tick shows everything at once.

Each tick runs in an empty ``contextvars.Context``: a timer otherwise keeps the
context of the cell that created the view, and ipykernel 7 takes a message's parent
(which cell it belongs to) from a context variable, so every redraw would be filed
under that first cell, and a front end or nbclient following the running cell would
drop it. With no value set, ipykernel falls back to the request it is handling now.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
from collections.abc import Callable

__all__ = ["Refresher"]


class Refresher:
    """Calls ``tick()`` every ``period_s`` on the creating thread's running loop.

    ``tick`` returns False to stop. Without a running loop (a plain script) nothing
    is scheduled; ``tick`` then only runs when the owner calls it.
    """

    def __init__(self, tick: Callable[[], bool], period_s: float) -> None:
        if not isinstance(period_s, int | float) or isinstance(period_s, bool) \
                or not period_s > 0:
            raise ValueError(f"refresh_s must be a positive number of seconds, got {period_s!r}")
        self._tick = tick
        self.period_s = float(period_s)
        self._handle: asyncio.TimerHandle | None = None
        try:
            self.loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            self.loop = None
        self.ticks = 0
        self._schedule()

    @property
    def running(self) -> bool:
        return self._handle is not None

    def _schedule(self) -> None:
        if self.loop is not None and not self.loop.is_closed():
            self._handle = self.loop.call_later(self.period_s, self._run,
                                               context=contextvars.Context())

    def _run(self) -> None:
        self._handle = None
        self.ticks += 1
        try:
            keep_going = self._tick()
        except Exception:
            # A broken redraw must not kill the kernel loop's timer chain silently.
            self.stop()
            raise
        if keep_going:
            self._schedule()

    def stop(self) -> None:
        if self._handle is not None:
            with contextlib.suppress(RuntimeError):
                self._handle.cancel()
            self._handle = None
