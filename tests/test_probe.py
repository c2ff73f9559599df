"""The probe on every backend kind, replayed probes, the CLI, and the README's two commands."""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
import websockets

import cdpnb
from cdpnb import cli
from cdpnb.backends import LAUNCHABLE as ALL_KINDS
from cdpnb.cli import probing
from cdpnb.probes import CHECKS, ProbeResult, ScenarioServer, parse_backend, recorded_probes
from cdpnb.trace import Trace

ROOT = Path(__file__).resolve().parent.parent
#: The kinds whose probe outcomes are known (cdpnb/probes/expected.py). The kinds of
#: issue 17 (chromium+puppeteer, lightpanda, chromium+bidi, firefox) join once the
#: probe checks capabilities across engines and protocols.
LAUNCHABLE = ALL_KINDS[:4]


@pytest.fixture(scope="module")
def probed(tmp_path_factory: pytest.TempPathFactory) -> tuple[ProbeResult, Path]:
    """One probe of every launchable kind, shared by the tests below."""
    out = tmp_path_factory.mktemp("probe")
    return asyncio.run(cdpnb.probe(list(LAUNCHABLE), out=out)), out


def test_every_backend_matches_what_the_measured_facts_predict(
        probed: tuple[ProbeResult, Path]) -> None:
    result, _ = probed
    checks = result.checks()
    assert len(checks) == len(LAUNCHABLE) * len(CHECKS)
    assert checks["expected"].notna().all()
    surprises = result.surprises()
    assert surprises.empty, surprises[["backend", "check", "status", "detail"]].to_string()
    matrix = result.matrix_text()
    assert list(matrix.index) == list(LAUNCHABLE)
    for kind in ("chromium", "headless-shell"):
        row = matrix.loc[kind]
        assert row["dialogs oopif"] == row["dialogs nested"] == row["bridge oopif"] == "✓"
        assert row["sandbox native"].startswith("✗ no dialog: the browser blocked")
        assert 0 < float(row["command RTT ms"]) < 50
    typed = result.matrix()
    assert isinstance(typed["dialogs oopif"].dtype, pd.CategoricalDtype)
    assert list(typed["dialogs oopif"].cat.categories) == ["ok", "partial", "fail"]
    assert typed.loc["chromium+playwright", "dialogs oopif"] == "partial"
    assert typed["command RTT ms"].dtype == "Float64"
    assert 0 < typed.loc["chromium", "command RTT ms"] < 50
    assert pd.isna(typed.loc["node", "dialog seen ms"])
    samples = result.latency_samples()
    rtt = samples[(samples["backend"] == "chromium") & (samples["check"] == "latency.command_rtt")]
    assert len(rtt) == 30 and not rtt["median_only"].any()
    assert result.unreachable() == {}
    assert result.backends["headless-shell"]["version"].startswith("HeadlessChrome/")


def test_playwright_row_native_dialogs_lost_bridge_answers(
        probed: tuple[ProbeResult, Path]) -> None:
    result, _ = probed
    row = result.matrix_text().loc["chromium+playwright"]
    for frame in ("main", "srcdoc", "oopif", "nested"):
        assert row[f"dialogs {frame}"].startswith("partial"), row[f"dialogs {frame}"]
        assert "closed by remote" in row[f"dialogs {frame}"]
    assert row["bridge main"] == row["bridge oopif"] == "✓"
    assert row["frame tree + OOPIF"] == "✓"
    assert row["dialog closed ms"].startswith("✗")


def test_node_row_is_runtime_only_with_reasons(probed: tuple[ProbeResult, Path]) -> None:
    result, _ = probed
    row = result.matrix_text().loc["node"]
    assert row["Runtime"] == "✓" and float(row["command RTT ms"]) > 0
    for capability in ("frame tree + OOPIF", "dialogs main", "bridge oopif", "beforeunload"):
        assert row[capability].startswith("✗") and "no Page domain" in row[capability]
    assert result.backends["node"]["version"].startswith("node.js/")


def test_each_backend_run_left_a_trace_behind(probed: tuple[ProbeResult, Path]) -> None:
    result, out = probed
    for kind in LAUNCHABLE:
        for mode in ("native", "bridge"):
            path = Path(result.traces[kind][mode])
            assert path.parent == out
            trace = Trace.load(path)
            assert trace.complete
            assert trace.header["meta"]["probe"]["mode"] == mode
            outcomes = [r for r in trace.records if getattr(r, "method", "") == "probe.check"]
            assert len(outcomes) == sum(c.mode == mode for c in CHECKS)


def test_a_replayed_probe_finds_what_the_live_one_found(probed: tuple[ProbeResult, Path]
                                                        ) -> None:
    result, out = probed
    specs = recorded_probes(out)
    assert {s.name for s in specs} == {f"replay:{k}" for k in LAUNCHABLE}
    began = time.monotonic()
    replayed = asyncio.run(cdpnb.probe([f"replay:{out / 'chromium+playwright.native.jsonl.gz'}",
                                        f"replay:{out / 'chromium.bridge.jsonl.gz'}"]))
    assert time.monotonic() - began < 30
    def kinds(cells: dict[str, str]) -> dict[str, str]:
        # Replays run as fast as possible: the timings in the reasons differ, the
        # verdicts and the (recorded) latencies do not.
        return {k: v.replace("recorded: ", "") if k.endswith(" ms")
                else v.split(":")[0].split(" ")[0] for k, v in cells.items()}

    live = result.matrix_text()
    again = replayed.matrix_text()
    for kind in ("chromium+playwright", "chromium"):
        assert kinds(again.loc[f"replay:{kind}"].to_dict()) == kinds(live.loc[kind].to_dict())
    assert replayed.backends["replay:chromium"]["replayed"] is True
    assert "(replayed, recorded 20" in replayed.to_markdown()
    assert replayed.surprises().empty
    # the samples recorded live come back from the trace
    samples = replayed.latency_samples()
    rtt = samples[samples["check"] == "latency.command_rtt"]
    assert rtt.groupby("backend", observed=True).size().to_dict() == {
        "replay:chromium+playwright": 30, "replay:chromium": 30}


