"""cdpnb's own event loop, in a daemon thread, and the blocking face's way in.

Supervisors' background work lives here (child set-up, policies, the watchdog, the
bridge), so it goes on while the caller's thread is busy (a notebook cell in
``time.sleep``); the transport's reader thread receives and folds on its own.

A blocking supervisor call (``cdpnb.sync``) runs its coroutine on the calling thread
when that thread has no loop running (a script, a worker thread): driven by hand, and
by a private event loop of that thread from the first time it awaits something of a
loop's (``Engine._drive``); the command goes out from that thread and the reply wakes
it, one thread hop. In a
thread whose loop is running (a notebook's kernel thread) it cannot wait on a loop of
its own, so the coroutine runs on the engine loop and the thread waits on its future;
so does every other blocking call.
Nothing here patches asyncio or re-enters a running loop, so nest_asyncio neither
helps nor hurts.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import contextvars
import functools
import sys
import threading
import weakref
from collections.abc import Coroutine, Generator
from typing import Any, TypeVar, cast

__all__ = ["Engine", "engine"]

T = TypeVar("T")


class _ThreadLoop(threading.local):
    runner: asyncio.Runner | None = None
    #: The task of the blocking call running on this thread's private loop, if any.
    call: asyncio.Task[Any] | None = None
    #: A blocking call is being driven by hand on this thread (``Engine._drive``).
    driving = False
    #: Tasks created on this thread's private loop since the call began.
    started = 0


class Engine:
    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._own = _ThreadLoop()

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None or self._thread is None or not self._thread.is_alive():
                self._start()
            assert self._loop is not None
            return self._loop

    def _start(self) -> None:
        loop = asyncio.new_event_loop()
        ready = threading.Event()

        def run() -> None:
            asyncio.set_event_loop(loop)
            loop.call_soon(ready.set)
            loop.run_forever()

        thread = threading.Thread(target=run, name="cdpnb-engine", daemon=True)
        thread.start()
        ready.wait()
        self._loop, self._thread = loop, thread

    def in_engine(self) -> bool:
        return self._thread is not None and threading.current_thread() is self._thread

    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    async def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Await ``coro`` on the engine loop from any loop (or on it, directly)."""
        if self.in_engine():
            return await coro
        return await asyncio.wrap_future(self.submit(coro))

    def run_sync(self, coro: Coroutine[Any, Any, T], timeout: float | None = None, *,
                 here: bool = False) -> T:
        """Block the calling thread until ``coro`` has run on the engine loop; with
        ``here``, on a private loop of this thread when it has none running (one thread
        hop less). ``here`` is only for coroutines that leave nothing running on their
        loop when they return (the supervisor's calls do: its core is thread-safe and
        its background work is the engine's); a server or a task that outlives the call
        needs the engine loop."""
        if self.in_engine():
            coro.close()
            raise RuntimeError(
                "cdpnb.sync was called from cdpnb's own engine thread (e.g. inside a callback); "
                "use the async API there"
            )
        if here and not _loop_running():
            # (Outside the ``except``: an error of the call must not print as raised
            # "during handling of" the RuntimeError get_running_loop() raises.)
            return self._run_here(coro, timeout)
        future = self.submit(coro)
        try:
            return future.result(timeout)
        except concurrent.futures.TimeoutError:
            if future.done():
                # The call's own timeout (CommandTimeout, WaitTimeout, EvaluateTimeout are
                # TimeoutErrors too): it is the answer, not our wait running out.
                raise
            future.cancel()
            raise TimeoutError(f"cdpnb.sync call did not finish within {timeout} s") from None
        except KeyboardInterrupt:
            future.cancel()
            raise

    def _run_here(self, coro: Coroutine[Any, Any, T], timeout: float | None) -> T:
        own = self._own
        runner = own.runner
        if runner is None:
            runner = own.runner = asyncio.Runner()
            # The loop goes with its thread (threading.local drops it at thread exit).
            weakref.finalize(runner, _close_quietly, runner)
            runner.get_loop().set_task_factory(functools.partial(_counted_task, own))
        if timeout is None:
            return self._drive(coro, runner)

        async def bounded() -> T:
            task = asyncio.ensure_future(coro)
            done, _ = await asyncio.wait({task}, timeout=timeout)
            if not done:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
                raise TimeoutError(f"cdpnb.sync call did not finish within {timeout} s")
            return task.result()

        return runner.run(bounded())

    def _drive(self, coro: Coroutine[Any, Any, T], runner: asyncio.Runner) -> T:
        """Run ``coro`` on this thread, going round its private loop only once it awaits
        something of the loop's: what ``runner.run(coro)`` does, without a loop's turn
        for a call that needs none.

        A command's round trip (``Core.send``) waits blocked, so most calls never yield
        to a loop at all: driving the coroutine by hand (``send(None)``) costs ≈1 µs
        where a loop's run of a task costs ≈7 µs here (benchmarks/README.md). As a
        loop's step would, it runs in one context for the whole call (a copy of the
        caller's), with the loop set as the running one and the loop's async generator
        hooks installed, so what it schedules (a task, a timer) lands on the loop. The
        first time it yields a future of the loop, a task on the loop takes the rest over
        (``_Resumed``); a call that ends without yielding but started tasks gives them
        their first step, as ``runner.run`` would.

        Before that yield no task is current: code on this path must not need one
        (``asyncio.timeout``, and ``asyncio.wait_for`` from Python 3.12, do;
        cdpnb's own waits use ``cdpnb.runtime.waits.wait_for``, which does not:
        ``tests/test_engine_drive.py`` checks the package for them).
        """
        own = self._own
        loop = runner.get_loop()
        context = contextvars.copy_context()
        hooks = sys.get_asyncgen_hooks()
        own.driving, own.started = True, 0
        asyncio._set_running_loop(loop)  # (what a loop does around each of its steps)
        sys.set_asyncgen_hooks(firstiter=getattr(loop, "_asyncgen_firstiter_hook", None),
                               finalizer=getattr(loop, "_asyncgen_finalizer_hook", None))
        try:
            pending = context.run(coro.send, None)
        except StopIteration as done:
            value, finished = done.value, True
        else:
            finished = False
        finally:
            sys.set_asyncgen_hooks(*hooks)
            asyncio._set_running_loop(None)
            own.driving = False
        if finished:
            if own.started:
                runner.run(asyncio.sleep(0), context=context)
            return cast(T, value)

        async def rest() -> T:
            own.call = asyncio.current_task()
            try:
                return cast(T, await _Resumed(coro, pending))
            finally:
                own.call = None

        try:
            return runner.run(rest(), context=context)
        finally:
            coro.close()  # (a no-op once it finished; ends it if the run never began)

    def blocks_here(self) -> bool:
        """True in a blocking call running on its thread's private loop (see
        ``run_sync``'s ``here``), while it is driven by hand or in the task that took it
        over: a wait there may block the thread instead of the loop. Tasks the call
        started (a send raced against a dialog, a gather) still need the loop, so they
        wait on it."""
        own = self._own
        if own.driving:
            return True
        call = own.call
        return call is not None and asyncio.current_task() is call

    def thread_alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive()


