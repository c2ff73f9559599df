"""The blocking face's drive: a call run on its own thread's private loop, driven by
hand until it needs the loop. The one module of cdpnb that touches private asyncio.

``cdpnb.sync`` runs a supervisor call on the calling thread when that thread has no
loop running (``Engine.run_sync``'s ``here``), and a command it sends waits for its
reply by blocking the thread (``blocks_here``; ``Core.send``). Running each call as a
task of the thread's loop (``loop.run_until_complete``, public asyncio) made that round
trip to a local Chromium 10–55 µs (3–13%) slower, call by call in one process, and
1.08–1.18× a bare client in ``benchmarks/bench_cdp.py`` against 0.99–1.06× driven by
hand: the loop's way in and out around each call (≈13 µs before the command goes out,
≈11 µs after its reply wakes the thread). So the coroutine is driven by hand
(``coro.send``), as a loop's step would run it, and most calls never go round a loop
at all; the first time it awaits something of the loop, a task of that loop takes it
over where it stands (``_Resumed``).

Private names used here, and only here (``tests/test_engine_drive.py`` fails if any
other module of the package uses a private name of asyncio or
``sys.set_asyncgen_hooks``):

- ``asyncio._set_running_loop``: what a loop does around each of its steps, so that
  ``get_running_loop()`` and what rests on it (``create_future``, ``ensure_future``,
  ``call_later``) find the private loop while the coroutine is driven (listed in
  ``asyncio.events.__all__`` for event loop implementations).
- the loop's ``_asyncgen_firstiter_hook`` and ``_asyncgen_finalizer_hook``, installed
  with ``sys.set_asyncgen_hooks`` as ``run_forever`` installs them, so an async
  generator first iterated while driven is finalised by the loop.

Where a Python or a loop lacks them, every call runs as a task of the loop: the same
outcomes, slower. Before its first yield a driven call has no current task, so code on
that path must not need one (``asyncio.timeout``, ``asyncio.wait_for`` from 3.12,
``TaskGroup``): cdpnb waits with ``cdpnb.runtime.waits.wait_for``, and the same test
walks the package for the others.

Tested, both ways of running a call, on CPython 3.11, 3.12 and 3.13
(``tests/test_engine_drive.py``; ``scripts/test-pythons.sh`` runs it on each).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import sys
import threading
import weakref
from collections.abc import Callable, Coroutine, Generator
from typing import Any, TypeVar, cast

__all__ = ["ThreadDrive"]

T = TypeVar("T")

#: asyncio's way for a loop to say it runs (None on a Python without it).
_set_running_loop: Callable[[asyncio.AbstractEventLoop | None], None] | None = getattr(
    asyncio, "_set_running_loop", None)
#: The loop's async generator hooks, as ``run_forever`` installs them.
_HOOKS = ("_asyncgen_firstiter_hook", "_asyncgen_finalizer_hook")


class _ThreadState(threading.local):
    #: This thread's private loop, made by its first call.
    private: _PrivateLoop | None = None
    #: The task running this thread's blocking call on that loop, if any.
    call: asyncio.Task[Any] | None = None
    #: A call is being driven by hand on this thread.
    driving = False
    #: Tasks created on the private loop since the driven call began.
    started = 0


class _PrivateLoop:
    """A thread's private loop. ``threading.local`` drops this holder when its thread
    ends, and the loop is closed then (the finaliser holds the loop, not the holder)."""

    __slots__ = ("__weakref__", "hooks", "loop")

    def __init__(self, state: _ThreadState) -> None:
        self.loop = loop = asyncio.new_event_loop()
        loop.set_task_factory(functools.partial(_counted_task, state))
        firstiter, finalizer = (getattr(loop, name, None) for name in _HOOKS)
        self.hooks = None if firstiter is None or finalizer is None else (firstiter, finalizer)
        weakref.finalize(self, _close_quietly, loop)


class ThreadDrive:
    """Runs blocking calls on the calling thread's private loop (one per thread)."""

    def __init__(self, *, by_hand: bool = True) -> None:
        #: Drive calls by hand where this Python allows it (False: always as a task).
        self.by_hand = by_hand and _set_running_loop is not None
        self._state = _ThreadState()

    def run(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        """``coro``'s outcome, run on this thread (which must have no loop running).
        Without ``timeout`` the call blocks here (``blocks_here``); with one, its waits
        stay on the loop, where the timeout can end them."""
        state = self._state
        private = state.private
        if private is None:
            private = state.private = _PrivateLoop(state)
        if timeout is not None:
            return _run_bounded(private.loop, private.loop.create_task(coro), timeout)
        if not self.by_hand or private.hooks is None:
            return self._run_task(private.loop.create_task(coro))
        return self._drive(coro, private)

    def blocks_here(self) -> bool:
        """True in a call run here without a timeout, while it is driven by hand or in
        the task running it: a wait there may block the thread instead of the loop.
        Tasks the call started (a send raced against a dialog, a gather) still need the
        loop, so they wait on it."""
        state = self._state
        if state.driving:
            return True
        call = state.call
        return call is not None and asyncio.current_task() is call

    def _drive(self, coro: Coroutine[Any, Any, T], private: _PrivateLoop) -> T:
        """What ``loop.run_until_complete(coro)`` does, without a loop's turn for a call
        that needs none: one context for the whole call (a copy of the caller's), the
        loop set as the running one and its async generator hooks installed while the
        coroutine runs, so what it schedules (a task, a timer) lands on the loop; tasks
        it started get their first step, as they would."""
        assert _set_running_loop is not None and private.hooks is not None
        state, loop = self._state, private.loop
        context = contextvars.copy_context()
        hooks = sys.get_asyncgen_hooks()
        state.driving, state.started = True, 0
        _set_running_loop(loop)
        sys.set_asyncgen_hooks(*private.hooks)
        try:
            pending = context.run(coro.send, None)
        except StopIteration as done:
            value, finished = done.value, True
        else:
            finished = False
        finally:
            sys.set_asyncgen_hooks(*hooks)
            _set_running_loop(None)
            state.driving = False
        if finished:
            if state.started:
                loop.run_until_complete(asyncio.sleep(0))
            return cast(T, value)

        async def rest() -> T:
            return cast(T, await _Resumed(coro, pending))

        try:
            return self._run_task(loop.create_task(rest(), context=context))
        finally:
            coro.close()  # (a no-op once it finished; ends it if the task never began)

    def _run_task(self, task: asyncio.Task[T]) -> T:
        state = self._state
        state.call = task
        try:
            return task.get_loop().run_until_complete(task)
        except BaseException:
            _end_interrupted(task)
            raise
        finally:
            state.call = None


def _run_bounded(loop: asyncio.AbstractEventLoop, task: asyncio.Task[T], timeout: float) -> T:
    try:
        done, _ = loop.run_until_complete(asyncio.wait({task}, timeout=timeout))
    except BaseException:
        _end_interrupted(task)
        raise
    if not done:
        task.cancel()
        loop.run_until_complete(asyncio.wait({task}))  # its clean-up runs first
        if task.cancelled():
            raise TimeoutError(f"cdpnb.sync call did not finish within {timeout} s")
    return task.result()  # (it finished anyway, ignoring the cancellation)


def _end_interrupted(task: asyncio.Task[Any]) -> None:
    """After the loop was left by an exception (Ctrl-C): a call interrupted while the
    loop waited is cancelled and let end, so nothing of it stays on the loop; a call
    interrupted in its own step ended with the exception, which is being raised."""
    if not task.done():
        task.cancel()
        with contextlib.suppress(BaseException):  # the interruption is what is raised
            task.get_loop().run_until_complete(task)
    if task.done() and not task.cancelled():
        task.exception()  # (seen: never "Task exception was never retrieved")


def _counted_task(state: _ThreadState, loop: asyncio.AbstractEventLoop,
                  coro: Coroutine[Any, Any, Any], **options: Any) -> asyncio.Task[Any]:
    """The private loops' task factory: counts the tasks a driven call starts."""
    state.started += 1
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


def _close_quietly(loop: asyncio.AbstractEventLoop) -> None:
    """Close a private loop whose thread has ended, from whichever thread drops it last
    (the garbage collector may do so in the middle of another loop's step)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:  # no loop runs here: this one can go round a last time
        with contextlib.suppress(Exception):  # (at interpreter exit)
            loop.run_until_complete(loop.shutdown_asyncgens())
    with contextlib.suppress(Exception):
        loop.close()
