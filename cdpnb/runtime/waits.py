"""``wait_for``: ``asyncio.wait_for`` without needing a current task.

From Python 3.12 ``asyncio.wait_for`` is ``asyncio.timeout``, which refuses to run
outside a task; a blocking call that cdpnb drives by hand on its thread's private loop
(``cdpnb.runtime.drive``) has none until it first yields. cdpnb's own code waits with this
one instead (``tests/test_engine_drive.py`` checks the package for the others).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import TypeVar, cast

__all__ = ["wait_for"]

T = TypeVar("T")


async def wait_for(awaitable: Awaitable[T], timeout: float | None) -> T:
    """``awaitable``'s result, or TimeoutError after ``timeout`` seconds (None: no limit)
    once it has been cancelled; cancelling the wait cancels it too and waits for it to
    end, as ``asyncio.wait_for`` does."""
    if timeout is None:
        return await awaitable
    if isinstance(awaitable, asyncio.Future) and not isinstance(awaitable, asyncio.Task):
        return await _future_for(cast("asyncio.Future[T]", awaitable), timeout)
    future: asyncio.Future[T] = asyncio.ensure_future(awaitable)
    timed_out = False
    try:
        done, _ = await asyncio.wait({future}, timeout=max(0.0, timeout))
        if done:
            return future.result()
        timed_out = True
        future.cancel()
        await asyncio.wait({future})  # its own clean-up runs before this wait ends
    except asyncio.CancelledError:
        if not future.done():
            if not timed_out:  # (cancelled once is enough: its clean-up is under way)
                future.cancel()
            await asyncio.wait({future})
        raise
    if future.cancelled():
        raise TimeoutError(f"no result within {timeout:g} s")
    return future.result()  # it finished anyway, ignoring the cancellation


async def _future_for(future: asyncio.Future[T], timeout: float) -> T:
    """``wait_for`` of a plain future (a waiter: nothing of its own to clean up), awaited
    directly under a timer that cancels it. ``asyncio.wait`` took one more turn of the
    loop after the future was set (its callback sets a waiter, which then wakes the
    task): an agent's ``wait_for_dialog`` paid it on every dialog."""
    expired = False

    def expire() -> None:
        nonlocal expired
        if not future.done():
            expired = True
            future.cancel()

    timer = asyncio.get_running_loop().call_later(max(0.0, timeout), expire)
    try:
        return await future
    except asyncio.CancelledError:
        if expired:
            raise TimeoutError(f"no result within {timeout:g} s") from None
        raise  # the wait was cancelled: the future with it (as awaiting cancels it)
    finally:
        timer.cancel()
