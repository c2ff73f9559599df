"""Progress across a whole campaign: cells done, failed, retried, running per worker.

Workers say when an attempt starts and why it failed (events on the campaign's
topic, handled on the Dask client's thread); the client's own loop sees cells
finish. :class:`Tracker` keeps both under a lock; whoever shows progress gets a
:class:`CampaignProgress` copy from the thread that runs the campaign.

In a notebook the progress is a line of HTML updated in place (not a widget: a widget
bar stays ``0%| 0/240`` in the saved file and blank in an executed export), which
ends as one summary line: ``240 cells · 238 ok · 2 failed · 3m12s``. Elsewhere it is
a tqdm bar on stderr.
"""

from __future__ import annotations

import contextlib
import html
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any

from cdpnb.campaign.cells import Cell
from cdpnb.progress_line import ProgressLine, duration_text, in_kernel, on_kernel_thread
from cdpnb.runtime.engine import engine
from cdpnb.terminal_text import inert

__all__ = ["CampaignProgress", "ProgressOption", "Tracker", "progress_display", "summary_text"]


@dataclass(frozen=True)
class CampaignProgress:
    """Where a campaign is: what a ``progress=`` callable gets, a few times a second."""

    total: int
    skipped: int  # finished by an earlier run (or an earlier attempt): not run again
    done: int = 0
    failed: int = 0  # out of retries: recorded with the reason
    retried: int = 0  # attempts after a cell's first (a failure, or its worker died)
    running: dict[str, tuple[str, ...]] = field(default_factory=dict)  # worker → cells
    last: str = ""  # the last cell to finish, and how
    dashboard: str | None = None

    @property
    def finished(self) -> int:
        return self.skipped + self.done + self.failed

    def running_text(self) -> str:
        """``worker 0: 2 · worker 1: 1`` — cells running on each worker."""
        return " · ".join(f"{worker}: {len(cells)}" for worker, cells in self.running.items()
                          if cells) or "none"

    def detail_text(self) -> str:
        """``failed 1 · retried 0 · running worker 0: 2`` — the bar's detail."""
        return (f"failed {self.failed} · retried {self.retried} · running "
                f"{self.running_text()}")


def summary_text(progress: CampaignProgress, seconds: float, *,
                 ended: str = "finished") -> str:
    """The line a campaign's progress leaves: ``240 cells · 238 ok · 2 failed · 3m12s``
    (plus cells done by an earlier run, and retries, when there were any); ``ended``
    another word than ``"finished"`` (``"interrupted"``, ``"stopped"``) for one cut short:
    ``interrupted after 31 of 240 cells · 30 ok · 1 failed · 42s``."""
    if not isinstance(ended, str) or not ended:
        raise ValueError(f"ended must be a word such as 'finished', got {ended!r}")
    parts = ([f"{progress.total} cells"] if ended == "finished" else
             [f"{ended} after {progress.finished} of {progress.total} cells"])
    parts += [f"{progress.done} ok", f"{progress.failed} failed"]
    if progress.skipped:
        parts.append(f"{progress.skipped} done before")
    if progress.retried:
        parts.append(f"{progress.retried} retried")
    parts.append(duration_text(seconds))
    return " · ".join(parts)


#: ``progress=`` of ``cdpnb.campaign``: True for a bar (a line in a notebook), False
#: or None for none, or a callable given a CampaignProgress a few times a second.
ProgressOption = bool | Callable[[CampaignProgress], None] | None


