"""A blocking call on a thread with no loop running runs on that thread's private loop
(``cdpnb.runtime.drive``): driven by hand until it awaits something of its loop, then
taken over by a task of that loop; or, where a Python lacks what the hand drive needs,
as a task from the start. Either way every outcome must be the one ``asyncio.run`` of
the same coroutine would give. The private asyncio this needs stays in that module."""

from __future__ import annotations

import ast
import asyncio
import contextvars
import functools
import gc
import logging
import sys
import threading
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest

import cdpnb
from cdpnb.runtime.drive import ThreadDrive
from cdpnb.runtime.engine import engine
from cdpnb.runtime.waits import wait_for

T = TypeVar("T")
PACKAGE = Path(cdpnb.__file__).parent
#: The one module allowed to touch asyncio's private names.
DRIVE = PACKAGE / "runtime" / "drive.py"


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


@pytest.fixture(params=["by hand", "as a task"])
def drive(request: pytest.FixtureRequest) -> ThreadDrive:
    return ThreadDrive(by_hand=request.param == "by hand")


def test_this_python_drives_calls_by_hand() -> None:
    """The fast path is the one in use (and so the one tested) on the Pythons the suite
    runs on; a Python without its private names would fall back to tasks."""
    drive = ThreadDrive()

    async def call() -> bool:
        return asyncio.current_task() is None

    assert drive.by_hand and in_a_script_thread(lambda: drive.run(call()))


def test_a_call_that_never_yields_blocks_here_on_a_running_loop(drive: ThreadDrive) -> None:
    async def call() -> tuple[Any, bool, bool]:
        return asyncio.current_task(), drive.blocks_here(), \
            asyncio.get_running_loop() is not None

    task, blocks, has_loop = in_a_script_thread(lambda: drive.run(call()))
    assert blocks and has_loop
    assert (task is None) == drive.by_hand  # driven by hand: no task until it yields
    assert not drive.blocks_here()  # (the test's own thread: no call of its own)


def test_the_engine_runs_here_with_its_drive_only_where_no_loop_runs() -> None:
    async def where() -> tuple[bool, bool]:
        return engine.blocks_here(), engine.in_engine()

    assert in_a_script_thread(lambda: engine.run_sync(where(), here=True)) == (True, False)

    def caller_with_a_loop() -> tuple[bool, bool]:
        async def inside() -> tuple[bool, bool]:
            # A thread whose loop runs cannot wait on a loop of its own: the engine's runs it.
            return engine.run_sync(where(), here=True)
        return asyncio.run(inside())

    assert in_a_script_thread(caller_with_a_loop) == (False, True)


def test_a_call_that_awaits_the_loop_keeps_its_outcome(drive: ThreadDrive) -> None:
    async def child() -> bool:
        return drive.blocks_here()  # a task the call started waits on the loop

    async def call() -> list[Any]:
        seen: list[Any] = [drive.blocks_here()]
        spawned = asyncio.ensure_future(child())  # scheduled while driven by hand
        await asyncio.sleep(0.01)  # a timer of the private loop: the loop takes over
        seen += [asyncio.current_task() is not None, drive.blocks_here(), await spawned]
        await asyncio.sleep(0)  # a bare yield
        future = asyncio.get_running_loop().create_future()
        asyncio.get_running_loop().call_soon(future.set_result, "set")
        seen.append(await future)
        return seen

    assert in_a_script_thread(lambda: drive.run(call())) == [True, True, True, False, "set"]


def test_errors_and_cancellation_reach_the_caller_and_the_coroutine(drive: ThreadDrive) -> None:
    async def fails_at_once() -> None:
        raise KeyError("at once")

    async def fails_on_the_loop() -> None:
        await asyncio.sleep(0)
        raise KeyError("on the loop")

    with pytest.raises(KeyError, match="at once"):
        in_a_script_thread(lambda: drive.run(fails_at_once()))
    with pytest.raises(KeyError, match="on the loop"):
        in_a_script_thread(lambda: drive.run(fails_on_the_loop()))

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
        in_a_script_thread(lambda: drive.run(outer()))
    assert cleaned == ["finally ran"]