def _loop_running() -> bool:
    """Whether the calling thread runs an event loop now."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def _counted_task(own: _ThreadLoop, loop: asyncio.AbstractEventLoop,
                  coro: Coroutine[Any, Any, Any], **options: Any) -> asyncio.Task[Any]:
    """The private loops' task factory: counts the tasks a call starts."""
    own.started += 1
    return asyncio.Task(coro, loop=loop, **options)


class _Resumed:
    """Awaiting this continues a coroutine that was driven by hand until it yielded
    ``pending`` (a future of the running loop, or None for a bare yield): the awaiting
    task gets what the coroutine yields, and the coroutine what the task sends or
    throws in (a result, a cancellation), as ``await coro`` would have done from the
    start."""

    __slots__ = ("_coro", "_pending")

    def __init__(self, coro: Coroutine[Any, Any, Any], pending: Any) -> None:
        self._coro, self._pending = coro, pending

    def __await__(self) -> Generator[Any, Any, Any]:
        coro, pending = self._coro, self._pending
        while True:
            try:
                sent = yield pending
            except GeneratorExit:
                coro.close()
                raise
            except BaseException as exc:
                try:
                    pending = coro.throw(exc)
                except StopIteration as done:
                    return done.value
            else:
                try:
                    pending = coro.send(sent)
                except StopIteration as done:
                    return done.value


def _close_quietly(runner: asyncio.Runner) -> None:
    with contextlib.suppress(Exception):  # a loop closed at interpreter exit: nothing to keep
        runner.close()


engine = Engine()
