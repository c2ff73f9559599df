"""``cdpnb.campaign(...)``: backends × scenarios × repeats, as Dask tasks.

One code path for every place a campaign runs: with no cluster given, an in-process
Dask cluster (threads, nothing listening beyond 127.0.0.1) runs ``concurrency`` cells
at a time; given a ``dask.distributed.Client`` or a scheduler's address, the same
tasks go to that cluster's workers. Dask does the scheduling, the retries of a failed
cell (``retries``), the re-running of a cell whose worker died, and the bounding of
browsers per worker (a ``browser`` resource, when the workers declare one); a worker
plugin keeps each worker's browsers and scenario pages between cells.

The call blocks until every cell has finished or failed, in a notebook cell (with a
progress bar), in a script and inside a coroutine alike; so it is the same object in
``cdpnb`` and ``cdpnb.sync``.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import tempfile
import time
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cdpnb._version import __version__
from cdpnb.campaign.cells import CellTask, grid, resolve_backends, resolve_scenarios
from cdpnb.campaign.dataset import CampaignResult, RunSummary
from cdpnb.campaign.interrupts import CELL_KEY_PREFIX
from cdpnb.campaign.layout import Layout
from cdpnb.campaign.progress import ProgressOption, Tracker, progress_display
from cdpnb.errors import CdpnbError
from cdpnb.probes import Check
from cdpnb.session.options import check_timeout

if TYPE_CHECKING:
    from distributed import Client, Future

    from cdpnb.campaign.worker import CellOutcome

__all__ = ["NO_WORKERS_S", "CampaignInterrupted", "ClusterUnusable", "default_concurrency",
           "run_campaign"]

#: Seconds between looks at the cluster (and progress redraws) while cells run.
TICK_S = 0.2
#: A cluster that has had no worker for this long while cells remain cannot run the
#: campaign (an interrupt or a crash ended its workers, or it never had any): say so,
#: never wait forever. An adaptive cluster scaled to zero starts one well within it.
NO_WORKERS_S = 30.0


class CampaignInterrupted(KeyboardInterrupt):
    """A campaign stopped by an interrupt: its message says how many cells are saved
    where, and that running the same call again resumes (it is a KeyboardInterrupt, so
    a script still stops)."""


class ClusterUnusable(CdpnbError, RuntimeError):
    """The Dask cluster cannot run the campaign (no workers, or a closed client)."""


def default_concurrency() -> int:
    """Cells at a time with no cluster: one per core, at most 4 (a cell keeps about a
    core busy between its browser and the supervisor)."""
    return max(1, min(4, os.cpu_count() or 1))


@dataclass
class _Cluster:
    client: Client
    name: str  # "local" or the scheduler's address
    dashboard: str | None


@contextlib.contextmanager
def _cluster(client: Client | str | None, concurrency: int) -> Iterator[_Cluster]:
    """The Dask client to run on; what this function started, it ends."""
    from distributed import Client, LocalCluster

    if client is None:
        # In-process: workers are threads of this process talking over inproc://; the
        # HTTP endpoints a scheduler and worker always open are kept on 127.0.0.1.
        with LocalCluster(n_workers=1, threads_per_worker=concurrency, processes=False,
                          dashboard_address="127.0.0.1:0",
                          worker_dashboard_address="127.0.0.1:0",
                          scheduler_kwargs={"dashboard": False},
                          silence_logs=logging.ERROR) as local, Client(local) as own:
            yield _Cluster(own, "local", None)
        return
    if isinstance(client, str):
        # how long to try to reach it is Dask's to say (distributed.comm.timeouts.connect)
        with Client(client) as remote:
            yield _Cluster(remote, client, _dashboard(remote))
        return
    yield _Cluster(client, _name(client), _dashboard(client))


def _name(client: Client | str | None) -> str:
    """What the run summary calls where cells ran: "local", or the scheduler's address."""
    if client is None:
        return "local"
    if isinstance(client, str):
        return client
    return str(client.scheduler.address if client.scheduler else "?")