def test_a_timeout_bounds_the_call_on_the_loop(drive: ThreadDrive) -> None:
    async def slow() -> bool:
        try:
            await asyncio.sleep(5)
        finally:
            cleaned.append(drive.blocks_here())  # its waits are the loop's: never blocked
        return True

    cleaned: list[bool] = []
    with pytest.raises(TimeoutError, match="did not finish within 0.05 s"):
        in_a_script_thread(lambda: drive.run(slow(), 0.05))
    assert cleaned == [False]
    with pytest.raises(TimeoutError, match="did not finish within 0.05 s"):
        in_a_script_thread(lambda: engine.run_sync(slow(), 0.05, here=True))

    async def quick() -> str:
        await asyncio.sleep(0)
        return "in time"

    assert in_a_script_thread(lambda: drive.run(quick(), 5)) == "in time"


def interrupt() -> None:
    raise KeyboardInterrupt  # as Ctrl-C does, out of whatever the loop runs


def test_an_interrupted_call_ends_its_clean_up_and_leaves_nothing_on_the_loop(
        drive: ThreadDrive, caplog: pytest.LogCaptureFixture) -> None:
    cleaned: list[str] = []

    async def interrupted_while_the_loop_waits() -> None:
        asyncio.get_running_loop().call_later(0.01, interrupt)
        try:
            await asyncio.sleep(5)
        finally:
            cleaned.append("finally ran")

    async def interrupted_in_its_step() -> None:
        await asyncio.sleep(0)
        interrupt()

    async def left_on_the_loop() -> set[asyncio.Task[Any]]:
        await asyncio.sleep(0)
        return asyncio.all_tasks() - {asyncio.current_task()}

    def script() -> tuple[list[str], set[asyncio.Task[Any]]]:
        outcomes = []
        for call in (interrupted_while_the_loop_waits, interrupted_in_its_step):
            try:
                drive.run(call())
            except KeyboardInterrupt:
                outcomes.append(f"{call.__name__}: KeyboardInterrupt")
        return outcomes, drive.run(left_on_the_loop())

    with caplog.at_level(logging.ERROR, logger="asyncio"):
        outcomes, left = in_a_script_thread(script)
        gc.collect()  # a task whose exception nobody saw would say so now
    assert outcomes == ["interrupted_while_the_loop_waits: KeyboardInterrupt",
                        "interrupted_in_its_step: KeyboardInterrupt"]
    assert cleaned == ["finally ran"] and left == set()
    assert [r.getMessage() for r in caplog.records] == []


def test_the_thread_can_call_again_after_each_outcome(drive: ThreadDrive) -> None:
    async def value(v: int, yields: bool) -> int:
        if yields:
            await asyncio.sleep(0)
        return v

    def many() -> list[int]:
        out = []
        for i in range(6):
            try:
                out.append(drive.run(value(i, yields=i % 2 == 0)))
                if i == 3:
                    drive.run(asyncio.sleep(-1, result=None))
            except KeyError:
                pass
        return out

    assert in_a_script_thread(many) == list(range(6))


def test_a_threads_private_loop_is_closed_when_the_thread_ends(drive: ThreadDrive) -> None:
    async def its_loop() -> asyncio.AbstractEventLoop:
        return asyncio.get_running_loop()

    loops = [in_a_script_thread(lambda: drive.run(its_loop())) for _ in range(3)]
    gc.collect()
    assert len({id(loop) for loop in loops}) == 3  # one loop per thread ...
    assert all(loop.is_closed() for loop in loops)  # ... gone with it (no fds kept)


async def test_a_private_loop_dropped_during_another_loops_step_is_closed_quietly() -> None:
    """The garbage collector may drop a dead thread's loop holder on any thread, also
    in the middle of a running loop's step, where the loop cannot go round again."""
    from cdpnb.runtime.drive import _close_quietly

    loop = asyncio.new_event_loop()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _close_quietly(loop)
        gc.collect()
    assert loop.is_closed() and [str(w.message) for w in caught] == []


VAR: contextvars.ContextVar[str] = contextvars.ContextVar("VAR", default="unset")


