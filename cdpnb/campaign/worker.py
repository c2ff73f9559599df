"""What runs on a Dask worker: the plugin that keeps its browsers and scenario pages,
and one cell as one task.

A cell is idempotent: one whose checks file exists returns what is in it without
running again, so a task Dask re-runs (its worker died after writing, before the
client took the result) costs nothing and changes nothing. Each attempt says on the
campaign's event topic when it starts and why it failed, which is how the client
knows what runs where and what was retried (Dask's own ``retries`` re-run a failed
attempt; the scheduler re-runs a cell whose worker died).
"""

from __future__ import annotations

import socket
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pyarrow as pa
from distributed import Worker, WorkerPlugin, get_worker

from cdpnb.campaign.browsers import BrowserPool
from cdpnb.campaign.cells import Cell, CellTask
from cdpnb.campaign.interrupts import InterruptShield, quiet_cell_failures
from cdpnb.campaign.layout import CHECKS_SCHEMA, LATENCIES_SCHEMA, Layout
from cdpnb.probes import CheckResult, ScenarioServer, run_checks
from cdpnb.probes.run import CHECK_STEPS, launch_timeout
from cdpnb.runtime.engine import engine

__all__ = [
    "CELL_TIMEOUT_S",
    "BackendEnded",
    "CampaignPlugin",
    "CellFailed",
    "CellOutcome",
    "cell_timeout",
    "run_cell",
    "topic",
]

#: No attempt at a cell may take longer with the fitted budgets (a check has 30 s on a
#: quiet machine, more where the launch was slow; a launch up to LAUNCH_TIMEOUT_S).
CELL_TIMEOUT_S = 120.0


def cell_timeout(timeout: float | None) -> float:
    """How long one attempt at a cell may take, given a step's budget (None: fitted)."""
    if timeout is None:
        return CELL_TIMEOUT_S
    return max(CELL_TIMEOUT_S, 2 * CHECK_STEPS * timeout + launch_timeout(timeout))


def topic(run_id: str) -> str:
    """The event topic of one campaign run (runs sharing a cluster stay apart)."""
    return f"cdpnb-campaign-{run_id}"


class CellFailed(Exception):
    """An attempt at a cell failed; the message says why (and pickles as text)."""


class BackendEnded(Exception):
    """The backend ended while a cell used it: the cell's findings are not its own."""


@dataclass(frozen=True)
class CellOutcome:
    """What a finished cell tells the client (the whole row is in its file)."""

    cell: Cell
    status: str
    value_ms: float | None
    worker: str
    attempts: int
    already_done: bool = False


class CampaignPlugin(WorkerPlugin):
    """One per worker and campaign run: the scenario pages and the kept browsers.

    ``keep`` backends stay alive between cells (None: one per launchable backend of
    the campaign for each cell the worker runs at once).
    """

    def __init__(self, keep: int | None, kinds: int, timeout: float | None = None,
                 caller_pid: int | None = None) -> None:
        self.keep = keep
        self.kinds = kinds
        #: A step's budget (s) for the campaign's checks; None: fitted to each launch.
        self.timeout = timeout
        #: The campaign caller's process: a worker it started ignores its interrupts.
        self.caller_pid = caller_pid
        self.pool: BrowserPool | None = None
        self.site: ScenarioServer | None = None
        self._shield: InterruptShield | None = None

    def setup(self, worker: Worker) -> None:
        at_once = int(worker.state.total_resources.get("browser", worker.state.nthreads))
        keep = self.keep if self.keep is not None else self.kinds * max(1, at_once)
        self._shield = InterruptShield(self.caller_pid)
        self._shield.raise_()
        quiet_cell_failures()
        self.site = ScenarioServer().start()
        self.pool = BrowserPool(keep, launch_timeout(self.timeout))

    def teardown(self, worker: Worker) -> None:
        try:
            if self.pool is not None:
                self.pool.close()
            if self.site is not None:
                self.site.close()
        finally:  # (the worker's interrupts are its own again, whatever)
            if self._shield is not None:
                self._shield.lower()


def _event(worker: Worker, run_id: str, cell: Cell, state: str, **more: Any) -> None:
    worker.log_event(topic(run_id), {"state": state, "backend": cell.backend,
                                     "scenario": cell.scenario, "repeat": cell.repeat,
                                     # (Dask itself sets "worker" to the address)
                                     "worker_name": str(worker.name), **more})


