"""Blocking calls off the event loop, in a thread that ends with the call.

Not ``asyncio.to_thread``: the loop's default executor keeps its worker threads
(``asyncio_0``, ``asyncio_1``, ...) alive after the call, so a notebook kernel that
connected, sniffed, launched and closed a few times showed threads cdpnb had started
and never ended. Each call here gets a thread that exits when the call returns.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable
from typing import TypeVar

__all__ = ["in_own_thread"]

T = TypeVar("T")


def _drop(value: object) -> None:
    pass


async def in_own_thread(work: Callable[[], T], *, name: str = "cdpnb-blocking",
                        orphan: Callable[[T], None] = _drop, daemon: bool = True) -> T:
    """Run blocking ``work()`` in a thread of its own and await what it returns (or
    raises).

    If the awaiting task is cancelled (an interrupted cell, an expired ``wait_for``)
    the thread carries on, and hands what it returns to ``orphan`` to be closed rather
    than leaked (a socket just opened, a browser just started); it does so itself, so
    the cleanup needs nothing from the caller's loop, which may be blocked or closed by
    then. ``daemon=False`` makes interpreter exit wait for the call (a browser start,
    whose atexit handler then ends what it started).
    """
    loop = asyncio.get_running_loop()
    done: asyncio.Future[T] = loop.create_future()
    lock = threading.Lock()
    abandoned = False

    def deliver(value: T) -> None:  # on the loop
        # Cancelled after the thread looked, before this ran: clean up in a thread of
        # its own rather than block the loop.
        if done.cancelled():
            threading.Thread(target=orphan, args=(value,), name=f"{name}-orphan",
                             daemon=daemon).start()
        else:
            done.set_result(value)

    def fail(exc: BaseException) -> None:  # on the loop
        if not done.cancelled():
            done.set_exception(exc)

    def run() -> None:
        try:
            value = work()
        except BaseException as exc:  # handed to the awaiting task
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
                loop.call_soon_threadsafe(fail, exc)
            return
        with lock:
            wanted = not abandoned
        if wanted:
            try:
                loop.call_soon_threadsafe(deliver, value)
                return
            except RuntimeError:  # the loop closed meanwhile: nobody is waiting
                pass
        orphan(value)

    threading.Thread(target=run, name=name, daemon=daemon).start()
    try:
        return await done
    except asyncio.CancelledError:
        with lock:
            abandoned = True
        raise