def test_a_call_keeps_one_context_a_copy_of_the_callers(drive: ThreadDrive) -> None:
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
        return drive.run(call()), VAR.get()

    assert in_a_script_thread(script) == (["inside", "inside", "caller's"], "caller's")

    async def at_once() -> str:
        VAR.set("set by a call that never yields")
        return VAR.get()

    def script_at_once() -> tuple[str, str]:
        return drive.run(at_once()), VAR.get()

    assert in_a_script_thread(script_at_once) == ("set by a call that never yields", "unset")


def test_tasks_a_call_starts_get_their_first_step_and_async_generators_their_hooks(
        drive: ThreadDrive) -> None:
    steps: list[str] = []

    async def child() -> None:
        steps.append("child's first step")
        await asyncio.sleep(0)
        steps.append("child's second step")

    started: list[asyncio.Future[None]] = []

    async def starts_and_returns() -> tuple[Any, ...]:
        # Never awaited: asyncio.run would give it a first step too.
        started.append(asyncio.ensure_future(child()))
        return sys.get_asyncgen_hooks()

    def script() -> tuple[Any, ...]:
        hooks = drive.run(starts_and_returns())
        steps.append("returned")
        return hooks

    firstiter, finalizer = in_a_script_thread(script)
    assert steps[:2] == ["child's first step", "returned"] or \
        steps[:2] == ["child's first step", "child's second step"]
    # The loop's own hooks were installed while the call ran (an abandoned async
    # generator is finalised by the loop, as in a loop's step) ...
    assert firstiter is not None and finalizer is not None
    # ... and only then.
    assert sys.get_asyncgen_hooks() == (None, None) or \
        sys.get_asyncgen_hooks().firstiter is not firstiter


# -- the waits a call driven by hand can use -----------------------------------------------


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

    # A plain future is awaited directly (no asyncio.wait): the same outcomes.
    settled = loop.create_future()
    loop.call_later(0.01, settled.set_result, "set")
    assert await wait_for(settled, 5) == "set"
    failed = loop.create_future()
    loop.call_soon(failed.set_exception, KeyError("k"))
    with pytest.raises(KeyError):
        await wait_for(failed, 5)
    done_already = loop.create_future()
    done_already.set_result(3)
    assert await wait_for(done_already, 0) == 3
    with pytest.raises(TimeoutError):
        await wait_for(loop.create_future(), 0)
    cancelled_by_someone = loop.create_future()
    loop.call_soon(cancelled_by_someone.cancel)
    with pytest.raises(asyncio.CancelledError):  # not a timeout: someone else's cancel
        await wait_for(cancelled_by_someone, 5)


def test_wait_for_needs_no_task_where_a_driven_call_has_none() -> None:
    drive = ThreadDrive()

    async def call() -> str:
        assert asyncio.current_task() is None  # driven by hand so far
        return await wait_for(asyncio.sleep(0.01, result="waited"), 1)

    assert in_a_script_thread(lambda: drive.run(call())) == "waited"


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


# -- what the package may use ------------------------------------------------------------


@functools.cache
def package_modules() -> list[tuple[Path, ast.Module]]:
    paths = sorted(PACKAGE.rglob("*.py"))
    assert len(paths) > 100  # (the package was walked)
    return [(path, ast.parse(path.read_text(), str(path))) for path in paths]


def test_the_package_waits_only_in_ways_a_driven_call_can() -> None:
    """``asyncio.timeout`` (and ``asyncio.wait_for``, which is it from Python 3.12) need
    a current task, which a call driven by hand does not have before it first yields;
    ``asyncio.TaskGroup`` too. cdpnb uses ``cdpnb.runtime.waits.wait_for``."""
    refused = {"wait_for", "timeout", "timeout_at", "TaskGroup", "timeouts", "taskgroups"}
    found = []
    for path, tree in package_modules():
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr in refused \
                    and isinstance(node.value, ast.Name) and node.value.id == "asyncio":
                found.append(f"{path.relative_to(PACKAGE)}:{node.lineno}: asyncio.{node.attr}")
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("asyncio"):
                names = {alias.name for alias in node.names} & refused
                if names or node.module in ("asyncio.timeouts", "asyncio.taskgroups"):
                    found.append(f"{path.relative_to(PACKAGE)}:{node.lineno}: from "
                                 f"{node.module} import {sorted(names)}")
    assert found == []


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


