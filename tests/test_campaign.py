"""``cdpnb.campaign`` with no cluster: real browsers, the dataset it writes, resuming,
failures recorded with their reason, a browser that dies mid-cell, and the CLI."""

from __future__ import annotations

import functools
import inspect
import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import duckdb
import pandas as pd
import psutil
import pytest

import cdpnb
import cdpnb.sync
from cdpnb import cli
from cdpnb.campaign import CampaignProgress, CampaignResult, load
from cdpnb.campaign.browsers import BrowserPool
from cdpnb.probes import Check, parse_backend
from cdpnb.probes.checks import Site
from cdpnb.supervisor import Supervisor
from cdpnb.trace import Trace

ROOT = Path(__file__).resolve().parent.parent
BACKENDS = ["headless-shell", "chromium"]
SCENARIOS = ["runtime.evaluate", "dialog.alert.main"]
REPEATS = 2


def dataset_files(root: Path) -> list[str]:
    """The campaign's files (not campaign.json), relative to its folder."""
    return sorted(str(p.relative_to(root)) for p in root.rglob("*")
                  if p.is_file() and p.name != "campaign.json")


def expected_files(backends: list[str], scenarios: list[str], repeats: int,
                   measured: set[str]) -> list[str]:
    """What a finished campaign holds: per cell a row and a trace, and latencies for the
    scenarios that measure a value."""
    files = []
    for backend in backends:
        for scenario in scenarios:
            for repeat in range(repeats):
                name = f"r{repeat:05d}"
                folder = f"backend={backend}/scenario={scenario}"
                files += [f"checks/{folder}/{name}.parquet", f"checks/{folder}/{name}.jsonl.gz"]
                if scenario in measured:
                    files.append(f"latencies/{folder}/{name}.parquet")
    return sorted(files)


def non_loopback_listeners() -> list[str]:
    """This process's listening TCP sockets on anything but loopback."""
    return [f"{c.laddr.ip}:{c.laddr.port}" for c in psutil.Process().net_connections("tcp")
            if c.status == psutil.CONN_LISTEN and c.laddr.ip not in ("127.0.0.1", "::1")]


class Watch:
    """A progress callable that keeps what it was shown."""

    def __init__(self) -> None:
        self.seen: list[CampaignProgress] = []
        self.before = set(non_loopback_listeners())  # other tests' servers are not ours
        self.exposed: set[str] = set()

    def __call__(self, progress: CampaignProgress) -> None:
        self.seen.append(progress)
        self.exposed.update(set(non_loopback_listeners()) - self.before)


@pytest.fixture(scope="module")
def local(tmp_path_factory: pytest.TempPathFactory) -> tuple[CampaignResult, Watch]:
    """One small campaign with no cluster, shared by the tests below."""
    watch = Watch()
    out = tmp_path_factory.mktemp("campaign")
    return cdpnb.campaign(BACKENDS, SCENARIOS, REPEATS, out=out, progress=watch), watch


def test_cdpnb_campaign_is_a_callable_namespace_in_both_faces() -> None:
    assert callable(cdpnb.campaign) and cdpnb.campaign.load is load
    assert cdpnb.sync.campaign is cdpnb.campaign  # it blocks already: one object
    assert "campaign" in cdpnb.__all__ and "campaign" in cdpnb.sync.__all__
    assert list(inspect.signature(cdpnb.campaign).parameters)[:3] == [
        "backends", "scenarios", "repeats"]
    assert all(hasattr(cdpnb.campaign, name) for name in cdpnb.campaign.__all__)


def test_every_cell_wrote_its_row_latencies_and_trace(
        local: tuple[CampaignResult, Watch]) -> None:
    result, _ = local
    assert result.run is not None
    assert (result.run.cells, result.run.ran, result.run.skipped, result.run.failed) == (
        8, 8, 0, 0)
    assert result.run.cluster == "local" and result.run.workers == 1
    assert dataset_files(result.path) == expected_files(BACKENDS, SCENARIOS, REPEATS,
                                                        {"dialog.alert.main"})
    trace = Trace.load(result.path / "checks/backend=chromium/scenario=dialog.alert.main/"
                                     "r00001.jsonl.gz")
    assert trace.header["meta"]["campaign"]["repeat"] == 1
    assert len(trace.dialogs()) == 1  # the alert the check opened and answered


