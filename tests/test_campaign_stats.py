"""A campaign's statistics, its cells and its file layout, without a browser.

The statistics are checked against published values and against the textbook
relations between them (Cliff's delta and Mann–Whitney's U, the bootstrap interval
of a median and its normal approximation), not against their own output.
"""

from __future__ import annotations

import math
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pytest
from scipy.stats import mannwhitneyu

import cdpnb
from cdpnb.campaign import stats
from cdpnb.campaign.cells import Cell, grid, resolve_backends, resolve_scenarios
from cdpnb.campaign.layout import CHECKS_SCHEMA, Layout
from cdpnb.probes import CHECKS, Check


def test_wilson_interval_matches_published_values() -> None:
    # Newcombe (1998), Table I: 0/10 and 5/10 with the score method
    assert stats.wilson_interval(0, 10) == pytest.approx((0.0, 0.2775), abs=1e-4)
    assert stats.wilson_interval(5, 10) == pytest.approx((0.2366, 0.7634), abs=1e-4)
    assert stats.wilson_interval(10, 10) == pytest.approx((0.7225, 1.0), abs=1e-4)
    assert all(math.isnan(x) for x in stats.wilson_interval(0, 0))


def test_bootstrap_interval_of_a_median_covers_the_true_median_95_percent_of_the_time(
        ) -> None:
    rng = np.random.default_rng(7)
    true_median = math.exp(1.5)  # of a lognormal(1.5, 0.5): latencies are skewed like this
    covered = 0
    for seed in range(200):
        low, high = stats.bootstrap_interval(rng.lognormal(1.5, 0.5, 60), seed=seed)
        covered += low <= true_median <= high
    assert 0.88 <= covered / 200 <= 0.99
    values = rng.normal(100.0, 10.0, 50)
    assert stats.bootstrap_interval(values, seed=1) == stats.bootstrap_interval(values, seed=1)


def test_bootstrap_interval_of_one_value_or_none() -> None:
    assert stats.bootstrap_interval([3.5]) == (3.5, 3.5)
    assert all(math.isnan(x) for x in stats.bootstrap_interval([]))
    p95_low, p95_high = stats.bootstrap_interval(np.arange(1.0, 101.0), stats.p95)
    assert 85 < p95_low < 95.05 < p95_high <= 100


def test_permutation_p_is_exact_for_small_groups() -> None:
    # 3 and 3 fully apart, by their means: 2 of the C(6,3) = 20 splits are as extreme
    def mean(values: np.ndarray) -> np.ndarray:
        return np.asarray(values.mean(axis=-1), dtype=np.float64)

    assert stats.permutation_p([1, 2, 3], [10, 11, 12], mean) == pytest.approx(2 / 20)
    assert stats.smallest_p(3, 3) == pytest.approx(0.1)
    # by their medians ({1,2,x} against {y,11,12} all differ by 9): 4 of 20
    assert stats.permutation_p([1, 2, 3], [10, 11, 12]) == pytest.approx(4 / 20)
    # the same values in both groups: every split is at least as extreme as 0
    assert stats.permutation_p([5, 6, 7], [7, 6, 5]) == 1.0


def test_permutation_p_sampled_for_large_groups_finds_a_shift() -> None:
    rng = np.random.default_rng(3)
    a, b = rng.normal(10, 1, 40), rng.normal(11.5, 1, 40)
    assert stats.permutation_p(a, b) < 0.001
    assert stats.permutation_p(a, rng.normal(10, 1, 40)) > 0.05


def test_cliffs_delta_is_rank_biserial_of_mann_whitney() -> None:
    rng = np.random.default_rng(5)
    a, b = rng.exponential(2.0, 25), rng.exponential(3.0, 30)
    u = mannwhitneyu(b, a).statistic
    assert stats.cliffs_delta(a, b) == pytest.approx(2 * u / (len(a) * len(b)) - 1)
    assert stats.cliffs_delta([1, 2], [3, 4]) == 1.0
    assert stats.cliffs_delta([3, 4], [1, 2]) == -1.0


