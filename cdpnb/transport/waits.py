"""``wait_for``: ``asyncio.wait_for`` without needing a current task.

From Python 3.12 ``asyncio.wait_for`` is ``asyncio.timeout``, which refuses to run
outside a task; a blocking call that cdpnb drives by hand on its thread's private loop
(``Engine._drive``) has none until it first yields. cdpnb's own code waits with this
one instead (``tests/test_sync.py`` checks the package for the others).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import TypeVar

__all__ = ["wait_for"]

T = TypeVar("T")


async def wait_for(awaitable: Awaitable[T], timeout: float | None) -> T:
    """``awaitable``'s result, or TimeoutError after ``timeout`` seconds (None: no limit),
    when it is cancelled; cancelling the wait cancels it too, as ``asyncio.wait_for``."""
    future = asyncio.ensure_future(awaitable)
    if timeout is None:
        return await future
    try:
        done, _ = await asyncio.wait({future}, timeout=max(0.0, timeout))
    except asyncio.CancelledError:
        future.cancel()
        raise
    if done:
        return future.result()
    future.cancel()
    try:
        return await future  # (it may finish anyway, ignoring the cancellation)
    except asyncio.CancelledError:
        raise TimeoutError(f"no result within {timeout:g} s") from None
