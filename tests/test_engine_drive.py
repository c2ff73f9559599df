"""A blocking call on a thread with no loop running is driven by hand (``Engine._drive``)
until it awaits something of its loop, then a task on that loop takes it over: every
outcome must be the one ``asyncio.run`` of the same coroutine would give."""

from __future__ import annotations

import ast
import asyncio
import contextvars
import sys
import threading
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any, TypeVar

import pytest

import cdpnb
from cdpnb.runtime.engine import engine
from cdpnb.runtime.waits import wait_for

T = TypeVar("T")
PACKAGE = Path(cdpnb.__file__).parent


def in_a_script_thread(call: Callable[[], T]) -> T:
    """``call()`` in a fresh thread with no loop running (a script's situation)."""
    out: dict[str, Any] = {}

    def run() -> None:
        try:
            out["value"] = call()
        except BaseException as exc:  # handed to the test
            out["error"] = exc

    worker = threading.Thread(target=run)
    worker.start()
    worker.join(10)
    assert not worker.is_alive()
    if "error" in out:
        raise out["error"]
    return out["value"]  # type: ignore[no-any-return]


def here(coro: Coroutine[Any, Any, T]) -> T:
    return engine.run_sync(coro, here=True)


def test_a_call_that_never_yields_runs_without_a_task_and_blocks_here() -> None:
    async def call() -> tuple[Any, bool, bool]:
        return asyncio.current_task(), engine.blocks_here(), \
            asyncio.get_running_loop() is not None

    task, blocks, has_loop = in_a_script_thread(lambda: here(call()))
    assert task is None and blocks and has_loop
    assert not engine.blocks_here()  # (the test's own thread: not a driven call)


def test_a_call_that_awaits_the_loop_is_taken_over_by_a_task_with_its_outcome() -> None:
    async def child() -> bool:
        return engine.blocks_here()  # a task the call started waits on the loop

    async def call() -> list[Any]:
        seen: list[Any] = [engine.blocks_here()]
        spawned = asyncio.ensure_future(child())  # scheduled while driven by hand
        await asyncio.sleep(0.01)  # a timer of the private loop: the loop takes over
        seen += [asyncio.current_task() is not None, engine.blocks_here(), await spawned]
        await asyncio.sleep(0)  # a bare yield
        future = asyncio.get_running_loop().create_future()
        asyncio.get_running_loop().call_soon(future.set_result, "set")
        seen.append(await future)
        return seen

    assert in_a_script_thread(lambda: here(call())) == [True, True, True, False, "set"]


def test_errors_and_cancellation_reach_the_caller_and_the_coroutine() -> None:
    async def fails_at_once() -> None:
        raise KeyError("at once")

    async def fails_on_the_loop() -> None:
        await asyncio.sleep(0)
        raise KeyError("on the loop")

    with pytest.raises(KeyError, match="at once"):
        in_a_script_thread(lambda: here(fails_at_once()))
    with pytest.raises(KeyError, match="on the loop"):
        in_a_script_thread(lambda: here(fails_on_the_loop()))

    cleaned: list[str] = []

    async def cancelled_by_its_loop() -> None:
        asyncio.get_running_loop().call_later(0.01, task_of_call.cancel)
        try:
            await asyncio.sleep(5)
        finally:
            cleaned.append("finally ran")

    task_of_call: Any = None

    async def outer() -> None:
        nonlocal task_of_call
        await asyncio.sleep(0)
        task_of_call = asyncio.current_task()
        await cancelled_by_its_loop()

    with pytest.raises(asyncio.CancelledError):
        in_a_script_thread(lambda: here(outer()))
    assert cleaned == ["finally ran"]


def test_a_timeout_bounds_the_call_on_the_loop() -> None:
    async def slow() -> None:
        await asyncio.sleep(5)

    with pytest.raises(TimeoutError, match="did not finish within 0.05 s"):
        in_a_script_thread(lambda: engine.run_sync(slow(), 0.05, here=True))


def test_the_thread_can_call_again_after_each_outcome() -> None:
    async def value(v: int, yields: bool) -> int:
        if yields:
            await asyncio.sleep(0)
        return v

    def many() -> list[int]:
        out = []
        for i in range(6):
            try:
                out.append(here(value(i, yields=i % 2 == 0)))
                if i == 3:
                    here(asyncio.sleep(-1, result=None))
            except KeyError:
                pass
        return out

    assert in_a_script_thread(many) == list(range(6))


async def test_wait_for_keeps_asyncio_wait_fors_outcomes() -> None:
    loop = asyncio.get_running_loop()
    assert await wait_for(asyncio.sleep(0, result="done"), 1) == "done"
    assert await wait_for(asyncio.sleep(0, result="no limit"), None) == "no limit"
    pending = loop.create_future()
    with pytest.raises(TimeoutError):
        await wait_for(pending, 0.01)
    assert pending.cancelled()  # as asyncio.wait_for: what timed out is cancelled
    with pytest.raises(TimeoutError):
        await wait_for(asyncio.sleep(1), 0)

    inner = loop.create_future()
    outer = asyncio.ensure_future(wait_for(inner, 5))
    await asyncio.sleep(0)
    outer.cancel()
    with pytest.raises(asyncio.CancelledError):
        await outer
    assert inner.cancelled()  # cancelling the wait cancels what it waits for

    async def ignores_cancellation() -> str:
        try:
            await asyncio.sleep(5)
        except asyncio.CancelledError:
            return "finished anyway"
        return "slept"

    assert await wait_for(ignores_cancellation(), 0.01) == "finished anyway"