def _dashboard(client: Client) -> str | None:
    services = client.scheduler_info().get("services", {})
    return str(client.dashboard_link) if "dashboard" in services else None


def _check_arguments(repeats: int, retries: int, concurrency: int | None,
                     keep_browsers: int | None) -> None:
    for name, value, least in (("repeats", repeats, 1), ("retries", retries, 0)):
        if isinstance(value, bool) or not isinstance(value, int) or value < least:
            raise ValueError(f"{name} must be an int >= {least}, got {value!r}")
    for name, option in (("concurrency", concurrency), ("keep_browsers", keep_browsers)):
        if option is not None and (isinstance(option, bool) or not isinstance(option, int)
                                   or option < (1 if name == "concurrency" else 0)):
            raise ValueError(f"{name} must be a positive int or None, got {option!r}")


def _check_client(client: object) -> None:
    if client is None or isinstance(client, str):
        return
    from distributed import Client

    if not isinstance(client, Client):
        raise TypeError(f"client must be a dask.distributed.Client, a scheduler address or "
                        f"None, got {type(client).__name__}")


def run_campaign(
    backends: Sequence[str] | str = ("chromium", "headless-shell"),
    scenarios: Sequence[str | Check] | str | Check | None = None,
    repeats: int = 1,
    *,
    out: str | os.PathLike[str] | None = None,
    client: Client | str | None = None,
    concurrency: int | None = None,
    retries: int = 2,
    keep_browsers: int | None = None,
    progress: ProgressOption = True,
    timeout: float | None = None,
) -> CampaignResult:
    """Run every scenario on every backend ``repeats`` times; each run is a cell.

    ``backends``: kinds cdpnb launches or CDP URLs. ``scenarios``: probe check names
    or globs (``"dialog.*.cross_site"``), or your own ``cdpnb.probes.Check``; None is every
    probe check. Each cell writes its row, its latency samples and its trace under
    ``out`` (a new temporary folder if not given); cells already there are skipped, so
    the same call resumes an interrupted campaign, and a larger ``repeats`` or more
    backends or scenarios append to it.

    ``client``: a ``dask.distributed.Client`` or a scheduler address
    (``"tcp://127.0.0.1:8786"``); None runs ``concurrency`` cells at a time here
    (default: :func:`default_concurrency`). A failed cell is tried ``retries`` more
    times, then recorded with its reason (``result.failures()``). Each worker keeps
    ``keep_browsers`` backends alive between cells (default: one per backend for each
    cell it runs at once; 0 launches a fresh one per cell). ``progress``: True for a
    bar (a widget in a notebook), False for none, or a callable given a
    ``CampaignProgress``. ``timeout`` is a step's budget in seconds, as in
    :func:`cdpnb.probe` (None: fitted to how long each backend took to launch).
    """
    timeout = check_timeout("timeout", timeout, allow_none=True)
    specs = resolve_backends(backends)
    checks = resolve_scenarios(scenarios)
    _check_arguments(repeats, retries, concurrency, keep_browsers)
    _check_client(client)
    if client is not None and concurrency is not None:
        raise ValueError("concurrency is for a campaign without a cluster; a cluster's "
                         "workers and threads (or browser resources) set its own")
    root = Path(out) if out is not None else Path(tempfile.mkdtemp(prefix="cdpnb-campaign-"))
    layout = Layout(root)
    layout.create()  # (0700: a campaign's files hold prompt answers and page contents)
    tasks = grid(specs, checks, repeats)
    finished = layout.finished()
    todo = [task for task in tasks if task.cell not in finished]
    run_id = f"{datetime.now(UTC):%Y%m%dT%H%M%S}-{uuid.uuid4().hex[:6]}"
    began = time.monotonic()
    kinds = len({spec.name for spec in specs if spec.kind == "launch"})
    # what this call asked for: its result's statistics are about these cells only
    asked: dict[str, Any] = {"backends": tuple(s.label for s in specs),
                             "scenarios": tuple(c.name for c in checks), "repeats": repeats}
    _record_run(layout, run_id=run_id, phase="started", **asked)
    if not todo:  # all done before: no cluster to start or reach
        summary = RunSummary(run_id, len(tasks), 0, len(tasks), 0, 0,
                             time.monotonic() - began, 0, _name(client), **asked)
    else:
        with _cluster(client, concurrency or default_concurrency()) as cluster:
            _check_usable(cluster)
            tracker = Tracker(len(tasks), len(tasks) - len(todo), cluster.dashboard)
            workers = len(cluster.client.scheduler_info()["workers"])
            try:
                with progress_display(progress) as show:
                    show(tracker.snapshot())
                    _run_cells(cluster.client, todo, layout, run_id, tracker, show,
                               retries=retries, keep=keep_browsers, kinds=kinds,
                               timeout=timeout)
                    show(tracker.snapshot())
            except KeyboardInterrupt:
                _record_run(layout, run_id=run_id, phase="interrupted")
                raise CampaignInterrupted(_interrupted(layout, len(tasks), cluster)) from None
        done = tracker.snapshot()
        summary = RunSummary(run_id, len(tasks), done.done, done.skipped, done.failed,
                             done.retried, time.monotonic() - began, workers, cluster.name,
                             cluster.dashboard, **asked)
    _record_run(layout, **asdict(summary), phase="finished")
    return CampaignResult(root, summary)


