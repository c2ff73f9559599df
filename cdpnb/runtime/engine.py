"""cdpnb's own event loop, in a daemon thread, and the blocking face's way in.

Supervisors' background work lives here (child set-up, policies, the watchdog, the
bridge), so it goes on while the caller's thread is busy (a notebook cell in
``time.sleep``); the transport's reader thread receives and folds on its own.

A blocking supervisor call (``cdpnb.sync``) runs its coroutine on the calling thread
when that thread has no loop running (a script, a worker thread), on a private loop of
that thread (``cdpnb.runtime.drive``: driven by hand until it awaits something of the
loop); the command goes out from that thread and the reply wakes it, one thread hop.
In a thread whose loop is running (a notebook's kernel thread) it cannot wait on a
loop of its own, so the coroutine runs on the engine loop and the thread waits on its
future; so does every other blocking call. Nothing here patches asyncio or re-enters a
running loop, so nest_asyncio neither helps nor hurts.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

from cdpnb.runtime.drive import ThreadDrive

__all__ = ["Engine", "engine"]

T = TypeVar("T")


class Engine:
    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._here = ThreadDrive()

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
            return self._here.run(coro, timeout)
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

    def blocks_here(self) -> bool:
        """True in a blocking call running on its thread's private loop (see
        ``run_sync``'s ``here``): a wait there may block the thread instead of the loop
        (``Core.send``). Tasks the call started still wait on the loop."""
        return self._here.blocks_here()

    def thread_alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive()


def _loop_running() -> bool:
    """Whether the calling thread runs an event loop now."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


engine = Engine()
