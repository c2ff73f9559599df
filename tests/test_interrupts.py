"""A Ctrl-C lands while a call waits, whoever handles SIGINT, without a timer per call
where the handler wakes its loop itself (``cdpnb.runtime.interrupts``)."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from typing import Any

from cdpnb.runtime.interrupts import wake_for_signals


def _timers_armed_by_one_call(handler: Callable[..., Any] | None) -> int:
    """How many timers ``wake_for_signals`` leaves on a loop run by ``asyncio.run``,
    with ``handler`` installed for SIGINT (None: asyncio.run's own)."""
    async def one_call() -> int:
        loop = asyncio.get_running_loop()
        before = len(loop._scheduled)  # type: ignore[attr-defined]
        stop = wake_for_signals()
        armed = len(loop._scheduled) - before  # type: ignore[attr-defined]
        stop()
        return armed

    if handler is None:
        return asyncio.run(one_call())
    previous = signal.getsignal(signal.SIGINT)
    with asyncio.Runner() as runner:
        signal.signal(signal.SIGINT, handler)  # (as ipykernel's, installed over asyncio's)
        try:
            return runner.run(one_call())
        finally:
            signal.signal(signal.SIGINT, previous)


def test_asyncio_runs_own_handler_needs_no_timer_and_a_foreign_one_gets_one() -> None:
    """asyncio.run's handler cancels the main task and wakes the loop itself: no timer
    (and no ``signal.getsignal``, which formats the handler's repr: 7–50 µs a call). A
    handler that only schedules work from the loop's thread, as ipykernel's does, needs
    the tick, or the interrupt waits for the loop's next wake-up."""
    assert _timers_armed_by_one_call(None) == 0
    assert _timers_armed_by_one_call(lambda signum, frame: None) == 1


SCRIPT = textwrap.dedent("""
    import asyncio, time, cdpnb
    from cdpnb.testing import ScriptedBrowser

    async def main():
        async with await cdpnb.Supervisor.start(ScriptedBrowser()) as sup:
            print("waiting", flush=True)
            await sup.wait_for_dialog(timeout=60)

    began = time.monotonic()
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        print(f"interrupted after {time.monotonic() - began:.1f} s", flush=True)
""")


def test_ctrl_c_ends_a_scripts_wait_under_asyncio_run_at_once() -> None:
    process = subprocess.Popen([sys.executable, "-c", SCRIPT], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        assert process.stdout.readline() == "waiting\n"
        time.sleep(0.2)
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=30)  # (against the wait's 60 s)
    finally:
        process.kill()
        process.wait()
    assert out.startswith("interrupted after"), (out, err)
    assert float(out.split()[2]) < 30