def _workers(client: Client) -> int:
    return len(client.scheduler_info()["workers"])


def _check_usable(cluster: _Cluster) -> None:
    status = getattr(cluster.client, "status", "running")
    if status not in ("running", "connecting", "newly-created"):
        raise ClusterUnusable(f"the Dask client of {cluster.name} is {status}: make a new "
                              "one (and a new cluster if it ended)")


def _interrupted(layout: Layout, cells: int, cluster: _Cluster) -> str:
    """The one line an interrupted campaign leaves: what is kept, how to go on."""
    saved = len(layout.finished())
    line = (f"campaign interrupted: {saved} of {cells} cells saved in {layout.root}; run "
            "the same call again to resume")
    try:
        left = _workers(cluster.client)
    except Exception:  # the cluster itself is gone with the interrupt
        left = 0
    if cluster.name != "local" and left == 0:
        line += f" (the cluster {cluster.name} has no workers left: start a new one)"
    return line


def _run_cells(client: Client, todo: list[CellTask], layout: Layout, run_id: str,
               tracker: Tracker, show: Any, *, retries: int, keep: int | None,
               kinds: int, timeout: float | None) -> None:
    from distributed import as_completed

    from cdpnb.campaign.worker import CampaignPlugin, run_cell, topic

    plugin_name = f"cdpnb-campaign-{run_id}"
    futures: dict[Future[CellOutcome], CellTask] = {}
    try:
        # Inside the try: an interrupt while the workers set the plugin up still ends
        # with it taken off them (its browsers, its interrupt shield).
        client.register_plugin(CampaignPlugin(keep, kinds, timeout, caller_pid=os.getpid()),
                               name=plugin_name)
        client.subscribe_topic(topic(run_id), tracker.on_event)
        workers = client.scheduler_info()["workers"].values()
        # Workers started with --resources browser=N run at most N cells at once each.
        resources = {"browser": 1} if any("browser" in w.get("resources", {})
                                          for w in workers) else None
        submitted = client.map(run_cell, todo, root=str(layout.root), run_id=run_id,
                               plugin_name=plugin_name, key=[
                                   (f"{CELL_KEY_PREFIX}{run_id}", i) for i in range(len(todo))],
                               pure=False, retries=retries, resources=resources)
        futures = dict(zip(submitted, todo, strict=True))
        del submitted
        pending = as_completed(list(futures))
        shown = 0.0
        idle_since = time.monotonic()  # (no worker since then)
        while not pending.is_empty():
            batch = pending.next_batch(block=False) if pending.has_ready() else []
            for future in batch:
                if _finish(future, futures[future], layout, run_id, tracker):
                    del futures[future]
                else:
                    pending.add(future)
            if time.monotonic() - shown >= TICK_S:
                show(tracker.snapshot())
                shown = time.monotonic()
                if _workers(client):
                    idle_since = shown
                elif shown - idle_since > NO_WORKERS_S:
                    raise ClusterUnusable(
                        f"the Dask cluster at {_name(client)} has had no workers for "
                        f"{NO_WORKERS_S:g} s, so no cell can run (its workers ended, or it "
                        "never had any): start a new cluster; the cells saved in "
                        f"{layout.root} are kept, and the same call resumes")
            if not batch:
                time.sleep(TICK_S / 4)
    finally:
        _clean_up(client, list(futures), run_id, plugin_name)


