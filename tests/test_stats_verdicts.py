"""Campaign verdicts explain themselves (issue 25, item 9): each names its direction
(b − a) and figures, then the conclusion or which half of the rule failed; the rule is
said once under them; figures never print with an exponent; a call's statistics are
about the cells it asked for, not an earlier run's in the same folder. The wording
cases run on exact samples; the CLI is driven for real once with two backends."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest

from cdpnb.campaign import CampaignResult, RunSummary, stats
from cdpnb.campaign.cells import Cell
from cdpnb.campaign.layout import CHECKS_SCHEMA, Layout

ROOT = Path(__file__).resolve().parent.parent
NAMES = ("chromium", "headless-shell")

# Samples (ms) found to fall in each branch of the rule (seed 0, as compare_samples')
A_FASTER = ([56.0, 54.0, 33.0, 63.0, 41.0, 34.0, 36.0, 44.0],
            [65.0, 85.0, 50.0, 83.0, 96.0, 79.0, 73.0, 86.0])
P_ONLY = ([25.0, 42.0, 70.0, 30.0, 32.0, 58.0, 65.0, 40.0],
          [63.0, 84.0, 61.0, 76.0, 47.0, 58.0, 59.0, 78.0])
CI_ONLY = ([29.0, 48.0, 56.0, 49.0, 58.0, 62.0, 57.0], [30.0, 53.0, 18.0, 30.0, 28.0, 31.0, 18.0])
NEITHER = ([62.0, 55.0, 30.0, 64.0, 57.0, 42.0], [67.0, 66.0, 62.0, 70.0, 51.0, 59.0])


def verdict(samples: tuple[list[float], list[float]], **options: float) -> stats.Comparison:
    return stats.compare_samples(*samples, labels=NAMES, **options)


def test_a_difference_names_its_direction_figures_and_who_is_faster() -> None:
    found = verdict(A_FASTER)
    assert found.beyond_noise and (found.a, found.b) == NAMES
    assert found.verdict == (
        "headless-shell − chromium: median +38.5 ms (95% CI +18.0 to +49.0 ms), "
        "permutation p=0.00311 → chromium faster (×1.91, Cliff's δ +0.91, large)")
    # the other way round: the same figures, negated, and the same conclusion
    turned = stats.compare_samples(*reversed(A_FASTER), labels=tuple(reversed(NAMES)))
    assert turned.verdict.startswith("chromium − headless-shell: median -38.5 ms (95% CI ")
    assert turned.verdict.endswith("→ chromium faster (×1.91, Cliff's δ -0.91, large)")
    assert turned.difference_ms == -found.difference_ms


def test_no_difference_says_which_half_of_the_rule_failed() -> None:
    p_only, ci_only, neither = verdict(P_ONLY), verdict(CI_ONLY), verdict(NEITHER)
    assert not (p_only.beyond_noise or ci_only.beyond_noise or neither.beyond_noise)
    assert p_only.p_permutation < 0.05 and p_only.difference_low < 0 < p_only.difference_high
    assert p_only.verdict == (
        "headless-shell − chromium: median +21.0 ms (95% CI -2.00 to +41.0 ms), "
        "permutation p=0.0359 → inconclusive: p=0.0359 < 0.05 but the 95% CI includes 0")
    assert ci_only.p_permutation >= 0.05 and ci_only.difference_high < 0
    assert ci_only.verdict == (
        "headless-shell − chromium: median -26.0 ms (95% CI -39.0 to -17.0 ms), "
        "permutation p=0.0583 → inconclusive: the 95% CI excludes 0 but p=0.0583 is not "
        "< 0.05")
    assert neither.verdict.endswith(
        "→ no difference beyond the run-to-run noise: p=0.171 is not < 0.05 and the 95% "
        "CI includes 0")
    # a wider interval (99%) at the same p: the level is named where it is used
    strict = verdict(A_FASTER, confidence=0.99)
    assert "(99% CI " in strict.verdict and "p < 0.01" in stats.verdict_rule(0.99)


def test_too_few_runs_and_nothing_to_compare() -> None:
    few = stats.compare_samples([1.0, 1.1], [5.0, 5.2], labels=NAMES)
    assert few.verdict == (
        "headless-shell − chromium: median +4.05 ms (95% CI +3.90 to +4.20 ms), "
        "permutation p=0.333 → too few runs to tell: 2 and 2 runs cannot give p < 0.05 "
        "(the smallest possible is 0.33)")
    empty = stats.compare_samples([], [1.0], labels=NAMES)
    assert empty.verdict == "nothing to compare: no measured runs on chromium"
    assert (empty.a, empty.b, empty.n_a, empty.n_b) == ("chromium", "headless-shell", 0, 1)


def test_the_rule_in_words_and_bad_arguments() -> None:
    assert stats.verdict_rule() == (
        "A difference is beyond the run-to-run noise when both permutation p < 0.05 and "
        "the 95% CI of the difference of medians excludes 0.")
    for bad in (0, 1, 1.5, True, "0.95"):
        with pytest.raises(ValueError, match="confidence must be a number between 0 and 1"):
            stats.compare_samples([1.0], [2.0], confidence=bad)  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="confidence"):
            stats.verdict_rule(bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="labels must be two names"):
        stats.compare_samples([1.0], [2.0], labels=("only",))


def test_figures_have_three_significant_digits_and_no_exponent() -> None:
    cases = [(100.0, "100"), (99.95, "100"), (999.5, "1000"), (1234.5, "1234"),
             (16.2, "16.2"), (3.1, "3.10"), (-1.618, "-1.62"), (0.5, "0.500"), (0.0, "0"),
             (-0.0, "0"), (math.nan, "—"), (math.inf, "—")]
    assert [(value, stats.plain(value)) for value, _ in cases] == cases
    assert stats.plain(35.2, signed=True) == "+35.2"
    assert stats.plain(-35.2, signed=True) == "-35.2"
    assert "e+" not in stats.plain(123456.0) and "e" not in stats.plain(0.0012)


# -- a call's statistics are about its cells --------------------------------------------


def write_cells(root: Path, backend: str, repeats: range, values: list[float | None],
                status: str = "ok") -> None:
    layout = Layout(root)
    layout.create()
    for repeat, value in zip(repeats, values, strict=True):
        cell = Cell(backend, "latency.command_rtt", repeat)
        path = layout.failed_file(cell) if status == "error" else layout.checks_file(cell)
        layout.write(path, pa.Table.from_pylist([{
            "repeat": repeat, "capability": "command RTT ms", "status": status,
            "value_ms": value, "attempts": 1, "detail": "it broke" if status == "error" else ""}],
            schema=CHECKS_SCHEMA))


def this_call(root: Path, backends: tuple[str, ...], repeats: int) -> CampaignResult:
    cells = len(backends) * repeats
    return CampaignResult(root, RunSummary(
        "run-2", cells, 0, cells, 0, 0, 0.1, 0, "local", backends=backends,
        scenarios=("latency.command_rtt",), repeats=repeats))


def test_a_calls_statistics_leave_out_an_earlier_runs_cells(tmp_path: Path) -> None:
    # an earlier run: chromium (one cell failed) and 5 repeats of node
    write_cells(tmp_path, "chromium", range(2), [1.0, 1.2])
    write_cells(tmp_path, "chromium", range(2, 3), [None], status="error")
    write_cells(tmp_path, "node", range(5), [100.0, 100.0, 100.0, 100.0, 100.0])
    result = this_call(tmp_path, ("node",), 3)  # this call: node, 3 repeats
    assert result.other_cells() == 3 + 2
    summary = result.summary()
    assert summary.index.tolist() == [("node", "command RTT ms")]
    assert summary.loc[("node", "command RTT ms"), "cells"] == 3
    every = result.summary(all_cells=True)
    assert every.index.tolist() == [("chromium", "command RTT ms"), ("node", "command RTT ms")]
    assert every.loc[("node", "command RTT ms"), "cells"] == 5
    assert result.failures().empty and len(result.failures(all_cells=True)) == 1
    with pytest.raises(ValueError, match="no cells of backend 'chromium' among the cells this "
                                         r"call asked for \(all_cells=True adds the 5 cells"):
        result.compare("chromium", "node")
    assert "→" in result.compare("chromium", "node", all_cells=True).iloc[0]["verdict"]
    with pytest.raises(TypeError, match="all_cells must be True or False"):
        result.summary(all_cells="yes")  # type: ignore[arg-type]
    # opened from the folder: about every cell
    opened = CampaignResult(tmp_path)
    assert opened.other_cells() == 0 and len(opened.summary()) == 2
    # the notebook view says what it leaves out, with figures as the CLI prints them
    html = result._repr_html_()
    assert "5 cells of earlier runs in this folder" in html and "summary(all_cells=True)" in html
    assert "100 (100–100)" in html and "e+02" not in html
    # the plot: this call's backend only
    figure = result.plot()
    ticks = [t.get_text() for t in figure.axes[0].get_xticklabels()]
    assert ticks == ["node"]


@pytest.mark.browser
def test_cli_campaign_verdicts_explain_themselves_at_80_columns(tmp_path: Path) -> None:
    write_cells(tmp_path, "chromium", range(2), [1.0, 1.2])  # an earlier run's
    env = {**os.environ, "COLUMNS": "80"}

    def campaign(*extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "cdpnb.cli", "campaign", "--backends", "headless-shell,node",
             "--scenarios", "latency.command_rtt", "--repeats", "4", "--out", str(tmp_path),
             *extra], capture_output=True, text=True, timeout=300, env=env, cwd=ROOT)

    done = campaign("--compare", "headless-shell,node")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert all(len(line) <= 80 or " " not in line.strip() for line in lines), done.stdout
    rows = [line.split() for line in lines]
    assert [row[0] for row in rows if row[:1] in (["chromium"], ["headless-shell"], ["node"])
            ] == ["headless-shell", "node"]  # the earlier run's chromium is not summarised
    text = " ".join(done.stdout.split())
    assert ("(2 cells of earlier runs in " in text
            and "not in this summary: --all adds them)" in text)
    assert "command RTT ms node − headless-shell: median " in text
    assert "permutation p=" in text and " → " in text
    assert text.count("A difference is beyond the run-to-run noise when both permutation "
                      "p < 0.05 and the 95% CI of the difference of medians excludes 0.") == 1
    assert "e+" not in done.stdout and "e-0" not in done.stdout

    # --all: every cell in --out, as JSON (nothing runs again)
    again = campaign("--all", "--json", "--compare", "headless-shell,node")
    assert again.returncode == 0, again.stderr
    data = json.loads(again.stdout)
    assert data["run"]["ran"] == 0 and data["run"]["skipped"] == 8
    assert data["all_cells"] is True and data["other_cells"] == 0
    assert {row["backend"] for row in data["summary"]} == {"chromium", "headless-shell", "node"}
    compared = data["compare"][0]
    assert (compared["a"], compared["b"], compared["n_a"]) == ("headless-shell", "node", 4)
    assert compared["verdict"].startswith("node − headless-shell: median ")
    assert data["compare_rule"].startswith("A difference is beyond the run-to-run noise")
    scoped = json.loads(campaign("--json").stdout)
    assert scoped["all_cells"] is False and scoped["other_cells"] == 2
    assert scoped["run"]["backends"] == ["headless-shell", "node"]

    # a backend only an earlier run has: say so, and how to include it
    earlier = campaign("--compare", "chromium,node")
    assert earlier.returncode == 1
    assert ("no cells of backend 'chromium' among the cells this call asks for (--all adds "
            "the 2 cells of earlier runs in --out)") in " ".join(earlier.stderr.split())
