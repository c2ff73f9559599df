"""A Ctrl-C while a call waits, told in one line on both faces.

A notebook cell that awaits a call is cancelled by ipykernel on an interrupt (its
SIGINT handler cancels the cell: ``CancelledError``); a blocking call gets
``KeyboardInterrupt``. Either way the traceback ran through cdpnb's engine, asyncio and
``concurrent.futures`` (≈40 lines ending in an empty ``CancelledError:``). The
exception is kept as it is (its class, so ``asyncio.timeout`` and task cancellation
work as ever) and told in one line: IPython shows what an exception's
``_render_traceback_`` returns instead of its traceback, and a blocking call's
``KeyboardInterrupt`` carries the line as its message, with cdpnb's frames cut.
"""

from __future__ import annotations

import asyncio
import functools
import signal
import threading
from collections.abc import Callable
from typing import Any

try:
    # The handler as it is: ``signal.getsignal`` tries each handler as a ``Handlers``
    # enum value, and for a function that fails by formatting its repr — asyncio.run's
    # handler is a partial holding the main task, 7–50 µs a call (measured on 3.11),
    # paid by every call a script makes.
    from _signal import getsignal as _handler_of  # type: ignore[import-not-found]
except ImportError:  # (an interpreter without the C module)
    _handler_of = signal.getsignal

__all__ = ["SIGNAL_TICK_S", "WAITING_FOR", "interrupted", "one_line", "wake_for_signals"]

#: How often a call waiting on the main thread's loop wakes it while a Ctrl-C handler of
#: someone else's is installed (see ``wake_for_signals``).
SIGNAL_TICK_S = 0.2

#: What a call waits for, as the line names it (other calls: "<name>()").
WAITING_FOR = {
    "wait_for_dialog": "a dialog",
    "wait_for_event": "an event",
    "wait_for": "the page's state",
    "wait_for_selector": "a selector",
    "navigate": "a navigation",
    "reload": "a reload",
    "set_content": "set_content() to load",
    "close_page": "a page to close",
    "evaluate": "evaluate()",
    "click": "a click",
    "fill": "fill()",
}


def one_line(name: str) -> str:
    """``cdpnb: interrupted while waiting for a dialog`` (``name``: the call's)."""
    return f"cdpnb: interrupted while waiting for {WAITING_FOR.get(name, f'{name}()')}"


def interrupted(exc: BaseException, name: str) -> BaseException:
    """``exc`` (a CancelledError or KeyboardInterrupt that ended call ``name``), told in
    one line wherever IPython shows it; a KeyboardInterrupt also says it as its
    message. The same object, returned for ``raise``."""
    line = one_line(name)
    exc._render_traceback_ = lambda: [line]  # type: ignore[attr-defined]
    if isinstance(exc, KeyboardInterrupt) and not exc.args:
        exc.args = (line,)
    return exc


def wake_for_signals() -> Callable[[], None]:
    """While a call waits on the main thread's running loop under a SIGINT handler that
    is not Python's own, wake that loop every ``SIGNAL_TICK_S``; returns what stops it.

    ipykernel 7.4 answers a Ctrl-C in an awaiting cell with a handler that schedules the
    cell's cancellation with tornado's ``add_callback``, which from the loop's own thread
    is ``call_soon``: nothing wakes the loop, so the cancellation waits for the loop's
    next wake-up (measured: an interrupted ``await asyncio.sleep(60)`` cell ended after
    60 s; a cell waiting on cdpnb ended when a message happened to come). A timer
    wakes it, and the interrupt lands within a tick. Elsewhere (another thread, Python's
    own handler raising KeyboardInterrupt at once) nothing is scheduled."""
    if threading.current_thread() is not threading.main_thread():
        return _nothing
    handler = _handler_of(signal.SIGINT)
    if handler in (signal.default_int_handler, signal.SIG_DFL, signal.SIG_IGN, None) \
            or _wakes_its_loop(handler):
        return _nothing
    loop = asyncio.get_running_loop()
    handle: list[asyncio.TimerHandle] = []

    def tick() -> None:
        handle[:] = [loop.call_later(SIGNAL_TICK_S, tick)]

    tick()

    def stop() -> None:
        for timer in handle:
            timer.cancel()
        handle.clear()

    return stop


def _wakes_its_loop(handler: Any) -> bool:
    """``asyncio.run``'s own handler (``Runner._on_sigint``, a partial of a bound method):
    it cancels the main task and wakes the loop with ``call_soon_threadsafe`` itself, so
    no tick is needed (a script's call skips a timer armed and cancelled per call)."""
    bound = handler.func if isinstance(handler, functools.partial) else handler
    return isinstance(getattr(bound, "__self__", None), asyncio.Runner)


def _nothing() -> None:
    return None