def test_load_gives_one_typed_row_per_cell(local: tuple[CampaignResult, Watch]) -> None:
    result, _ = local
    checks = load(result.path)
    assert len(checks) == 8 and set(checks["status"].astype(str)) == {"ok"}
    assert isinstance(checks["backend"].dtype, pd.CategoricalDtype)
    assert checks["value_ms"].dtype == "Float64" and checks["repeat"].dtype == "Int64"
    dialogs = checks[checks["scenario"] == "dialog.alert.main"]
    assert (dialogs["value_ms"] > 0).all() and checks["value_ms"].isna().sum() == 4
    assert set(checks["version"].astype(str).str[:7]) == {"Chrome/", "Headles"}
    assert (checks["attempts"] == 1).all()
    # the first cell of each backend launched its browser; later ones reused it
    assert checks["browser_launched"].sum() >= 2 and (checks["browser_cells"] > 0).any()
    latencies = load(result.path, "latencies")
    assert len(latencies) == 4 and set(latencies["capability"].astype(str)) == {"dialogs main"}


def test_duckdb_one_liner_over_the_files_agrees_with_pandas(
        local: tuple[CampaignResult, Watch]) -> None:
    result, _ = local
    query = (f"SELECT backend, scenario, count(*) AS cells, median(value_ms) AS median_ms "
             f"FROM '{result.path}/checks/**/*.parquet' GROUP BY ALL ORDER BY ALL")
    in_duckdb = duckdb.sql(query).to_arrow_table().to_pandas()
    checks = load(result.path)
    in_pandas = (checks.assign(backend=checks["backend"].astype(str),
                               scenario=checks["scenario"].astype(str),
                               value_ms=checks["value_ms"].astype(float))
                 .groupby(["backend", "scenario"])
                 .agg(cells=("repeat", "size"), median_ms=("value_ms", "median"))
                 .reset_index())
    pd.testing.assert_frame_equal(in_duckdb, in_pandas, check_dtype=False)
    views = result.sql("SELECT count(*) AS n FROM checks JOIN latencies "
                       "USING (backend, scenario, repeat)")
    assert views["n"].tolist() == [4]


def test_summary_has_intervals_and_compare_says_when_it_cannot_tell(
        local: tuple[CampaignResult, Watch]) -> None:
    result, _ = local
    summary = result.summary()
    row = summary.loc[("chromium", "dialogs main")]
    assert row["cells"] == 2 and row["success_rate"] == 1.0 and row["errors"] == 0
    assert row["success_low"] == pytest.approx(0.3424, abs=1e-4)  # Wilson, 2 of 2
    assert row["median_low"] <= row["median_ms"] <= row["median_high"]
    assert row["p95_low"] <= row["p95_ms"] <= row["p95_high"]
    assert pd.isna(summary.loc[("chromium", "evaluate"), "median_ms"])  # no value measured
    assert list(result.summary(by="scenario").index.names) == ["backend", "scenario"]
    comparison = result.compare("headless-shell", "chromium")
    assert list(comparison.index) == ["dialogs main"]
    assert "→ too few runs to tell" in comparison.loc["dialogs main", "verdict"]
    with pytest.raises(ValueError, match="no cells of backend 'firefox'"):
        result.compare("chromium", "firefox")


def test_plot_and_html_repr(local: tuple[CampaignResult, Watch]) -> None:
    result, _ = local
    fig = result.plot()
    assert [ax.get_title().split("\n")[0] for ax in fig.axes] == [
        "dialogs main", "cells ok, all capabilities"]
    html = result._repr_html_()
    assert "dialogs main" in html and "100% (34%–100%)" in html and "0 failed" in html