async def test_endpoints_without_cdp_are_rows_of_reasons_within_the_timeout(
        site: ScenarioServer) -> None:
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        dead = free.getsockname()[1]

    async def silent(ws: websockets.ServerConnection) -> None:
        await ws.wait_closed()  # accepts a WebSocket, never answers

    async with websockets.serve(silent, "127.0.0.1", 0) as mute:
        port = mute.sockets[0].getsockname()[1]
        backends = [site.site_a, f"http://127.0.0.1:{dead}", f"ws://127.0.0.1:{port}/devtools"]
        began = time.monotonic()
        result = await cdpnb.probe(backends)
        assert time.monotonic() - began < 30
    matrix = result.matrix_text()
    assert len(matrix) == 3
    for backend, row in matrix.iterrows():
        assert all(cell.startswith("✗") for cell in row), (backend, row.to_dict())
    assert set(result.unreachable()) == set(matrix.index)
    assert "/json/version: HTTP Error 404" in matrix.iloc[0, 0]
    assert "cannot reach" in matrix.iloc[1, 0]
    # A WebSocket that never answers: not even BiDi's session.status.
    assert "speaks neither CDP nor WebDriver BiDi" in matrix.iloc[2, 0]
    assert "got no answer" in matrix.iloc[2, 0]


def test_a_missing_backend_is_a_row_of_reasons_not_a_crash(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CDPNB_NODE", "/nonexistent/node")
    result = asyncio.run(cdpnb.probe(["node"]))
    row = result.matrix_text().loc["node"]
    assert all(cell.startswith("✗ not installed") for cell in row)
    assert result.unreachable()["node"].startswith("not installed")


def test_probe_rejects_bad_arguments() -> None:
    with pytest.raises(ValueError, match="unknown backend 'firefox-nightly'"):
        asyncio.run(cdpnb.probe(["firefox-nightly"]))
    with pytest.raises(ValueError, match="repeat must be an int >= 1"):
        asyncio.run(cdpnb.probe(["chromium"], repeat=0))
    with pytest.raises(ValueError, match="is not a trace file or folder"):
        parse_backend("replay:/nonexistent.jsonl")


def test_cli_probe_prints_the_matrix_and_writes_results(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    assert cli.main(["probe", "--backends", "headless-shell", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    header = next(line for line in out.splitlines() if line.startswith("capability"))
    assert "HeadlessChrome" not in header  # the version is shortened to its number
    assert re.search(r"^capability\s+156\.", header)
    assert re.search(r"^dialogs oopif\s+✓\s*$", out, re.M)
    assert max(len(line) for line in out.splitlines()) <= 80
    saved = ProbeResult.from_json((tmp_path / "probe.json").read_text())
    assert saved.surprises().empty
    assert (tmp_path / "matrix.md").read_text().startswith("| backend |")
    assert (tmp_path / "headless-shell.native.jsonl.gz").exists()


def test_cli_with_no_browser_replays_the_shipped_datasets(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        probed: tuple[ProbeResult, Path], tmp_path: Path) -> None:
    _, out = probed
    shipped = tmp_path / "datasets"
    shipped.mkdir()
    for trace in out.glob("chromium.*.jsonl.gz"):
        shutil.copy(trace, shipped / trace.name)
    monkeypatch.setattr(probing, "available_backends",
                        lambda: {k: "not installed: apt-get install it" for k in LAUNCHABLE})
    assert cli.main(["probe", "--datasets", str(shipped)]) == 0
    captured = capsys.readouterr()
    assert "No browser backend is installed" in captured.err and "REPLAYED" in captured.err
    assert re.search(r"replay:chromium", captured.out)
    header = captured.out.split("─")[0]
    assert "156." in header and "replayed" in header


def test_cli_rejects_unknown_backends() -> None:
    proc = subprocess.run([sys.executable, "-m", "cdpnb.cli", "probe", "--backends", "nope"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert "unknown backend 'nope'" in proc.stderr


def test_the_shipped_datasets_replay_to_their_recorded_findings() -> None:
    folder = ROOT / "datasets" / "probes"
    specs = recorded_probes(folder)
    assert {s.name for s in specs} >= {"replay:chromium", "replay:chromium+playwright"}
    result = asyncio.run(cdpnb.probe([f"replay:{next(iter(s.traces.values()))}"
                                      for s in specs]))
    surprises = result.surprises()
    assert surprises.empty, surprises[["backend", "check", "detail"]].to_string()
    info = json.loads(result.to_json())["backends"]
    assert all(b["replayed"] for b in info.values())


def test_readme_has_exactly_two_setup_commands_and_ci_runs_the_test_one() -> None:
    readme = (ROOT / "README.md").read_text()
    commands = re.findall(r"^    (bash scripts/setup\.sh && .*)$", readme, flags=re.M)
    assert commands == ["bash scripts/setup.sh && .venv/bin/cdpnb probe",
                        "bash scripts/setup.sh && .venv/bin/python -m pytest"]
    ci = (ROOT / ".ci" / "run").read_text()
    assert "README.md" in ci and "pytest" in ci
