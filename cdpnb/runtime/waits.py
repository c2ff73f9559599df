"""``wait_for``: ``asyncio.wait_for`` without needing a current task.

From Python 3.12 ``asyncio.wait_for`` is ``asyncio.timeout``, which refuses to run
outside a task; a blocking call that cdpnb drives by hand on its thread's private loop
(``cdpnb.runtime.drive``) has none until it first yields. cdpnb's own code waits with this
one instead (``tests/test_engine_drive.py`` checks the package for the others).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import TypeVar

__all__ = ["wait_for"]

T = TypeVar("T")


async def wait_for(awaitable: Awaitable[T], timeout: float | None) -> T:
    """``awaitable``'s result, or TimeoutError after ``timeout`` seconds (None: no limit)
    once it has been cancelled; cancelling the wait cancels it too and waits for it to
    end, as ``asyncio.wait_for`` does."""
    if timeout is None:
        return await awaitable
    future = asyncio.ensure_future(awaitable)
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
