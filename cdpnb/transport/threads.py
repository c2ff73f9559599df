"""Blocking calls off the event loop, in a thread that ends with the call.

Not ``asyncio.to_thread``: the loop's default executor keeps its worker threads
(``asyncio_0``, ``asyncio_1``, ...) alive after the call, so a notebook kernel that
connected, sniffed and closed a few times showed threads cdpnb had started and never
ended. Each call here gets a daemon thread that exits when the call returns.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable
from typing import TypeVar

__all__ = ["in_own_thread"]

T = TypeVar("T")


async def in_own_thread(work: Callable[[], T], name: str = "cdpnb-blocking") -> T:
    """Run ``work()`` in a thread of its own and await its result (or exception).

    If the awaiting task is cancelled, the thread still finishes its call and the result
    is dropped; a loop that closed meanwhile is not an error.
    """
    loop = asyncio.get_running_loop()
    done: asyncio.Future[T] = loop.create_future()

    def settle(value: T | None, exc: BaseException | None) -> None:  # on the loop
        if done.done():
            return
        if exc is not None:
            done.set_exception(exc)
        else:
            done.set_result(value)  # type: ignore[arg-type]

    def run() -> None:
        try:
            value = work()
        except BaseException as exc:  # handed to the awaiting task
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
                loop.call_soon_threadsafe(settle, None, exc)
            return
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(settle, value, None)

    threading.Thread(target=run, name=name, daemon=True).start()
    return await done
