"""The named races of ``cdpnb.proxy.races``, each run against real Chromium with the
real Playwright client: every run lands on an outcome its scenario names (never
``other``), with its recording; which outcome, and how often, is measured, not asserted
(a race may go either way on a busy machine)."""

from __future__ import annotations

from pathlib import Path

import pytest

import cdpnb
from cdpnb.proxy import RACES, race


@pytest.mark.browser
@pytest.mark.parametrize("name", sorted(RACES))
async def test_each_race_lands_on_a_named_outcome(name: str, tmp_path: Path) -> None:
    result = await race(name, runs=2, backend="headless-shell", record=tmp_path)
    table = result.table()
    assert len(table) == 2
    assert set(table["outcome"]) <= {*RACES[name].outcomes, "client error", "client stalled"}
    for path in table["trace"]:
        trace = cdpnb.Trace.load(path)
        assert trace.header["meta"]["proxy"]["faults"] == list(RACES[name].faults)
    rates = result.rates()
    assert rates["count"].sum() == 2 and ((rates["low"] <= rates["rate"])
                                          & (rates["rate"] <= rates["high"])).all()


async def test_a_race_is_named_and_its_runs_counted() -> None:
    with pytest.raises(ValueError, match="no race named 'nope'"):
        await race("nope")
    with pytest.raises(ValueError, match="runs must be a whole number"):
        await race("auto-dismiss-vs-handler", runs=0)


@pytest.mark.browser
async def test_races_run_as_dask_tasks_into_one_table_of_rates(tmp_path: Path) -> None:
    """Clients × faults × backends on a cluster: each run a task that launches its own
    browser; the table has every race's outcomes with Wilson intervals."""
    import asyncio

    from distributed import Client, LocalCluster

    from cdpnb.proxy.races import race_grid

    def start() -> tuple[LocalCluster, Client]:
        cluster = LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                               dashboard_address=None, host="127.0.0.1")
        return cluster, Client(cluster)

    cluster, client = await asyncio.to_thread(start)
    try:
        table = await race_grid(["auto-dismiss-vs-handler", "dialog-event-twice"],
                                ("headless-shell",), runs=2, record=tmp_path, client=client)
    finally:
        await asyncio.to_thread(client.close)
        await asyncio.to_thread(cluster.close)
    assert set(table["race"]) == {"auto-dismiss-vs-handler", "dialog-event-twice"}
    assert (table.groupby("race")["count"].sum() == 2).all()
    assert set(table["backend"]) == {"headless-shell"}
    assert len(list((tmp_path / "headless-shell").glob("*.jsonl"))) == 4