def test_wait_for_needs_no_task_where_a_driven_call_has_none() -> None:
    async def call() -> str:
        assert asyncio.current_task() is None  # driven by hand so far
        return await wait_for(asyncio.sleep(0.01, result="waited"), 1)

    assert in_a_script_thread(lambda: here(call())) == "waited"


def test_the_package_waits_only_in_ways_a_driven_call_can() -> None:
    """``asyncio.timeout`` (and ``asyncio.wait_for``, which is it from Python 3.12) need
    a current task, which a call driven by hand does not have before it first yields;
    ``asyncio.TaskGroup`` too. cdpnb uses ``cdpnb.runtime.waits.wait_for``."""
    refused = {"wait_for", "timeout", "timeout_at", "TaskGroup", "timeouts", "taskgroups"}
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and node.attr in refused \
                    and isinstance(node.value, ast.Name) and node.value.id == "asyncio":
                found.append(f"{path.relative_to(PACKAGE)}:{node.lineno}: asyncio.{node.attr}")
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("asyncio"):
                names = {alias.name for alias in node.names} & refused
                if names or node.module in ("asyncio.timeouts", "asyncio.taskgroups"):
                    found.append(f"{path.relative_to(PACKAGE)}:{node.lineno}: from "
                                 f"{node.module} import {sorted(names)}")
    assert found == []
    assert len(list(PACKAGE.rglob("*.py"))) > 100  # (the package was walked)


VAR: contextvars.ContextVar[str] = contextvars.ContextVar("VAR", default="unset")


def test_a_call_keeps_one_context_a_copy_of_the_callers_as_runner_run_does() -> None:
    async def call() -> list[str]:
        token = VAR.set("inside")
        seen = [VAR.get()]
        await asyncio.sleep(0)  # taken over by the loop: the same context goes on
        seen.append(VAR.get())
        VAR.reset(token)  # (a token is only good in the context that made it)
        seen.append(VAR.get())
        VAR.set("left inside")
        return seen

    def script() -> tuple[list[str], str]:
        VAR.set("caller's")
        return here(call()), VAR.get()

    assert in_a_script_thread(script) == (["inside", "inside", "caller's"], "caller's")

    async def at_once() -> str:
        VAR.set("set by a call that never yields")
        return VAR.get()

    def script_at_once() -> tuple[str, str]:
        return here(at_once()), VAR.get()

    assert in_a_script_thread(script_at_once) == ("set by a call that never yields", "unset")


def test_tasks_a_call_starts_get_their_first_step_and_async_generators_their_hooks() -> None:
    steps: list[str] = []

    async def child() -> None:
        steps.append("child's first step")
        await asyncio.sleep(0)
        steps.append("child's second step")

    started: list[asyncio.Future[None]] = []

    async def starts_and_returns() -> tuple[Any, ...]:
        # Never awaited: runner.run would give it a first step too.
        started.append(asyncio.ensure_future(child()))
        return sys.get_asyncgen_hooks()

    def script() -> tuple[Any, ...]:
        hooks = here(starts_and_returns())
        steps.append("returned")
        return hooks

    firstiter, finalizer = in_a_script_thread(script)
    assert steps[:2] == ["child's first step", "returned"] or \
        steps[:2] == ["child's first step", "child's second step"]
    # The loop's own hooks were installed while driven (an abandoned async generator
    # is finalised by the loop, as in a loop's step).
    assert firstiter is not None and finalizer is not None
    assert sys.get_asyncgen_hooks() == (None, None) or \
        sys.get_asyncgen_hooks().firstiter is not firstiter


async def test_wait_for_cancelled_waits_for_the_awaited_to_end_and_stays_cancelled() -> None:
    cleaned: list[str] = []

    async def slow_to_end() -> None:
        try:
            await asyncio.sleep(5)
        finally:
            await asyncio.sleep(0.05)  # clean-up that takes a while
            cleaned.append("done")

    outer = asyncio.ensure_future(wait_for(slow_to_end(), 5))
    await asyncio.sleep(0.01)
    outer.cancel()
    with pytest.raises(asyncio.CancelledError):
        await outer
    assert cleaned == ["done"]  # the wait ended after the clean-up, as asyncio's does

    # Cancelled while the timed-out awaitable is still ending: a cancellation, never a
    # TimeoutError (a Ctrl-C must not come out as a timeout).
    cleaned.clear()
    outer = asyncio.ensure_future(wait_for(slow_to_end(), 0.01))
    await asyncio.sleep(0.03)  # timed out; its clean-up is under way
    outer.cancel()
    with pytest.raises(asyncio.CancelledError):
        await outer
    assert cleaned == ["done"]