#: Private names of asyncio's modules and loops, as a string may name them (getattr).
PRIVATE_ASYNCIO_NAMES = frozenset(
    name for holder in (asyncio, asyncio.events, asyncio.tasks, asyncio.base_events,
                        asyncio.BaseEventLoop, asyncio.Task, asyncio.Future)
    for name in dir(holder) if _private(name))


def private_asyncio_uses(tree: ast.Module) -> list[str]:
    """Where a module uses a private name of asyncio (``asyncio._x``, ``asyncio.events._x``,
    ``from asyncio import _x``, ``getattr(loop, "_x")``) or sets the interpreter's async
    generator hooks (``sys.set_asyncgen_hooks``)."""
    asyncio_names = {"asyncio"}  # names bound to asyncio or to something of it
    uses = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "asyncio":
                    asyncio_names.add(alias.asname or "asyncio")
                    uses += [f"{node.lineno}: import {alias.name}"
                             for part in alias.name.split(".") if _private(part)]
        elif isinstance(node, ast.ImportFrom) and node.module is not None:
            for alias in node.names:
                if node.module.split(".")[0] == "asyncio":
                    asyncio_names.add(alias.asname or alias.name)
                    if _private(alias.name) or any(map(_private, node.module.split("."))):
                        uses.append(f"{node.lineno}: from {node.module} import {alias.name}")
                elif node.module == "sys" and alias.name == "set_asyncgen_hooks":
                    uses.append(f"{node.lineno}: from sys import set_asyncgen_hooks")
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            chain, root = [node.attr], node.value
            while isinstance(root, ast.Attribute):
                chain.append(root.attr)
                root = root.value
            if not isinstance(root, ast.Name):
                continue
            if root.id in asyncio_names and any(map(_private, chain)):
                uses.append(f"{node.lineno}: {root.id}.{'.'.join(reversed(chain))}")
            elif root.id == "sys" and node.attr == "set_asyncgen_hooks":
                uses.append(f"{node.lineno}: sys.set_asyncgen_hooks")
        elif isinstance(node, ast.Constant) and node.value in PRIVATE_ASYNCIO_NAMES:
            uses.append(f"{node.lineno}: {node.value!r}")
    return sorted(set(uses))


def test_private_asyncio_is_used_only_by_the_drive() -> None:
    found = {str(path.relative_to(PACKAGE)): uses for path, tree in package_modules()
             if path != DRIVE and (uses := private_asyncio_uses(tree))}
    assert found == {}
    # (The check sees what the drive itself uses.)
    in_drive = private_asyncio_uses(ast.parse(DRIVE.read_text()))
    assert any("'_set_running_loop'" in use for use in in_drive)
    assert any("'_asyncgen_firstiter_hook'" in use for use in in_drive)
    assert any("sys.set_asyncgen_hooks" in use for use in in_drive)


def test_the_check_for_private_asyncio_sees_every_spelling() -> None:
    spellings = {
        "import asyncio\nasyncio._set_running_loop(None)": "asyncio._set_running_loop",
        "from asyncio import events\nevents._get_running_loop()": "events._get_running_loop",
        "import asyncio.events as ev\nev._set_running_loop(None)": "ev._set_running_loop",
        "from asyncio.events import _set_running_loop": "import _set_running_loop",
        "import asyncio\nasyncio.tasks._enter_task(1, 2)": "asyncio.tasks._enter_task",
        "getattr(loop, '_asyncgen_finalizer_hook')": "'_asyncgen_finalizer_hook'",
        "import sys\nsys.set_asyncgen_hooks(None, None)": "sys.set_asyncgen_hooks",
        "from sys import set_asyncgen_hooks": "set_asyncgen_hooks",
    }
    for source, expected in spellings.items():
        uses = private_asyncio_uses(ast.parse(source))
        assert len(uses) == 1 and expected in uses[0], (source, uses)
    public = "import asyncio, sys\nasyncio.get_running_loop()\nsys.get_asyncgen_hooks()\n" \
             "x.__init__()\nasyncio.Task.__name__\nlogging._lock"
    assert private_asyncio_uses(ast.parse(public)) == []