def test_progress_showed_cells_running_and_nothing_listened_beyond_loopback(
        local: tuple[CampaignResult, Watch]) -> None:
    _, watch = local
    final = watch.seen[-1]
    assert (final.total, final.done, final.failed, final.running) == (8, 8, 0, {})
    busiest = max(sum(len(cells) for cells in p.running.values()) for p in watch.seen)
    assert 1 <= busiest <= 2  # two cells at a time on two cores, never more
    assert watch.exposed == set()


@pytest.mark.browser
def test_resuming_skips_finished_cells_and_more_repeats_append(
        local: tuple[CampaignResult, Watch], tmp_path: Path) -> None:
    result, _ = local
    before = {p: p.stat().st_mtime_ns for p in result.path.rglob("*.parquet")}
    again = cdpnb.campaign(BACKENDS, SCENARIOS, REPEATS, out=result.path, progress=False)
    assert again.run is not None and (again.run.ran, again.run.skipped) == (0, 8)
    assert {p: p.stat().st_mtime_ns for p in result.path.rglob("*.parquet")} == before
    more = cdpnb.campaign(["headless-shell"], SCENARIOS, REPEATS + 1, out=result.path,
                          progress=False)
    assert more.run is not None and (more.run.ran, more.run.skipped) == (2, 4)
    assert len(load(result.path)) == 10
    assert [run["ran"] for run in result.runs()] == [8, 0, 2]


def kill_own_browser_once(marker: Path, sup: Supervisor, site: Site) -> Any:
    """A check that ends its own browser (by that browser's pid) on the first attempt."""
    first = not marker.exists()
    marker.touch()

    async def drive() -> tuple[str, str, float | None]:
        if first:
            info = await sup.cdp("SystemInfo.getProcessInfo", browser=True)
            browser = next(p["id"] for p in info["processInfo"] if p["type"] == "browser")
            os.kill(browser, signal.SIGKILL)
            await sup.evaluate("1", timeout=3)
        return "ok", f"evaluated on a browser that was not killed ({await sup.evaluate('2')})", 1.0

    return drive()


@pytest.mark.browser
def test_a_browser_killed_mid_cell_is_replaced_and_the_cell_retried(tmp_path: Path) -> None:
    marker = tmp_path / "killed-once"
    check = Check("custom.kill_browser_once", "survives a crash",
                  "kills its browser on the first attempt",
                  functools.partial(kill_own_browser_once, marker))
    result = cdpnb.campaign(["headless-shell"], [check], 1, out=tmp_path / "out",
                            progress=False)
    assert result.run is not None and (result.run.ran, result.run.failed) == (1, 0)
    assert result.run.retried == 1 and marker.exists()
    row = load(result.path).iloc[0]
    assert row["status"] == "ok" and row["attempts"] == 2 and row["browser_launched"]
    assert row["detail"] == "evaluated on a browser that was not killed (2)"


@pytest.mark.browser
def test_a_kept_browser_that_died_while_idle_is_replaced() -> None:
    pool = BrowserPool(keep=1)
    spec = parse_backend("headless-shell")
    try:
        with pool.lease(spec) as first:
            assert first.launched and first.alive
        with pool.lease(spec) as again:  # kept between cells
            assert again.connect is first.connect and again.cells_before == 1
        psutil.Process(first.connect.pid).kill()  # crashed while idle, ended by its pid
        with pool.lease(spec) as replaced:
            assert replaced.connect is not first.connect and replaced.launched
            assert replaced.alive and pool.replaced == 1
    finally:
        pool.close()
    assert not first.connect.running and not replaced.connect.running