def test_compare_samples_tells_a_real_difference_from_noise() -> None:
    rng = np.random.default_rng(11)
    base = rng.lognormal(np.log(5.0), 0.4, 30)  # ms, spread like run-to-run latencies
    slower = rng.lognormal(np.log(9.0), 0.4, 30)
    same = rng.lognormal(np.log(5.0), 0.4, 30)
    found = stats.compare_samples(base, slower, labels=("chromium", "headless-shell"))
    assert found.beyond_noise and found.effect == "large"
    assert found.difference_low > 0 and found.p_permutation < 0.01
    # the direction said in names (b − a), then the conclusion (tests/test_stats_verdicts.py)
    assert found.verdict.startswith("headless-shell − chromium: median +")
    assert found.verdict.endswith("→ chromium faster (×2.19, Cliff's δ +0.80, large)")
    noise = stats.compare_samples(base, same)
    assert not noise.beyond_noise
    assert noise.verdict.startswith("b − a: median +")
    assert noise.difference_low < 0 < noise.difference_high
    # ... and which half of the rule it failed
    assert noise.verdict.endswith("→ no difference beyond the run-to-run noise: p=0.182 is "
                                  "not < 0.05 and the 95% CI includes 0")
    assert stats.plain(100.0) == "100" and stats.plain(1234.5) == "1234"  # not 1e+02
    few = stats.compare_samples([1.0, 1.1], [5.0, 5.2])
    assert not few.beyond_noise and "→ too few runs to tell: 2 and 2 runs" in few.verdict
    empty = stats.compare_samples([], [1.0])
    assert "no measured runs on a" in empty.verdict


def test_scenarios_resolve_by_name_glob_or_check() -> None:
    names = [c.name for c in resolve_scenarios(["dialog.*.cross_site", "runtime.evaluate"])]
    assert names == ["dialog.alert.cross_site", "dialog.confirm.cross_site",
                     "dialog.prompt.cross_site", "runtime.evaluate"]
    # the names from before the checks stopped requiring OOPIFs find what they became
    assert [c.name for c in resolve_scenarios(["dialog.*.oopif", "frames.oopif_stitched"])
            ] == [*names[:3], "frames.complete"]
    assert resolve_scenarios(None) == list(CHECKS)
    mine = Check("mine.step", "my capability", "a check of my own", CHECKS[0].driver)
    assert resolve_scenarios([mine, "runtime.evaluate"])[0] is mine
    with pytest.raises(ValueError, match="'dialog.nope' matches no probe check"):
        resolve_scenarios(["dialog.nope"])
    clash = Check("runtime.evaluate", "x", "y", CHECKS[1].driver)
    with pytest.raises(ValueError, match="two different scenarios"):
        resolve_scenarios(["runtime.evaluate", clash])


def test_backends_are_live_ones_only() -> None:
    specs = resolve_backends(["chromium", "ws://127.0.0.1:9/devtools/browser/x", "chromium"])
    assert [s.label for s in specs] == ["chromium", "ws://127.0.0.1:9/devtools/browser/x"]
    with pytest.raises(ValueError, match="a campaign measures live backends"):
        resolve_backends(["replay:datasets/probes/chromium.native.jsonl.gz"])
    with pytest.raises(ValueError, match="unknown backend"):
        resolve_backends(["firefox-nightly"])


def test_bad_arguments_are_refused_before_anything_starts(tmp_path: Path) -> None:
    for bad in ({"repeats": 0}, {"repeats": True}, {"retries": -1}, {"concurrency": 0},
                {"keep_browsers": -2}):
        with pytest.raises(ValueError, match=next(iter(bad))):
            cdpnb.campaign("node", "runtime.evaluate", out=tmp_path, **bad)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="got LocalCluster"):
        from distributed import LocalCluster

        cdpnb.campaign("node", "runtime.evaluate", out=tmp_path,
                       client=LocalCluster.__new__(LocalCluster))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="concurrency is for a campaign without a cluster"):
        cdpnb.campaign("node", "runtime.evaluate", out=tmp_path, client="tcp://127.0.0.1:9",
                       concurrency=2)
    assert not any(tmp_path.iterdir())