def run_cell(task: CellTask, root: str, run_id: str, plugin_name: str) -> CellOutcome:
    """Run one cell on this worker and write its files; raise CellFailed if it fails."""
    layout = Layout(root)
    cell = task.cell
    worker = get_worker()
    if layout.is_finished(cell):
        return _outcome_on_file(layout, cell, str(worker.name), run_id)
    plugin = worker.plugins.get(plugin_name)
    if not isinstance(plugin, CampaignPlugin) or plugin.pool is None or plugin.site is None:
        raise CellFailed(f"worker {worker.name} has no {plugin_name} plugin")
    attempt = layout.start_attempt(cell)
    _event(worker, run_id, cell, "started")
    started = datetime.now(UTC)
    began = time.monotonic()
    trace = layout.trace_file(cell)
    meta = {"campaign": {"run_id": run_id, "backend": cell.backend, "scenario": cell.scenario,
                         "repeat": cell.repeat, "attempt": attempt,
                         "worker": str(worker.name)}}
    try:
        with plugin.pool.lease(task.spec) as lease:
            result, = engine.run_sync(run_checks(
                lease.connect, [task.check], plugin.site, backend=cell.backend,
                kind=lease.kind if lease.kind != "url" else None, version=lease.version,
                run=cell.repeat, record=trace, record_meta=meta, timeout=plugin.timeout),
                timeout=cell_timeout(plugin.timeout))
            if not lease.alive:
                raise BackendEnded(f"{cell.backend} ended during the cell (check said: "
                                   f"{result.status}, {result.detail})")
    except Exception as exc:
        reason = f"{type(exc).__name__}: {exc}"
        _event(worker, run_id, cell, "failed", reason=reason)
        layout.write(layout.failed_file(cell), failure_row(task, reason, attempt, run_id,
                                                           str(worker.name), started))
        raise CellFailed(reason) from None
    _write_finished(layout, task, result, {
        "mode": task.check.mode, "kind": lease.kind, "cell_seconds": time.monotonic() - began,
        "attempts": attempt, "browser_launched": lease.launched,
        "browser_cells": lease.cells_before, "worker": str(worker.name), "trace": trace.name,
        **_row(result, cell, run_id, started)})
    return CellOutcome(cell, result.status, result.value, str(worker.name), attempt)


def _write_finished(layout: Layout, task: CellTask, result: CheckResult,
                    row: dict[str, Any]) -> None:
    """The latency samples, then the checks row: the file that marks the cell done."""
    cell = task.cell
    samples = list(result.samples) or ([result.value] if result.value is not None else [])
    if samples:
        layout.write(layout.latencies_file(cell), pa.Table.from_pydict({
            "repeat": [cell.repeat] * len(samples),
            "capability": [result.capability] * len(samples),
            "sample": list(range(len(samples))), "ms": samples}, schema=LATENCIES_SCHEMA))
    # The failure mark goes before the checks file comes: a crash in between leaves a
    # cell that is neither, and a resumed campaign runs it again.
    layout.failed_file(cell).unlink(missing_ok=True)
    layout.write(layout.checks_file(cell), pa.Table.from_pylist([row], schema=CHECKS_SCHEMA))
    layout.attempts_file(cell).unlink(missing_ok=True)


def _row(result: CheckResult, cell: Cell, run_id: str, started: datetime) -> dict[str, Any]:
    return {"repeat": cell.repeat, "capability": result.capability, "version": result.version,
            "status": result.status, "expected": result.expected, "detail": result.detail,
            "value_ms": result.value, "check_seconds": result.seconds,
            "host": socket.gethostname(), "run_id": run_id, "started_at": started}


def failure_row(task: CellTask, reason: str, attempts: int, run_id: str, worker: str,
                started: datetime) -> pa.Table:
    """The checks row of a cell that did not succeed (status ``error``)."""
    return pa.Table.from_pylist([{
        "repeat": task.cell.repeat, "capability": task.check.capability,
        "mode": task.check.mode, "kind": task.spec.name if task.spec.kind == "launch" else "url",
        "status": "error", "detail": reason, "attempts": attempts,
        "worker": worker, "host": socket.gethostname(), "run_id": run_id,
        "started_at": started}], schema=CHECKS_SCHEMA)


def _outcome_on_file(layout: Layout, cell: Cell, worker: str, run_id: str) -> CellOutcome:
    """The outcome of a cell whose files are there: written by an earlier run (it was
    not run again), or by this one (a worker that died before its outcome was taken:
    the scheduler computes the task again, and the cell counts as run, once)."""
    import pyarrow.parquet as pq

    row = pq.read_table(layout.checks_file(cell), columns=[
        "status", "value_ms", "attempts", "run_id", "worker"]).to_pylist()[0]
    return CellOutcome(cell, str(row["status"]), row["value_ms"], row["worker"] or worker,
                       int(row["attempts"] or 1), already_done=row["run_id"] != run_id)
