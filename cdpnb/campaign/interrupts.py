"""A campaign's caller may be interrupted; the cluster it ran on must not end with it.

Measured (jupyter_client 8.10, ipykernel 7.4, distributed 2025.x, Debian 12): a notebook's
"interrupt kernel" sends SIGINT to the kernel's whole process group
(``KernelManager.signal_kernel`` uses ``killpg``), and a terminal's Ctrl-C reaches its
foreground group alike. A ``LocalCluster(processes=True)`` made in that notebook runs
its workers as child processes in the kernel's group, and each turns the SIGINT into a
KeyboardInterrupt in its event loop (``asyncio.Runner``) and dies with a traceback on
the kernel's stderr: the interrupt meant for one cell ended the user's cluster, and
the next campaign on it waited forever with no worker.

So a worker the campaign's own caller started (its child, in its process group) ignores
SIGINT while it holds a campaign's plugin; a worker started elsewhere (``dask worker``
in a terminal, another machine) keeps its Ctrl-C. Dask's "Compute Failed" error log of
a campaign cell is dropped on every worker holding the plugin: the campaign records the
failure itself (its ``failed`` row, the progress line), and a campaign writing onto a
full disk otherwise buried its one clean message under a traceback per cell.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
from collections.abc import Callable
from typing import Any

__all__ = ["CELL_KEY_PREFIX", "InterruptShield", "quiet_cell_failures"]

#: The Dask keys of a campaign's cells start with this (``cdpnb-cell-<run id>``).
CELL_KEY_PREFIX = "cdpnb-cell-"

SignalHandler = Callable[[int, Any], Any] | int | signal.Handlers | None


def _in_callers_group(caller_pid: int) -> bool:
    """This process is a child of ``caller_pid`` in its process group: a signal sent to
    the caller's group (a kernel interrupt, a terminal's Ctrl-C) reaches it too."""
    if os.getpid() == caller_pid or os.getppid() != caller_pid:
        return False
    try:
        return os.getpgid(0) == os.getpgid(caller_pid)
    except (OSError, AttributeError):  # gone, or no process groups here
        return False


class InterruptShield:
    """SIGINT ignored in this worker process while a campaign holds it, when the
    campaign's caller started it (see the module's docstring); put back once the last
    campaign holding the process lets go (campaigns may overlap on one worker)."""

    _lock = threading.Lock()
    _holders = 0
    _previous: SignalHandler = None

    def __init__(self, caller_pid: int | None) -> None:
        self.caller_pid = caller_pid
        self.active = False

    def raise_(self) -> None:
        if (self.caller_pid is None or threading.current_thread() is not threading.main_thread()
                or not _in_callers_group(self.caller_pid) or self.active):
            return
        cls = type(self)
        with cls._lock:
            if cls._holders == 0:
                cls._previous = signal.getsignal(signal.SIGINT)
                signal.signal(signal.SIGINT, signal.SIG_IGN)
            cls._holders += 1
        self.active = True

    def lower(self) -> None:
        if not self.active or threading.current_thread() is not threading.main_thread():
            return
        cls = type(self)
        with cls._lock:
            cls._holders -= 1
            if cls._holders == 0:
                previous = cls._previous
                signal.signal(signal.SIGINT,
                              previous if previous is not None else signal.SIG_DFL)
        self.active = False


class _CellFailures(logging.Filter):
    """Drops distributed's "Compute Failed" record of a campaign cell."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not str(record.msg).startswith("Compute Failed"):
            return True
        key = record.args[0] if isinstance(record.args, tuple) and record.args else None
        name = key[0] if isinstance(key, tuple) and key else key  # ("cdpnb-cell-…", i)
        return not str(name).startswith(CELL_KEY_PREFIX)


#: One filter per process, installed by the first campaign to reach this worker.
_CELL_FAILURES = _CellFailures()


def quiet_cell_failures() -> None:
    """Drop Dask's "Compute Failed" log of campaign cells on this worker, from now on.

    Kept after the campaign ends: a cell already queued on a worker thread when its
    campaign was interrupted still starts, finds the campaign's plugin gone and fails,
    and that failure is nobody's news (measured: Dask printed it, with a traceback,
    under the campaign's one interrupted line, 1 run in 5 beside two busy processes).
    It drops nothing but the records of cdpnb's own cells (their keys)."""
    logger = logging.getLogger("distributed.worker")
    if _CELL_FAILURES not in logger.filters:
        logger.addFilter(_CELL_FAILURES)
