"""``compare`` tells runs apart (issue 25, item 8): columns named by file (the nearest
folder that tells two equal names apart added), ``--json`` keyed by the paths as given,
and a differences-only view, through ``cdpnb.compare`` and through ``cdpnb compare`` run
as a user runs it at 80 columns."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import pytest
import zstandard

import cdpnb
from cdpnb.trace import Trace, compare

ROOT = Path(__file__).resolve().parent.parent
PROBES = ROOT / "datasets" / "probes"
CHROMIUM = PROBES / "chromium.native.jsonl.gz"
PLAYWRIGHT = PROBES / "chromium+playwright.native.jsonl.gz"


def cdpnb_command(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "80"}
    return subprocess.run([sys.executable, "-m", "cdpnb.cli", *args], capture_output=True,
                          text=True, timeout=120, env=env, cwd=cwd)


def assert_fits(lines: list[str], columns: int = 80) -> None:
    too_wide = [line for line in lines if len(line) > columns]
    assert too_wide == [], f"{len(too_wide)} lines wider than {columns}: {too_wide[:3]}"


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One recording in the three file forms and in two folders of equal file names:
    ``monday/chromium.native.jsonl.gz``, ``tuesday/chromium.native.jsonl.gz``,
    ``x/same/run.jsonl``, ``y/same/run.jsonl.zst``, ``run2.jsonl.gz``, and a campaign's
    ``backend=B/scenario=S/r00000.jsonl.gz`` of two backends."""
    root = tmp_path_factory.mktemp("runs")
    for folder in ("monday", "tuesday", "backend=chromium/scenario=s",
                   "backend=headless-shell/scenario=s", "a/x", "a/y", "b/x"):
        (root / folder).mkdir(parents=True)
        name = CHROMIUM.name if folder.endswith("day") else "r00000.jsonl.gz"
        shutil.copy(CHROMIUM, root / folder / name)
    shutil.copy(CHROMIUM, root / "run2.jsonl.gz")
    plain = gzip.decompress(CHROMIUM.read_bytes())
    for folder in ("x/same", "y/same"):
        (root / folder).mkdir(parents=True)
    (root / "x/same/run.jsonl").write_bytes(plain)
    (root / "y/same/run.jsonl.zst").write_bytes(zstandard.ZstdCompressor().compress(plain))
    return root


def test_loaded_traces_are_named_by_file_with_folders_only_where_names_clash(
        runs: Path) -> None:
    monday, tuesday = (Trace.load(runs / day / CHROMIUM.name) for day in ("monday", "tuesday"))
    run2 = Trace.load(runs / "run2.jsonl.gz")
    # one backend, one browser: the file names tell them apart, and nothing else would
    assert compare(Trace.load(CHROMIUM), run2).columns.tolist() == ["chromium.native", "run2"]
    assert compare(monday, tuesday, run2).columns.tolist() == [
        "chromium.native (monday)", "chromium.native (tuesday)", "run2"]
    # the suffixes of every trace form come off; where the parents are equal, the nearest
    # folder that differs (as r00000 of two backends in a campaign's folders)
    x, y = Trace.load(runs / "x/same/run.jsonl"), Trace.load(runs / "y/same/run.jsonl.zst")
    assert compare(x, y, run2).columns.tolist() == ["run (x)", "run (y)", "run2"]
    cells = [Trace.load(runs / f"backend={kind}/scenario=s/r00000.jsonl.gz")
             for kind in ("chromium", "headless-shell")]
    assert compare(*cells).columns.tolist() == [
        "r00000 (backend=chromium)", "r00000 (backend=headless-shell)"]
    # no one folder tells all three apart: the folders up to the one that does
    three = [Trace.load(runs / folder / "r00000.jsonl.gz") for folder in ("a/x", "a/y", "b/x")]
    assert compare(*three).columns.tolist() == [
        "r00000 (a/x)", "r00000 (a/y)", "r00000 (b/x)"]
    # the same file twice: no folder tells it apart from itself
    assert compare(monday, monday, tuesday).columns.tolist() == [
        "chromium.native (monday)", "chromium.native (monday) (2)",
        "chromium.native (tuesday)"]
    # what each column is stays in the table: its backend and browser
    table = compare(monday, Trace.load(PLAYWRIGHT))
    assert table.loc[("trace", "backend")].tolist() == ["chromium", "chromium+playwright"]
    assert table.loc[("trace", "browser")].tolist() == ["Chrome/156.0.8078.114"] * 2
    # labels given still name the columns
    assert compare(monday, tuesday, labels=["before", "after"]).columns.tolist() == [
        "before", "after"]
    with pytest.raises(TypeError, match="labels must be a sequence of names, got the str"):
        compare(monday, tuesday, labels="ab")