def test_a_cell_that_keeps_failing_is_recorded_with_its_reason(tmp_path: Path) -> None:
    nowhere = "ws://127.0.0.1:9/devtools/browser/nothing-listens-here"
    result = cdpnb.campaign([nowhere], ["runtime.evaluate"], 1, out=tmp_path, retries=1,
                            progress=False)
    assert result.run is not None and (result.run.ran, result.run.failed) == (0, 1)
    failures = result.failures()
    assert failures[["backend", "scenario", "repeat", "attempts"]].values.tolist() == [
        [nowhere, "runtime.evaluate", 0, 2]]
    assert "127.0.0.1:9" in failures["reason"][0]
    summary = result.summary()
    assert summary.loc[(nowhere, "evaluate"), "errors"] == 1
    assert summary.loc[(nowhere, "evaluate"), "cells"] == 0  # not counted as a failed check
    # a resumed campaign tries a failed cell again (and counts every attempt)
    again = cdpnb.campaign([nowhere], ["runtime.evaluate"], 1, out=tmp_path, retries=0,
                           progress=False)
    assert again.run is not None and again.run.failed == 1
    assert again.failures()["attempts"].tolist() == [3]


def cdpnb_command(*args: str, columns: int = 80) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": str(columns),
           # a scheduler that is not there is given up on after 3 s, not Dask's 30
           "DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT": "3s"}
    return subprocess.run([sys.executable, "-m", "cdpnb.cli", *args], capture_output=True,
                          text=True, timeout=240, cwd=ROOT, env=env)


@pytest.mark.browser
def test_cli_campaign_prints_statistics_that_fit_and_json(tmp_path: Path) -> None:
    args = ["campaign", "--backends", "headless-shell,node", "--scenarios",
            "latency.command_rtt", "--repeats", "3", "--out", str(tmp_path),
            "--compare", "headless-shell,node"]
    done = cdpnb_command(*args)
    assert done.returncode == 0, done.stderr
    # (a token wider than the terminal, a long path, is printed whole on its own line)
    assert all(len(line) <= 80 or " " not in line.strip()
               for line in done.stdout.splitlines()), done.stdout
    assert "6 cells ran in" in done.stdout and "command RTT ms" in done.stdout
    assert "100% (44–100)" in done.stdout  # 3 of 3, Wilson
    assert "→ too few runs to tell: 3 and 3 runs" in " ".join(done.stdout.split())
    again = cdpnb_command(*args, "--json")
    data = json.loads(again.stdout)
    assert again.returncode == 0 and data["run"]["skipped"] == 6 and data["run"]["ran"] == 0
    assert {r["backend"] for r in data["summary"]} == {"headless-shell", "node"}
    assert data["compare"][0]["n_a"] == 3 and data["exit_status"] == 0


def test_cli_campaign_usage_errors_and_failures(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    for bad, why in ((["--scenarios", "dialog.nope"], "matches no probe check"),
                     (["--repeats", "0"], "--repeats must be at least 1"),
                     (["--backends", f"replay:{ROOT}/datasets/probes/chromium.native.jsonl.gz"],
                      "measures live backends"),
                     (["--compare", "chromium"], "two backends: A,B"),
                     (["--scheduler", "tcp://127.0.0.1:9", "--concurrency", "2"],
                      "--concurrency is for a campaign without --scheduler")):
        with pytest.raises(SystemExit) as exited:
            cli.main(["campaign", "--out", str(tmp_path), *bad])
        assert exited.value.code == 2 and why in capsys.readouterr().err, bad
    assert not any(tmp_path.iterdir())
    done = cdpnb_command("campaign", "--out", str(tmp_path / "x"), "--backends",
                         "ws://127.0.0.1:9/devtools/browser/x", "--scenarios",
                         "runtime.evaluate", "--retries", "0")
    assert done.returncode == 1 and "Cells that failed every attempt" in done.stdout
    done = cdpnb_command("campaign", "--out", str(tmp_path / "y"), "--backends", "node",
                         "--scenarios", "runtime.evaluate", "--scheduler", "tcp://127.0.0.1:9")
    assert done.returncode == 1 and "cannot run" in done.stderr