def test_cells_go_repeat_by_repeat() -> None:
    specs = resolve_backends(["chromium", "node"])
    tasks = grid(specs, resolve_scenarios(["runtime.evaluate", "latency.command_rtt"]), 2)
    assert [t.cell for t in tasks[:4]] == [
        Cell("chromium", "runtime.evaluate", 0), Cell("chromium", "latency.command_rtt", 0),
        Cell("node", "runtime.evaluate", 0), Cell("node", "latency.command_rtt", 0)]
    assert {t.cell.repeat for t in tasks[4:]} == {1}
    assert all(t.custom_check is None and t.check.name == t.cell.scenario for t in tasks)


def test_layout_encodes_a_url_backend_and_reads_it_back(tmp_path: Path) -> None:
    layout = Layout(tmp_path)
    url = "ws://127.0.0.1:9222/devtools/browser/a b"
    cells = [Cell(url, "runtime.evaluate", 3), Cell("chromium+playwright", "bridge.https", 0)]
    for cell in cells:
        layout.write(layout.checks_file(cell), pa.Table.from_pylist(
            [{"repeat": cell.repeat, "status": "ok"}], schema=CHECKS_SCHEMA))
    assert layout.checks_file(cells[0]).parent.parent.name == (
        "backend=ws%3A%2F%2F127.0.0.1%3A9222%2Fdevtools%2Fbrowser%2Fa%20b")
    assert layout.checks_file(cells[1]).parent.parent.name == "backend=chromium+playwright"
    assert layout.finished() == set(cells)
    assert not list(tmp_path.rglob("*.tmp"))  # written whole, nothing left behind
    # DuckDB reads the folder names back as the backend and scenario, decoded
    rows = duckdb.sql(f"SELECT backend, scenario, repeat FROM '{tmp_path}/checks/**/*.parquet'"
                      " ORDER BY repeat").fetchall()
    assert rows == [("chromium+playwright", "bridge.https", 0), (url, "runtime.evaluate", 3)]
    loaded = cdpnb.campaign.load(tmp_path)
    assert sorted(loaded["backend"].astype(str)) == sorted(["chromium+playwright", url])


def test_attempts_are_counted_before_they_run(tmp_path: Path) -> None:
    layout = Layout(tmp_path)
    cell = Cell("chromium", "runtime.evaluate", 0)
    assert layout.attempts(cell) == 0
    assert layout.start_attempt(cell) == 1 and layout.start_attempt(cell) == 2
    assert layout.attempts(cell) == 2 and layout.attempts_file(cell).name.startswith(".")


def test_html_repr_escapes_what_it_shows(tmp_path: Path) -> None:
    layout = Layout(tmp_path)
    cell = Cell("<b>backend</b>", "mine.<script>", 0)
    layout.write(layout.checks_file(cell), pa.Table.from_pylist([{
        "repeat": 0, "capability": "<img src=x onerror=alert(1)>", "status": "ok",
        "value_ms": 2.0}], schema=CHECKS_SCHEMA))
    html = cdpnb.campaign.CampaignResult(tmp_path)._repr_html_()
    assert "<img" not in html and "<b>backend" not in html
    assert "&lt;img src=x onerror=alert(1)&gt;" in html and "&lt;b&gt;backend" in html


def test_an_empty_campaign_folder_loads_as_empty_typed_tables(tmp_path: Path) -> None:
    checks = cdpnb.campaign.load(tmp_path)
    assert checks.empty and {"backend", "scenario", "repeat", "status", "value_ms"} <= set(
        checks.columns)
    assert cdpnb.campaign.load(tmp_path, "latencies").empty
    with pytest.raises(ValueError, match="'checks' or 'latencies'"):
        cdpnb.campaign.load(tmp_path, "samples")  # type: ignore[arg-type]
    with pytest.raises(FileNotFoundError, match="no campaign at"):
        cdpnb.campaign.load(tmp_path / "missing")
