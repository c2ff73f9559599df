"""A command in flight raced against a condition, within a budget: the one shape behind
``navigate`` (its navigation against the page going away), ``set_content`` (the
writing against the dialog it opens), ``close_page`` (the close against the state
saying it closed) and every input (the key or click against the dialog it opens).

::

    async with FirstOf(core.send(...), opened) as first:
        await first.wait(timeout)               # whichever ends first, or the time
        if first.condition_met:                 # the condition came first
            ...
        return await first.command_result(left)  # else the command's, within what's left

What is left of the command when the block ends is cancelled and awaited (its late
reply is nobody's), and its error, if it failed after the block stopped caring, is
retrieved so asyncio never reports it as unhandled. The condition is the caller's
(a future several waits may share) and is left as it is, unless ``owns_condition``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from types import TracebackType
from typing import Any, Generic, TypeVar

__all__ = ["FirstOf"]

T = TypeVar("T")
C = TypeVar("C")
R = TypeVar("R")


class FirstOf(Generic[T, C]):
    """``command`` (started as a task on entry) against ``condition`` (a future)."""

    def __init__(self, command: Awaitable[T], condition: asyncio.Future[C], *,
                 owns_condition: bool = False) -> None:
        self._work = command
        self.condition = condition
        self._owns_condition = owns_condition
        self._command: asyncio.Future[T] | None = None

    async def __aenter__(self) -> FirstOf[T, C]:
        self._command = asyncio.ensure_future(self._work)
        return self

    async def __aexit__(self, kind: type[BaseException] | None, error: BaseException | None,
                        tb: TracebackType | None) -> None:
        left = [f for f in (self._command, self.condition if self._owns_condition else None)
                if f is not None]
        for future in left:
            if not future.done():
                future.cancel()
        if left:
            await asyncio.wait(left)
        for future in left:
            if not future.cancelled():
                future.exception()  # retrieved: a failure nobody waits for any more

    @property
    def command(self) -> asyncio.Future[T]:
        """The command's task (started on entering the block)."""
        if self._command is None:
            raise RuntimeError("FirstOf is used as `async with FirstOf(...) as first`")
        return self._command

    async def wait(self, timeout: float | None) -> None:
        """Until the command or the condition is done, or ``timeout`` s (None: no
        bound) have passed: nothing is raised here."""
        either: set[asyncio.Future[Any]] = {self.command, self.condition}
        await asyncio.wait(either,
                           timeout=None if timeout is None else max(0.0, timeout),
                           return_when=asyncio.FIRST_COMPLETED)

    @property
    def command_done(self) -> bool:
        return self.command.done()

    @property
    def command_error(self) -> BaseException | None:
        """The error the command failed with (None while pending, on a result, or
        cancelled)."""
        return _error_of(self.command)

    @property
    def condition_met(self) -> bool:
        """The condition is done with a result (not failed, not cancelled)."""
        c = self.condition
        return c.done() and not c.cancelled() and c.exception() is None

    @property
    def condition_error(self) -> BaseException | None:
        """The error the condition failed with (None while pending, on a result, or
        cancelled)."""
        return _error_of(self.condition)

    async def command_result(self, timeout: float | None) -> T:
        """The command's result (or its error), waiting up to ``timeout`` more s for it;
        TimeoutError if it has not come by then."""
        return await _within(self.command, timeout)

    async def condition_result(self, timeout: float | None) -> C:
        """The condition's result (or its error), waiting up to ``timeout`` more s;
        TimeoutError if it has not come by then."""
        return await _within(self.condition, timeout)


def _error_of(future: asyncio.Future[Any]) -> BaseException | None:
    return future.exception() if future.done() and not future.cancelled() else None


async def _within(future: asyncio.Future[R], timeout: float | None) -> R:
    # Not runtime.waits.wait_for: that cancels what it waits for on a timeout or when
    # the wait is cancelled, and the condition may be the caller's, shared with others.
    if not future.done():
        await asyncio.wait({future}, timeout=None if timeout is None else max(0.0, timeout))
    if not future.done():
        raise TimeoutError
    return future.result()