def test_traces_made_here_are_named_by_backend_then_start_time() -> None:
    def made(kind: str, started_at: float) -> Trace:
        return Trace({"backend": {"kind": kind}, "started_at": started_at}, [])

    at = datetime(2026, 3, 1, 14, 3, 7).timestamp()
    assert compare(made("chromium", at), made("firefox", at)).columns.tolist() == [
        "chromium", "firefox"]
    assert compare(made("chromium", at), made("chromium", at + 65)).columns.tolist() == [
        "chromium (14:03:07)", "chromium (14:04:12)"]
    # within one second: the date and milliseconds; alike in every way: a number
    assert compare(made("chromium", at), made("chromium", at + 0.25)).columns.tolist() == [
        "chromium (2026-03-01 14:03:07.000)", "chromium (2026-03-01 14:03:07.250)"]
    assert compare(made("chromium", at), made("chromium", at)).columns.tolist() == [
        "chromium", "chromium (2)"]
    assert compare(Trace({}, []), Trace({}, [])).columns.tolist() == ["trace", "trace (2)"]


def test_only_differences_keeps_the_rows_that_differ() -> None:
    native, playwright = Trace.load(CHROMIUM), Trace.load(PLAYWRIGHT)
    full = compare(native, playwright)
    differing = compare(native, playwright, only_differences=True)
    assert 0 < len(differing) < len(full)
    assert ("dialogs", 'alert "probe": closed_by') in differing.index
    assert ("dialogs", "opened") not in differing.index  # 33 in both
    for key, row in full.iterrows():  # exactly the rows whose values are not all equal
        assert (key in differing.index) == (row.iloc[0] != row.iloc[1]), key
    # NA equals NA: a median both lack is no difference, one lacks and one has is
    both_na = Trace({}, []), Trace({}, [])
    assert compare(*both_na, only_differences=True).empty
    none = compare(native, native, only_differences=True)
    assert none.empty and none.columns.tolist() == ["chromium.native", "chromium.native (2)"]
    with pytest.raises(TypeError, match="only_differences must be True or False"):
        compare(native, playwright, only_differences="yes")  # type: ignore[arg-type]
    assert cdpnb.compare is compare


def test_cli_compare_names_columns_by_file_and_fits_80_columns(runs: Path) -> None:
    done = cdpnb_command("compare", "monday/chromium.native.jsonl.gz",
                         "tuesday/chromium.native.jsonl.gz", cwd=runs)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert_fits(lines)
    # side by side, each name broken before its folder where 80 columns are too few
    assert lines[0].split() == ["chromium.native", "chromium.native"]
    assert lines[1].split() == ["item", "(monday)", "(tuesday)"]
    assert ["backend", "chromium", "chromium"] in [line.split() for line in lines]
    # the differences only: none between two copies of one run
    same = cdpnb_command("compare", "-d", "monday/chromium.native.jsonl.gz",
                         "tuesday/chromium.native.jsonl.gz", cwd=runs)
    assert same.returncode == 0, same.stderr
    assert same.stdout.strip() == "no differences: the 2 traces agree on every row"


def test_cli_compare_differences_at_80_columns_and_json_keyed_by_path() -> None:
    native, playwright = str(CHROMIUM.relative_to(ROOT)), str(PLAYWRIGHT.relative_to(ROOT))
    done = cdpnb_command("compare", "--differences", native, playwright)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert_fits(lines)
    header = next(line for line in lines if line.startswith("item"))
    assert header.split() == ["item", "chromium.native", "chromium+playwright.native"]
    rows = [line.split() for line in lines]
    assert ["backend", "chromium", "chromium+playwright"] in rows
    assert ['alert', '"probe":', 'closed_by', 'agent', 'remote'] in rows
    assert not any(row[:1] == ["opened"] for row in rows)  # 33 and 33: left out
    assert not any(row[:1] == ["browser"] for row in rows)  # one browser build

    as_json = cdpnb_command("compare", "-d", "--json", native, playwright)
    assert as_json.returncode == 0, as_json.stderr
    data = json.loads(as_json.stdout)
    assert data["traces"] == [native, playwright]  # as given
    assert data["labels"] == ["chromium.native", "chromium+playwright.native"]
    assert data["only_differences"] is True
    closed = next(r for r in data["rows"] if r["item"] == 'alert "probe": closed_by')
    assert closed == {"section": "dialogs", "item": 'alert "probe": closed_by',
                      "values": {native: "agent", playwright: "remote"}}
    assert all(len(set(map(json.dumps, r["values"].values()))) > 1 for r in data["rows"])
    every = json.loads(cdpnb_command("compare", "--json", native, playwright).stdout)
    assert every["only_differences"] is False and len(every["rows"]) > len(data["rows"])

    # one path twice would key two columns alike: a usage error
    twice = cdpnb_command("compare", native, native)
    assert twice.returncode == 2 and f"{native} is given twice" in twice.stderr
