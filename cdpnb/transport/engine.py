"""cdpnb's own event loop, in a daemon thread.

Supervisors live here, so they keep receiving, timestamping and running their
watchdogs while the caller's thread is busy (a notebook cell in ``time.sleep``).
Callers on another loop await ``asyncio.wrap_future`` of
``run_coroutine_threadsafe``; blocking callers wait on the future. Nothing here
patches asyncio or re-enters a running loop, so nest_asyncio neither helps nor hurts.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

__all__ = ["Engine", "engine"]

T = TypeVar("T")


class Engine:
    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

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

    def run_sync(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        """Block the calling thread until ``coro`` has run on the engine loop."""
        if self.in_engine():
            coro.close()
            raise RuntimeError(
                "cdpnb.sync was called from cdpnb's own engine thread (e.g. inside a callback); "
                "use the async API there"
            )
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

    def thread_alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive()


engine = Engine()
