"""``cdpnb.runtime.first_of.FirstOf``: a command raced against a condition, the shape
behind navigate, set_content, close_page and every input (no browser: exact orders)."""

from __future__ import annotations

import asyncio
import gc
from typing import Any

import pytest

from cdpnb.runtime.first_of import FirstOf


async def _after(delay: float, value: Any = None, error: BaseException | None = None) -> Any:
    await asyncio.sleep(delay)
    if error is not None:
        raise error
    return value


def _unretrieved(loop: asyncio.AbstractEventLoop) -> list[dict[str, Any]]:
    """What the loop would report as never retrieved (collected from now on)."""
    seen: list[dict[str, Any]] = []
    loop.set_exception_handler(lambda _, context: seen.append(context))
    return seen


async def test_the_condition_first_leaves_the_command_cancelled_and_awaited() -> None:
    condition: asyncio.Future[str] = asyncio.get_running_loop().create_future()
    condition.set_result("dialog")
    async with FirstOf(_after(30, "reply"), condition) as first:
        await first.wait(5)
        assert first.condition_met and not first.command_done
        assert first.condition_error is None
    assert first.command.cancelled()
    assert condition.result() == "dialog"


async def test_the_command_first_gives_its_result_and_leaves_the_condition_to_its_owner(
        ) -> None:
    condition: asyncio.Future[str] = asyncio.get_running_loop().create_future()
    async with FirstOf(_after(0, "reply"), condition) as first:
        await first.wait(5)
        assert first.command_done and not first.condition_met
        assert await first.command_result(0) == "reply"
    assert not condition.done()  # the caller's: several waits may share it
    condition.cancel()


async def test_an_owned_condition_is_cancelled_with_the_command() -> None:
    condition = asyncio.ensure_future(_after(30))
    async with FirstOf(_after(30), condition, owns_condition=True) as first:
        await first.wait(0.01)
        assert not first.command_done and not condition.done()
    assert first.command.cancelled() and condition.cancelled()


async def test_the_command_error_is_raised_where_its_result_is_asked_for() -> None:
    condition: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    async with FirstOf(_after(0, error=ValueError("refused")), condition) as first:
        await first.wait(5)
        assert isinstance(first.command_error, ValueError)
        with pytest.raises(ValueError, match="refused"):
            await first.command_result(0)
    condition.cancel()


async def test_a_failed_condition_names_its_error_and_is_not_met() -> None:
    condition: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    condition.set_exception(ConnectionError("lost"))
    async with FirstOf(_after(30), condition) as first:
        await first.wait(5)
        assert not first.condition_met
        assert isinstance(first.condition_error, ConnectionError)
        with pytest.raises(ConnectionError):
            await first.condition_result(0)


async def test_neither_in_time_is_a_timeout_error_from_the_result() -> None:
    condition: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    loop = asyncio.get_running_loop()
    async with FirstOf(_after(30), condition) as first:
        began = loop.time()
        await first.wait(0.05)
        assert not first.command_done and not condition.done()
        with pytest.raises(TimeoutError):
            await first.command_result(0.05)
        assert loop.time() - began < 10  # bounded, not waited out
        with pytest.raises(TimeoutError):
            await first.condition_result(-1)  # a budget spent is no wait at all
    condition.cancel()


async def test_a_command_that_fails_after_nobody_waits_is_not_reported_unhandled() -> None:
    seen = _unretrieved(asyncio.get_running_loop())
    condition: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    condition.set_result(None)
    failing = asyncio.get_running_loop().create_future()

    async def fails_late() -> None:
        await failing

    async with FirstOf(fails_late(), condition) as first:
        await first.wait(5)
        failing.set_exception(RuntimeError("late"))  # fails as the block ends
        await asyncio.sleep(0)
    del first
    gc.collect()
    await asyncio.sleep(0)
    assert seen == []


async def test_used_outside_its_block_says_how_to_use_it() -> None:
    condition: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    work = _after(0)
    first = FirstOf(work, condition)
    with pytest.raises(RuntimeError, match="async with FirstOf"):
        await first.wait(0)
    work.close()
