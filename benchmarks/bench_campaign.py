"""Campaign throughput: cells per minute at 1 and 2 Dask workers, and what the design
predicts for each worker added.

Each round runs the same campaign (``--backends`` × ``--scenarios`` × ``--repeats``,
default 2 × 3 × 5 = 30 cells) into a fresh folder on a ``LocalCluster`` of 1 worker,
then of 2 (one thread each, every process on 127.0.0.1), alternating so that load
from elsewhere on the machine hits both alike. The clusters are started and their
workers warmed (cdpnb imported) before the clock starts; the browsers each worker
launches are part of the figure, as they are of any campaign.

The prediction: cells share nothing but the scheduler (a few ms per task against
cells of a few hundred ms), so each added worker adds what one worker does alone,
``rate(1)``, until the machine's cores are used up. That bound takes one more figure,
measured in the 1-worker rounds: ``cpu`` = CPU seconds per cell, counting everything
the campaign runs (the browsers and their renderers, the worker, the scheduler and
client). ``k`` workers on ``C`` free cores are predicted to reach
``min(k × rate(1), C × 60 / cpu)`` cells per minute. (CPU seconds per cell change
little when other work shares the machine; wall-clock rates do, so the rounds
alternate and the load average is reported.)

    .venv/bin/python benchmarks/bench_campaign.py [--rounds 2] [--repeats 5]

Prints a table and writes ``benchmarks/results/campaign.json``. Not a test: speed is
measured here, never asserted (see benchmarks/README.md).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import psutil
from distributed import Client, LocalCluster

import cdpnb

RESULTS = Path(__file__).resolve().parent / "results" / "campaign.json"


def _warm() -> str:
    """Run on each worker before timing: what a first cell would import anyway."""
    import cdpnb.campaign.worker  # noqa: F401

    return "warm"


class CpuMeter:
    """CPU seconds used by this process and every process under it (the cluster's
    workers, the browsers they launch, their renderers), sampled every 0.1 s while
    it runs, so a browser that comes and goes between samples still counts up to
    its last sample. Other work on the machine is not counted."""

    def __init__(self) -> None:
        self.used: dict[tuple[int, float], float] = {}
        self.first: dict[tuple[int, float], float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _sample(self) -> None:
        me = psutil.Process()
        for proc in [me, *me.children(recursive=True)]:
            try:
                key = (proc.pid, proc.create_time())
                times = proc.cpu_times()
            except psutil.Error:  # gone between listing and reading
                continue
            self.used[key] = times.user + times.system
            self.first.setdefault(key, self.used[key])

    def _run(self) -> None:
        while not self._stop.wait(0.1):
            self._sample()

    def __enter__(self) -> CpuMeter:
        self._sample()
        self.first = dict(self.used)  # what ran before the campaign started is not its
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()
        self._sample()

    @property
    def seconds(self) -> float:
        return sum(self.used[key] - self.first.get(key, 0.0) for key in self.used)


def one_run(workers: int, backends: list[str], scenarios: list[str],
            repeats: int) -> dict[str, float]:
    """One campaign on a fresh LocalCluster of ``workers`` workers."""
    with LocalCluster(n_workers=workers, threads_per_worker=1, host="127.0.0.1",
                      dashboard_address="127.0.0.1:0") as cluster, Client(cluster) as client, \
            tempfile.TemporaryDirectory(prefix=f"cdpnb-bench-campaign-{workers}w-") as out:
        client.run(_warm)
        with CpuMeter() as cpu:
            began = time.monotonic()
            result = cdpnb.campaign(backends, scenarios, repeats, out=out, client=client,
                                    progress=False)
            wall = time.monotonic() - began
        failures = result.failures()
    assert result.run is not None and result.run.failed == 0, failures
    return {"cells": result.run.ran, "seconds": result.run.seconds,
            "cells_per_minute": result.run.cells_per_minute,
            "cpu_seconds_per_cell": cpu.seconds / max(1, result.run.ran),
            "busy_cores": cpu.seconds / wall, "retried": result.run.retried}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--backends", default="headless-shell,chromium")
    parser.add_argument("--scenarios",
                        default="dialog.alert.main,dialog.prompt.cross_site,latency.command_rtt")
    args = parser.parse_args()
    backends, scenarios = args.backends.split(","), args.scenarios.split(",")
    runs: dict[int, list[dict[str, float]]] = {1: [], 2: []}
    for round_ in range(args.rounds):
        for workers in (1, 2) if round_ % 2 == 0 else (2, 1):
            runs[workers].append(one_run(workers, backends, scenarios, args.repeats))
            print(f"round {round_ + 1}, {workers} worker(s): "
                  f"{runs[workers][-1]['cells_per_minute']:.1f} cells/min", flush=True)
    cores = os.cpu_count() or 1
    rate = {k: statistics.median(r["cells_per_minute"] for r in v) for k, v in runs.items()}
    cpu = statistics.median(r["cpu_seconds_per_cell"] for r in runs[1])
    cpu_bound = cores * 60 / cpu

    def predicted(workers: int) -> float:
        return min(workers * rate[1], cpu_bound)

    figures: dict[str, Any] = {
        "cells_per_run": len(backends) * len(scenarios) * args.repeats,
        "cells_per_minute": {"1 worker": rate[1], "2 workers": rate[2]},
        "speed_up_2_workers": rate[2] / rate[1],
        "cpu_seconds_per_cell": cpu,
        "predicted_per_added_worker": rate[1],
        "predicted_cpu_bound_here": cpu_bound,
        "predicted_2_workers_here": predicted(2),
        "cores": cores, "runs": runs, "machine": platform.platform(),
        "load_average": os.getloadavg(), "when": time.strftime("%Y-%m-%d %H:%M"),
    }
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps(figures, indent=1) + "\n")
    print(f"\n{figures['cells_per_run']} cells per campaign, {args.rounds} rounds, "
          f"{cores} cores, load average {os.getloadavg()[0]:.1f}; "
          f"{cpu:.2f} CPU s per cell (1 worker)")
    print("| workers | cells/min (median) | predicted |")
    print("|---|---|---|")
    print(f"| 1 | {rate[1]:.1f} | |")
    print(f"| 2 | {rate[2]:.1f} ({rate[2] / rate[1]:.2f}×) | {predicted(2):.1f} "
          f"(= min(2 × {rate[1]:.1f}, {cores} cores × 60 / {cpu:.2f})) |")
    print(f"| each added worker, while cores last | | +{rate[1]:.1f} |")
    print(f"\nwritten to {RESULTS}")


if __name__ == "__main__":
    main()
