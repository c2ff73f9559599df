"""A campaign interrupted in a notebook leaves the user's cluster usable and says, in
one line, what it kept and how to go on; a cluster that cannot run it is said so.

The kernel is a real ipykernel driven by jupyter_client, interrupted as JupyterLab's
"interrupt kernel" does (``KernelManager.interrupt_kernel``: SIGINT to the kernel's
process group, which a LocalCluster's worker processes made in the notebook share).
"""

from __future__ import annotations

import queue
import resource
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from distributed import Client, LocalCluster
from jupyter_client import KernelManager

import cdpnb
from cdpnb.campaign import run as campaign_run

SCENARIOS = ["dialog.alert.main", "runtime.evaluate", "latency.command_rtt"]


class Kernel:
    """A real kernel; ``run`` executes a cell and returns its outputs."""

    def __init__(self, cwd: Path) -> None:
        self.manager = KernelManager(kernel_name="python3")
        self.manager.start_kernel(cwd=str(cwd))
        self.client = self.manager.client()
        self.client.start_channels()
        self.client.wait_for_ready(60)

    def run(self, code: str, *, interrupt_when: Any = None,
            timeout: float = 240) -> list[tuple[str, str]]:
        msg_id = self.client.execute(code)
        outputs: list[tuple[str, str]] = []
        deadline = time.monotonic() + timeout
        interrupted = False
        while time.monotonic() < deadline:
            if interrupt_when is not None and not interrupted and interrupt_when():
                self.manager.interrupt_kernel()
                interrupted = True
            try:
                msg = self.client.get_iopub_msg(timeout=0.2)
            except queue.Empty:
                continue
            if msg["parent_header"].get("msg_id") != msg_id:
                continue
            kind, content = msg["msg_type"], msg["content"]
            if kind == "stream":
                outputs.append((content["name"], content["text"]))
            elif kind == "error":
                outputs.append(("error", f"{content['ename']}: {content['evalue']}"))
                outputs.append(("traceback", "\n".join(content["traceback"])))
            elif kind == "execute_result":
                outputs.append(("result", content["data"].get("text/plain", "")))
            elif kind == "status" and content["execution_state"] == "idle":
                return outputs
        raise AssertionError(f"the cell did not finish within {timeout} s: {outputs}")

    def close(self) -> None:
        self.client.stop_channels()
        self.manager.shutdown_kernel(now=True)


@pytest.fixture
def kernel(tmp_path: Path) -> Iterator[Kernel]:
    k = Kernel(tmp_path)
    try:
        yield k
    finally:
        k.close()


def _saved(out: Path) -> int:
    return len([p for p in out.glob("checks/*/*/r*.parquet") if ".failed" not in p.name])


@pytest.mark.browser
def test_an_interrupted_notebook_campaign_keeps_the_cluster_and_resumes(
        kernel: Kernel, tmp_path: Path) -> None:
    out = tmp_path / "campaign"
    repeats = 12  # 36 cells: enough to be interrupted with most of them still to run
    printed = kernel.run(f"""
import cdpnb
from dask.distributed import Client, LocalCluster
cluster = LocalCluster(n_workers=2, threads_per_worker=1, host="127.0.0.1",
                       dashboard_address="127.0.0.1:0")
client = Client(cluster)
print(len(client.scheduler_info()["workers"]), "workers")
args = (["headless-shell"], {SCENARIOS!r}, {repeats})
""")
    assert printed == [("stdout", "2 workers\n")]
    interrupted = kernel.run(f"cdpnb.campaign(*args, out={str(out)!r}, client=client)",
                             interrupt_when=lambda: _saved(out) >= 1)
    errors = [text for kind, text in interrupted if kind == "error"]
    assert len(errors) == 1, interrupted
    saved = _saved(out)
    assert errors[0].startswith("CampaignInterrupted: campaign interrupted: ")
    assert f"cells saved in {out}; run the same call again to resume" in errors[0]
    said = int(errors[0].split("interrupted: ")[1].split(" of ")[0])
    assert 1 <= said <= saved < 3 * repeats
    # Nothing of Dask's internals: no worker's traceback, no warning, one error.
    streams = "".join(text for kind, text in interrupted if kind in ("stdout", "stderr"))
    assert "Traceback" not in streams and "KeyboardInterrupt" not in streams, streams
    time.sleep(1)  # (a worker that dies of the interrupt is gone by now)
    assert kernel.run('print(len(client.scheduler_info()["workers"]), "workers")') == [
        ("stdout", "2 workers\n")]
    resumed = kernel.run(f"r = cdpnb.campaign(*args, out={str(out)!r}, client=client, "
                         "progress=False); print(r.run.ran + r.run.skipped, r.run.skipped, "
                         "r.run.failed)")
    total, skipped, failed = (int(n) for n in resumed[-1][1].split())
    assert (total, failed) == (3 * repeats, 0) and skipped >= saved, resumed
    kernel.run("client.close(); cluster.close()")


def test_a_cluster_with_no_workers_is_said_to_be_unusable(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Where the old campaign waited at 0 cells forever, it now says the cluster has no
    workers (after NO_WORKERS_S, 30 s; 1 s here) and keeps what was saved."""
    monkeypatch.setattr(campaign_run, "NO_WORKERS_S", 1.0)
    never_reached = "http://127.0.0.1:9"  # (no worker ever runs a cell to reach it)
    with LocalCluster(n_workers=0, processes=False, dashboard_address="127.0.0.1:0") as cluster, \
            Client(cluster) as client:
        began = time.monotonic()
        with pytest.raises(cdpnb.campaign.ClusterUnusable,
                           match="has had no workers for 1 s, so no cell can run"):
            cdpnb.campaign([never_reached], ["runtime.evaluate"], 1, out=tmp_path / "c",
                           client=client, progress=False)
        assert time.monotonic() - began < 15
        client.close()
        with pytest.raises(cdpnb.campaign.ClusterUnusable, match="client .* is closed"):
            cdpnb.campaign([never_reached], ["runtime.evaluate"], 1, out=tmp_path / "c",
                           client=client, progress=False)


@pytest.mark.browser
def test_failing_cells_say_so_without_dasks_tracebacks(tmp_path: Path) -> None:
    """Writes refused as on a full disk (RLIMIT_FSIZE: a write past 20 kB fails with
    EFBIG, Python ignoring SIGXFSZ; the browser it launches dies of it): the campaign
    exits 1 with its failures in its own table, and Dask's "Compute Failed" log of each
    cell (63 lines for 3 cells before) stays out of stderr."""
    def limit_writes() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (20_000, 20_000))

    done = subprocess.run(
        [str(Path(sys.executable).with_name("cdpnb")), "campaign", "--backends",
         "headless-shell", "--scenarios", "runtime.evaluate", "--repeats", "3", "--out",
         str(tmp_path / "c")], preexec_fn=limit_writes, capture_output=True, text=True,
        timeout=300)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Compute Failed" not in done.stderr and "Traceback" not in done.stderr
    assert "failed" in done.stdout