def _clean_up(client: Client, unfinished: list[Future[CellOutcome]], run_id: str,
              plugin_name: str) -> None:
    """Cancel the cells not finished (they stay to be resumed) and take the campaign's
    plugin off the workers; a second interrupt meanwhile waits until it is done (a
    plugin left behind would keep its browsers and its interrupt shield)."""
    from cdpnb.campaign.worker import topic

    with _interrupts_held():
        if unfinished:
            with contextlib.suppress(Exception):
                client.cancel(unfinished)
        with contextlib.suppress(Exception):
            client.unsubscribe_topic(topic(run_id))
        with contextlib.suppress(Exception):  # a worker that is gone has nothing to end
            client.unregister_worker_plugin(plugin_name)


@contextlib.contextmanager
def _interrupts_held() -> Iterator[None]:
    """SIGINT held back (on the main thread) for the block, and raised after it."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda number, _: caught.append(number))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
    if caught:
        raise KeyboardInterrupt


def _finish(future: Future[CellOutcome], task: CellTask, layout: Layout, run_id: str,
            tracker: Tracker) -> bool:
    """Take a finished cell's outcome, or record one that ran out of attempts (True);
    False for a cell whose outcome was lost before it could be taken."""
    from cdpnb.campaign.worker import CellFailed, failure_row

    if future.status == "lost":
        # It finished on a worker that died before the outcome was taken: the scheduler
        # computes it again, and the cell, its files written, says so at once.
        return False
    if future.status == "finished":
        outcome = future.result()
        tracker.finish(task.cell, failed=False, already_done=outcome.already_done,
                       attempts=outcome.attempts, how=outcome.status)
    else:
        error = future.exception() if future.status == "error" else None
        if isinstance(error, CellFailed):
            reason = str(error)
        elif error is not None:  # e.g. KilledWorker: its workers kept dying under it
            reason = f"{type(error).__name__}: {error}"
        else:
            reason = f"cell {future.status}"
        attempts = max(tracker.attempts(task.cell), layout.attempts(task.cell), 1)
        layout.write(layout.failed_file(task.cell),
                     failure_row(task, reason, attempts, run_id, "", datetime.now(UTC)))
        tracker.finish(task.cell, failed=True, already_done=False, attempts=attempts,
                       how=reason)
    future.release()
    return True


def _record_run(layout: Layout, *, run_id: str, phase: str, **fields: Any) -> None:
    """Append to (or complete) this run's entry in ``campaign.json``."""
    path = layout.manifest
    data: dict[str, Any] = {"cdpnb_campaign": 1, "runs": []}
    if path.exists():
        with contextlib.suppress(ValueError):
            data = json.loads(path.read_text(encoding="utf-8"))
    runs = data.setdefault("runs", [])
    entry = next((r for r in runs if r.get("run_id") == run_id), None)
    if entry is None:
        entry = {"run_id": run_id, "cdpnb": __version__}
        runs.append(entry)
    entry.update(fields)
    entry[f"{phase}_at"] = datetime.now(UTC).isoformat(timespec="seconds")
    layout.write_manifest(data)
