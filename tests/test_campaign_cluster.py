"""The same campaign on Dask clusters: a LocalCluster started here, and a scheduler and
workers started as separate processes (the ``dask`` CLI) reached by their address;
a worker killed in the middle of a campaign loses no finished cell.

Every scheduler and worker binds to 127.0.0.1 (checked), and every process started
here is ended by its own pid, the browsers a killed worker leaves behind included.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest
from distributed import Client, LocalCluster
from test_campaign import BACKENDS, REPEATS, SCENARIOS, dataset_files, expected_files

import cdpnb
from cdpnb.campaign import CampaignProgress, load
from cdpnb.campaign.layout import Layout

DASK = str(Path(sys.executable).with_name("dask"))


def _browsers_of(pid: int) -> list[psutil.Process]:
    """The browsers among ``pid``'s descendants."""
    with contextlib.suppress(psutil.NoSuchProcess):
        return [p for p in psutil.Process(pid).children(recursive=True)
                if "chrom" in p.name() or "headless" in p.name()]
    return []


class BrowserWatch:
    """A progress callable that notes the browsers the workers (descendants of
    ``roots``) are running, to check afterwards that every one of them ended."""

    def __init__(self, *roots: int) -> None:
        self.roots = roots
        self.seen: list[CampaignProgress] = []
        self.browsers: dict[int, psutil.Process] = {}

    def __call__(self, progress: CampaignProgress) -> None:
        self.seen.append(progress)
        for root in self.roots:
            self.browsers.update({p.pid: p for p in _browsers_of(root)})

    def all_ended(self, timeout: float = 10.0) -> bool:
        deadline = time.monotonic() + timeout
        while any(p.is_running() and p.status() != psutil.STATUS_ZOMBIE
                  for p in self.browsers.values()):
            if time.monotonic() > deadline:
                return False
            time.sleep(0.1)
        return True


@pytest.mark.browser
def test_on_a_local_cluster_of_two_processes(tmp_path: Path) -> None:
    with LocalCluster(n_workers=2, threads_per_worker=1, host="127.0.0.1",
                      dashboard_address="127.0.0.1:0") as cluster, Client(cluster) as client:
        watch = BrowserWatch(*client.run(os.getpid).values())  # the workers' processes
        result = cdpnb.campaign(BACKENDS, SCENARIOS, REPEATS, out=tmp_path, client=client,
                                progress=watch)
        assert len(client.scheduler_info()["workers"]) == 2  # the client is left as it was
        assert watch.browsers and watch.all_ended()  # the campaign ended its browsers
    seen = watch.seen
    assert result.run is not None and (result.run.ran, result.run.failed) == (8, 0)
    assert result.run.workers == 2 and result.run.cluster.startswith("tcp://127.0.0.1:")
    assert dataset_files(tmp_path) == expected_files(BACKENDS, SCENARIOS, REPEATS,
                                                     {"dialog.alert.main"})
    checks = load(tmp_path)
    assert set(checks["status"].astype(str)) == {"ok"}
    assert checks["worker"].nunique() == 2  # both workers ran cells
    assert seen[0].dashboard is not None and seen[0].dashboard.startswith("http://127.0.0.1:")
    assert any(len(p.running) == 2 for p in seen)  # cells running on each worker at once


@pytest.mark.browser
def test_a_cell_whose_outcome_dies_with_its_worker_is_computed_again_not_failed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A cell can finish on a worker that dies before the campaign takes its outcome:
    Dask then calls the future lost (seen once in a full run, the worker-kill test
    below: "cell lost"). Played exactly: the first time an outcome is to be taken, its
    worker is killed by its pid and the future seen lost first."""
    from cdpnb.campaign import run as campaign_run

    take = campaign_run._finish
    killed: list[int] = []

    def finish_after_losing_one(future: Any, *args: Any) -> bool:
        if not killed and future.status == "finished":
            client = future.client
            [holder] = client.who_has([future])[future.key]
            pid = client.run(os.getpid, workers=[holder])[holder]
            killed.append(pid)
            os.kill(pid, signal.SIGKILL)
            deadline = time.monotonic() + 30
            while future.status != "lost":
                assert time.monotonic() < deadline, future.status
                time.sleep(0.01)
        return take(future, *args)

    monkeypatch.setattr(campaign_run, "_finish", finish_after_losing_one)
    with LocalCluster(n_workers=2, threads_per_worker=1, host="127.0.0.1",
                      dashboard_address="127.0.0.1:0") as cluster, Client(cluster) as client:
        watch = BrowserWatch(*client.run(os.getpid).values())
        result = cdpnb.campaign(BACKENDS, SCENARIOS, REPEATS, out=tmp_path, client=client,
                                progress=watch)
    assert killed
    assert result.run is not None and result.run.failed == 0
    # The cell computed again ran in this run: counted as run, once, never as skipped.
    assert (result.run.ran, result.run.skipped) == (len(BACKENDS) * len(SCENARIOS) * REPEATS, 0)
    checks = load(tmp_path)
    assert set(checks["status"].astype(str)) == {"ok"}
    assert not list(tmp_path.rglob("*.failed.parquet"))
    # Every browser the killed worker launched died with it (its reaper ends them).
    assert watch.all_ended()


def _listening(pid: int) -> set[str]:
    return {c.laddr.ip for c in psutil.Process(pid).net_connections("tcp")
            if c.status == psutil.CONN_LISTEN}


@contextlib.contextmanager
def dask_processes(folder: Path, workers: int
                   ) -> Iterator[tuple[str, list[subprocess.Popen[bytes]]]]:
    """``dask scheduler`` and ``dask worker`` processes on 127.0.0.1 (one thread and one
    browser each); yields the scheduler's address and the workers; ends them by pid."""
    started: list[subprocess.Popen[bytes]] = []
    log = (folder / "dask.log").open("wb")
    scheduler_file = folder / "scheduler.json"
    try:
        started.append(subprocess.Popen(
            [DASK, "scheduler", "--host", "127.0.0.1", "--port", "0", "--dashboard-address",
             "127.0.0.1:0", "--scheduler-file", str(scheduler_file)],
            stdout=log, stderr=log))
        deadline = time.monotonic() + 60
        while not scheduler_file.exists():
            assert time.monotonic() < deadline, "the scheduler did not start"
            time.sleep(0.1)
        with Client(scheduler_file=str(scheduler_file)) as client:
            address = str(client.scheduler.address)
            procs = [subprocess.Popen(
                [DASK, "worker", address, "--nthreads", "1", "--no-nanny", "--host",
                 "127.0.0.1", "--dashboard-address", "127.0.0.1:0", "--resources",
                 "browser=1", "--name", f"w{i}"], stdout=log, stderr=log)
                for i in range(workers)]
            started += procs
            if workers:
                client.wait_for_workers(workers, timeout=90)
        for proc in started:
            assert _listening(proc.pid) == {"127.0.0.1"}, proc.args
        yield address, procs
    finally:
        # the workers first (a worker whose scheduler is gone waits for it), then the
        # scheduler; each by its own pid
        for group in (started[1:], started[:1]):
            for proc in group:
                if proc.poll() is None:
                    proc.send_signal(signal.SIGTERM)
            for proc in group:
                try:
                    proc.wait(30)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait(5)
        log.close()