class Tracker:
    """The campaign's progress, updated from the client's event thread and its loop."""

    def __init__(self, total: int, skipped: int, dashboard: str | None) -> None:
        self._lock = threading.Lock()
        self._state = CampaignProgress(total, skipped, dashboard=dashboard)
        self._running: dict[Cell, str] = {}
        self._attempts: Counter[Cell] = Counter()
        self._closed: set[Cell] = set()
        self.reasons: dict[Cell, list[str]] = {}

    def on_event(self, event: Any) -> None:
        """A worker's event: ``(time, {"state": "started" | "failed", ...})``."""
        _, message = event
        cell = Cell(str(message["backend"]), str(message["scenario"]), int(message["repeat"]))
        with self._lock:
            if cell in self._closed:
                return
            if message["state"] == "started":
                self._attempts[cell] += 1
                self._running[cell] = _short(str(message["worker_name"]))
            elif message["state"] == "failed":
                self._running.pop(cell, None)
                self.reasons.setdefault(cell, []).append(str(message.get("reason", "")))

    def attempts(self, cell: Cell) -> int:
        with self._lock:
            return self._attempts[cell]

    def finish(self, cell: Cell, *, failed: bool, already_done: bool, attempts: int,
               how: str) -> None:
        """A cell is done: ``attempts`` is what its files say (events may come late)."""
        with self._lock:
            self._closed.add(cell)
            self._running.pop(cell, None)
            if not already_done:
                self._attempts[cell] = max(self._attempts[cell], attempts)
            state = self._state
            if failed:
                state = replace(state, failed=state.failed + 1)
            elif already_done:
                state = replace(state, skipped=state.skipped + 1)
            else:
                state = replace(state, done=state.done + 1)
            self._state = replace(state, last=f"{cell.label}: {how}")

    def snapshot(self) -> CampaignProgress:
        with self._lock:
            running: dict[str, list[str]] = {}
            for cell, worker in sorted(self._running.items()):
                running.setdefault(worker, []).append(cell.label)
            retried = sum(max(0, n - 1) for n in self._attempts.values())
            return replace(self._state, running={w: tuple(c) for w, c in running.items()},
                           retried=retried)


def _short(worker: str) -> str:
    """A worker's name as shown: ``tcp://127.0.0.1:4567`` as ``127.0.0.1:4567``, a
    LocalCluster's ``0`` as ``worker 0``."""
    if worker.isdigit():
        return f"worker {worker}"
    return worker.partition("://")[2] or worker


@contextlib.contextmanager
def progress_display(option: ProgressOption) -> Iterator[Callable[[CampaignProgress], None]]:
    """A callable to show each CampaignProgress: the user's, none, a progress line in
    a notebook (a summary line once done), or a tqdm bar on stderr that closes on exit."""
    if callable(option):
        yield option
        return
    if not option:
        yield lambda _progress: None
        return
    if on_kernel_thread():  # else a text bar on stderr, which reaches the cell from any thread
        with _notebook_progress() as show:
            yield show
        return
    from tqdm.std import tqdm

    bar: Any = None
    try:
        def show(progress: CampaignProgress) -> None:
            nonlocal bar
            if bar is None:
                _announce_dashboard(progress.dashboard)
                bar = tqdm(total=progress.total, initial=progress.skipped, desc="campaign",
                           unit="cell", dynamic_ncols=True, file=sys.stderr, leave=True)
            bar.n = progress.finished
            bar.set_postfix_str(inert(progress.detail_text()), refresh=False)
            bar.refresh()

        yield show
    finally:
        if bar is not None:
            bar.close()


@contextlib.contextmanager
def _notebook_progress() -> Iterator[Callable[[CampaignProgress], None]]:
    line: ProgressLine | None = None
    last: CampaignProgress | None = None
    began = time.monotonic()

    def show(progress: CampaignProgress) -> None:
        nonlocal line, last
        if line is None:
            _announce_dashboard(progress.dashboard)
            line = ProgressLine("campaign", progress.total)
        last = progress
        line.update(progress.finished, progress.detail_text())

    try:
        yield show
    except BaseException as stop:
        if line is not None and last is not None:
            ended = "interrupted" if isinstance(stop, KeyboardInterrupt) else "stopped"
            line.close(summary_text(last, time.monotonic() - began, ended=ended))
        raise
    if line is not None and last is not None:
        line.close(summary_text(last, time.monotonic() - began))


def _announce_dashboard(link: str | None) -> None:
    """The Dask dashboard's address: a link in a notebook, a line on stderr elsewhere."""
    if not link:
        return
    if in_kernel() and not engine.in_engine():
        from IPython.display import HTML, display

        safe = html.escape(link, quote=True)
        display(HTML(f'Dask dashboard: <a href="{safe}" target="_blank">{safe}</a>'))
    else:
        print(inert(f"Dask dashboard: {link}"), file=sys.stderr)