@pytest.mark.browser
def test_against_a_scheduler_address_with_workers_in_their_own_processes(
        tmp_path: Path) -> None:
    with dask_processes(tmp_path, workers=2) as (address, workers):
        watch = BrowserWatch(*(w.pid for w in workers))
        result = cdpnb.campaign(BACKENDS, SCENARIOS, REPEATS, out=tmp_path / "out",
                                client=address, progress=watch)
    assert watch.browsers and watch.all_ended()
    assert result.run is not None and (result.run.ran, result.run.failed) == (8, 0)
    assert result.run.cluster == address and result.run.workers == 2
    assert dataset_files(tmp_path / "out") == expected_files(BACKENDS, SCENARIOS, REPEATS,
                                                             {"dialog.alert.main"})
    assert set(load(tmp_path / "out")["worker"].astype(str)) == {"w0", "w1"}




@pytest.mark.browser
def test_a_worker_killed_mid_campaign_loses_no_finished_cell(tmp_path: Path) -> None:
    scenarios = ["dialog.alert.main", "dialog.confirm.main", "latency.dialog_closed"]
    out = tmp_path / "out"
    layout = Layout(out)
    orphans: list[psutil.Process] = []
    with dask_processes(tmp_path, workers=2) as (address, workers), \
            concurrent.futures.ThreadPoolExecutor(1) as pool:
        watch = BrowserWatch(*(w.pid for w in workers))
        running = pool.submit(cdpnb.campaign, ["headless-shell"], scenarios, 4, out=out,
                              client=address, progress=watch)
        deadline = time.monotonic() + 120
        while len(layout.finished()) < 3:
            assert time.monotonic() < deadline and not running.done()
            time.sleep(0.02)
        finished = {layout.checks_file(c): layout.checks_file(c).stat().st_mtime_ns
                    for c in layout.finished()}
        victim = workers[0]
        orphans = _browsers_of(victim.pid)
        victim.send_signal(signal.SIGKILL)
        victim.wait(10)
        try:
            result = running.result(timeout=180)
        finally:
            # What the dead worker launched, ended by its own pid unless its reaper (which
            # ends a launch's processes when their owner dies) got there first.
            for browser in orphans:
                with contextlib.suppress(psutil.NoSuchProcess, ProcessLookupError):
                    os.kill(browser.pid, signal.SIGKILL)
        with Client(address) as client:
            assert list(w["name"] for w in client.scheduler_info()["workers"].values()) == [
                "w1"]
    assert orphans, "the killed worker had launched no browser"
    assert watch.all_ended()
    assert result.run is not None and result.run.failed == 0
    assert (result.run.ran, result.run.skipped) == (12, 0)  # the dead worker's cells: run
    assert len(layout.finished()) == 12
    assert {p: p.stat().st_mtime_ns for p in finished} == finished  # untouched
    checks = load(out)
    assert set(checks["status"].astype(str)) == {"ok"} and len(checks) == 12
    assert "w1" in set(checks["worker"].astype(str))


def test_cdpnb_campaign_on_a_scheduler_with_no_workers_says_so_in_one_line(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    # A scheduler with no worker: the campaign gives up (ClusterUnusable) instead of
    # waiting for ever, and the command says so in one line, exit 1, no traceback.
    import cdpnb.campaign.run
    from cdpnb.cli import main

    monkeypatch.setattr(cdpnb.campaign.run, "NO_WORKERS_S", 1.0)
    with dask_processes(tmp_path, workers=0) as (address, _):
        status = main(["campaign", "--out", str(tmp_path / "out"), "--backends", "node",
                       "--scenarios", "runtime.evaluate", "--scheduler", address])
    err = capsys.readouterr().err
    assert status == 1, err
    said = " ".join(err.split())  # one message, wrapped to the terminal
    assert said.count("cannot run") == 1, err
    assert "cdpnb campaign: cannot run: the Dask cluster at " in said
    assert "has had no workers for 1 s" in said and "the same call resumes" in said
    assert "Traceback" not in err and "ClusterUnusable" not in err
