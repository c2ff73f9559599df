"""The probe on every backend kind, replayed probes, the CLI, and the README's two commands."""

from __future__ import annotations

import asyncio
import re
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest
import websockets

import cdpnb
from cdpnb import cli
from cdpnb.backends import LAUNCHABLE as ALL_KINDS
from cdpnb.cli import probing
from cdpnb.probes import (
    CHECKS,
    ProbeResult,
    RecordedSite,
    ScenarioServer,
    parse_backend,
    recorded_probes,
    run_checks,
)
from cdpnb.probes.expected import race_between
from cdpnb.probes.run import _identify, _Target
from cdpnb.probes.specs import BackendSpec
from cdpnb.trace import Trace

ROOT = Path(__file__).resolve().parent.parent
#: The kinds probed live here: both protocols and every kind of quirk (Chromium as it
#: is, a client in front that dismisses dialogs, a runtime with no pages, an engine
#: without site isolation whose dialogs do not block, Firefox over WebDriver BiDi).
#: chromium is probed live by the CLI test below, all eight kinds by notebook 01
#: (tests/test_notebooks.py), and chromium+puppeteer and chromium+bidi's recordings
#: replay here (test_the_shipped_datasets_replay_...); probing all eight here too
#: would cost a minute the rest of the suite already spends.
LAUNCHABLE = ("headless-shell", "chromium+playwright", "node", "lightpanda", "firefox")


@pytest.fixture(scope="module")
def probed(tmp_path_factory: pytest.TempPathFactory) -> tuple[ProbeResult, Path]:
    """One probe of the live kinds above, shared by the tests below."""
    out = tmp_path_factory.mktemp("probe")
    return asyncio.run(cdpnb.probe(list(LAUNCHABLE), out=out)), out


@pytest.mark.browser
def test_every_backend_matches_what_the_measured_facts_predict(
        probed: tuple[ProbeResult, Path]) -> None:
    result, _ = probed
    checks = result.checks()
    assert len(checks) == len(LAUNCHABLE) * len(CHECKS)
    assert checks["expected"].notna().all()
    surprises = result.surprises()
    assert surprises.empty, surprises[["backend", "check", "status", "detail"]].to_string()
    matrix = result.matrix_text()  # capabilities × backends, as every display
    assert list(matrix.columns) == list(LAUNCHABLE)
    row = matrix["headless-shell"]
    assert row["dialogs cross-site"] == row["dialogs nested"] == row["bridge cross-site"] == "✓"
    assert row["sandbox native"].startswith("✗ no dialog: the browser blocked")
    assert 0 < float(row["command RTT ms"]) < 50
    assert list(result.matrix().index[:2]) == ["protocol", "evaluate"]
    assert result.matrix().loc["dialogs cross-site", "headless-shell"] == "ok"
    typed = result.matrix(rows="backend")  # a typed column per capability
    assert list(typed.columns[:2]) == ["protocol", "evaluate"]
    assert typed["protocol"].tolist() == ["cdp", "cdp", "cdp", "cdp", "bidi"]
    assert [None if pd.isna(v) else v for v in typed["site isolation"]] == [
        "yes", "yes", None, "no", "unknown"]
    assert isinstance(typed["dialogs cross-site"].dtype, pd.CategoricalDtype)
    assert list(typed["dialogs cross-site"].cat.categories) == ["ok", "partial", "fail"]
    # Playwright's auto-dismissal races the probe's answer: either may win (measured).
    assert typed.loc["chromium+playwright", "dialogs cross-site"] in ("partial", "ok")
    races = result.races()
    dialog_checks = [c.name for c in CHECKS if c.name.startswith("dialog.") and c.mode ==
                     "native"]
    playwright = races[races["backend"] == "chromium+playwright"]
    raced = playwright[playwright["race"]]
    assert sorted(raced["check"].astype(str)) == sorted(dialog_checks)
    assert raced["between"].str.contains("Playwright").all()
    assert set(raced["closed_by"].astype(str)) <= {"agent", "remote"}
    # (0 where the opening and Playwright's close came in one socket read)
    assert raced["open_ms"].notna().all() and (raced["open_ms"] >= 0).all()
    bridged = playwright[~playwright["race"]]  # the bridge's dialogs are no one else's
    assert bridged["check"].str.startswith("bridge.").all()
    assert set(bridged["closed_by"].astype(str)) == {"agent"}
    quiet = races[races["backend"] == "headless-shell"]
    assert not quiet["race"].any() and set(quiet["closed_by"].astype(str)) == {"agent"}
    assert typed["command RTT ms"].dtype == "Float64"
    assert 0 < typed.loc["headless-shell", "command RTT ms"] < 50
    assert pd.isna(typed.loc["node", "dialog seen ms"])
    samples = result.latency_samples()
    rtt = samples[(samples["backend"] == "firefox") & (samples["check"] == "latency.command_rtt")]
    assert len(rtt) == 30 and not rtt["median_only"].any()
    assert result.unreachable() == {}
    versions = {b: info["version"] for b, info in result.backends.items()}
    assert versions["headless-shell"].startswith("HeadlessChrome/")
    assert versions["lightpanda"].startswith("Lightpanda/")
    assert versions["firefox"].startswith("Firefox/")
    assert {b: info["protocol"] for b, info in result.backends.items()}["firefox"] == "bidi"


@pytest.mark.browser
def test_playwright_row_native_dialogs_lost_bridge_answers(
        probed: tuple[ProbeResult, Path]) -> None:
    result, _ = probed
    row = result.matrix_text()["chromium+playwright"]
    # Who closes each native dialog is a race (Playwright's dismissal vs the probe's
    # answer 50 ms after it saw it), whose winner depends on the machine's load: each
    # check says who won, and when, in that outcome's words, and expects either.
    checks = result.checks()
    dialog_checks = checks[(checks["backend"] == "chromium+playwright")
                           & checks["check"].str.startswith("dialog.")]
    assert "dialog.beforeunload.main" in set(dialog_checks["check"])
    for check in dialog_checks.itertuples():
        name, detail = str(check.check), str(check.detail)
        assert race_between("chromium+playwright", name), check
        assert check.expected == "partial|ok" and check.as_expected, check
        if check.dialog_closed_by == "remote":
            assert check.status == "partial" and "closed by remote" in detail, check
            continue
        assert check.dialog_closed_by == "agent", check
        assert check.status == "ok", check
        if name == "dialog.beforeunload.main":  # the navigation it held went on
            assert "; accepting let the navigation go on" in detail, check
        else:  # the answer came back into page JS
            assert "answered (closed" in detail and "page JS got" in detail, check
    assert row["bridge main"] == row["bridge cross-site"] == "✓"
    assert row["frame tree complete"] == "✓" and row["site isolation"] == "yes"
    closed = checks[(checks["backend"] == "chromium+playwright")
                    & (checks["check"] == "latency.dialog_closed")].iloc[0]
    assert closed["expected"] == "fail|ok" and closed["as_expected"]


def test_node_row_is_runtime_only_with_reasons(probed: tuple[ProbeResult, Path]) -> None:
    result, _ = probed
    row = result.matrix_text()["node"]
    assert row["evaluate"] == "✓" and float(row["command RTT ms"]) > 0
    for capability in ("frame tree complete", "site isolation", "dialogs main",
                       "bridge cross-site", "beforeunload"):
        assert row[capability].startswith("✗") and "no Page domain" in row[capability]
    assert result.backends["node"]["version"].startswith("node.js/")


def test_lightpanda_has_every_capability_without_site_isolation_and_dialogs_that_do_not_block(
        probed: tuple[ProbeResult, Path]) -> None:
    result, _ = probed
    row = result.matrix_text()["lightpanda"]
    # All frames in one session, every one reachable: capabilities there, no OOPIF.
    assert row["frame tree complete"] == row["evaluate cross-site"] == "✓"
    assert row["site isolation"] == "no"
    for frame in ("main", "srcdoc", "cross-site", "nested"):
        cell = row[f"dialogs {frame}"]
        assert cell.startswith("partial") and "dialogs do not block: page JS got" in cell, cell
        assert row[f"bridge {frame}"] == "✓" if frame in ("main", "cross-site") else True
    assert row["beforeunload"].startswith("✗ no beforeunload dialog")
    assert "sandbox did not stop prompt()" in row["sandbox native"]
    assert row["dialog closed ms"] == "✗ dialogs do not block: nothing is left to answer"
    # recognised, never left pending: nothing for the watchdog, nothing sent to answer
    trace = Trace.load(result.traces["lightpanda"]["native"])
    final = trace.final_state()
    assert final.pending_dialogs == () and final.dialogs_block is False
    closes = [r.reason for r in final.recent_dialogs]
    assert closes and set(closes) == {"non_blocking"}
    assert not any(getattr(m, "method", "") == "Page.handleJavaScriptDialog"
                   for m in trace.messages)


def test_firefox_answers_every_dialog_natively_over_bidi(probed: tuple[ProbeResult, Path]
                                                         ) -> None:
    result, _ = probed
    row = result.matrix_text()["firefox"]
    assert row["protocol"] == "bidi" and row["site isolation"] == "unknown"
    for capability in ("evaluate", "frame tree complete", "evaluate cross-site", "dialogs main",
                       "dialogs srcdoc", "dialogs cross-site", "dialogs nested",
                       "beforeunload"):
        assert row[capability] == "✓", (capability, row[capability])
    # The bridge over BiDi (network.addIntercept): the same answers as over CDP.
    for capability in ("bridge main", "bridge cross-site", "sandbox bridge",
                       "bridge under CSP"):
        assert row[capability] == "✓", (capability, row[capability])
    assert row["bridge on https"].startswith("✗ cannot accept the probe's self-signed")
    assert float(row["dialog closed ms"]) > 0
    checks = result.checks()
    prompt = checks[(checks["backend"] == "firefox")
                    & (checks["check"] == "dialog.prompt.nested")].iloc[0]
    assert re.fullmatch(r"seen with its frame and answered \(closed \d+ ms after it opened\); "
                        r"page JS got 'answer-42'", prompt["detail"]), prompt["detail"]
    assert prompt["dialog_closed_by"] == "agent" and prompt["dialog_open_ms"] > 0


def test_each_backend_run_left_a_trace_behind(probed: tuple[ProbeResult, Path]) -> None:
    result, out = probed
    for kind in LAUNCHABLE:
        for mode in ("native", "bridge"):
            path = Path(result.traces[kind][mode])
            assert path.parent == out
            trace = Trace.load(path)
            assert trace.complete
            assert trace.protocol == ("bidi" if kind == "firefox" else "cdp")
            assert trace.header["meta"]["probe"]["mode"] == mode
            outcomes = [r for r in trace.records if getattr(r, "method", "") == "probe.check"]
            assert len(outcomes) == sum(c.mode == mode for c in CHECKS)


def _verdicts(cells: dict[str, str]) -> dict[str, str]:
    # Replays run as fast as possible: the timings in the reasons differ, the
    # verdicts, the words and the (recorded) latencies do not.
    return {k: v.replace("recorded: ", "") if k.endswith(" ms")
            else v.split(":")[0].split(" ")[0] for k, v in cells.items()}


def test_a_replayed_probe_finds_what_the_live_one_found(probed: tuple[ProbeResult, Path]
                                                        ) -> None:
    result, out = probed
    specs = recorded_probes(out)
    assert {s.name for s in specs} == {f"replay:{k}" for k in LAUNCHABLE}
    began = time.monotonic()
    replayed = asyncio.run(cdpnb.probe([f"replay:{out / 'chromium+playwright.native.jsonl.gz'}",
                                        f"replay:{out / 'headless-shell.bridge.jsonl.gz'}",
                                        f"replay:{out / 'lightpanda.native.jsonl.gz'}",
                                        f"replay:{out / 'firefox.native.jsonl.gz'}"]))
    # Bounds a hang only: a replay needs no browser, but a busy machine slows it too.
    assert time.monotonic() - began < 120
    live = result.matrix_text()
    again = replayed.matrix_text()
    for kind in ("chromium+playwright", "headless-shell", "lightpanda", "firefox"):
        assert _verdicts(again[f"replay:{kind}"].to_dict()) == _verdicts(
            live[kind].to_dict()), kind
    assert replayed.backends["replay:headless-shell"]["replayed"] is True
    assert replayed.backends["replay:firefox"]["protocol"] == "bidi"
    assert replayed.backends["replay:lightpanda"]["version"].startswith("Lightpanda/")
    assert "(replayed, recorded 20" in replayed.to_markdown()
    assert replayed.surprises().empty
    # the samples recorded live come back from the trace
    samples = replayed.latency_samples()
    rtt = samples[samples["check"] == "latency.command_rtt"]
    assert rtt.groupby("backend", observed=True).size().to_dict() == {
        "replay:chromium+playwright": 30, "replay:headless-shell": 30,
        "replay:lightpanda": 30, "replay:firefox": 30}


@pytest.mark.browser
async def test_a_url_backend_gets_the_expectations_of_the_engine_it_says_it_is(
        site: ScenarioServer, tmp_path: Path) -> None:
    async with cdpnb.launch("lightpanda") as lightpanda:
        # its Browser.getVersion says Chrome/124; /json/version says what it is
        result = await cdpnb.probe([lightpanda.http_url], progress=False, out=tmp_path)
    info = result.backends[lightpanda.http_url]
    assert (info["protocol"], info["version"], info["expected_as"]) == (
        "cdp", "Lightpanda/1.0", "lightpanda")
    assert result.checks()["expected"].notna().all() and result.surprises().empty
    # ... and its replay, from the note the live probe left in the trace
    replayed = await cdpnb.probe([f"replay:{result.traces[lightpanda.http_url]['native']}"],
                                 progress=False)
    assert next(iter(replayed.backends.values()))["expected_as"] == "lightpanda"
    assert replayed.surprises().empty
    async with cdpnb.launch("firefox") as firefox:
        found = await run_checks(firefox.url, [CHECKS[0]], site, backend="ff", kind=None)
    assert (found[0].status, found[0].expected) == ("ok", "ok")


async def test_an_engine_the_facts_do_not_cover_gets_no_expectations_and_says_so() -> None:
    target = _Target("ws://127.0.0.1:9/session", {"kind": "url", "version": ""},
                     RecordedSite("http://a", "http://b"))
    notes: list[dict[str, object]] = []

    async def annotate(method: str, params: dict[str, object]) -> None:
        notes.append(params)

    sup = SimpleNamespace(protocol="bidi", state=SimpleNamespace(engine=None),
                          browser_version={"product": "Servo/0.1"}, annotate=annotate)
    await _identify(target, sup)  # type: ignore[arg-type]
    assert target.kind is None and target.info["expected_as"] is None
    assert target.info["expected"] == "none: Servo/0.1 is no engine the measured facts cover"
    assert notes == [{"protocol": "bidi", "version": "Servo/0.1", "expected_as": None,
                      "expected": target.info["expected"]}]


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
        result = await cdpnb.probe(backends, timeout=2)
        # 2 s budgets, then 4 s on the one retry each gets: bounded, load or not.
        assert time.monotonic() - began < 60
    for backend in backends:
        retried = result.backends[backend]["retried"]
        assert retried.startswith("the first attempt could not probe it (") and "4 s" in retried
    matrix = result.matrix_text(rows="backend")
    assert len(matrix) == 3
    for backend, row in matrix.iterrows():
        assert row["protocol"] == "—"  # it never said
        assert all(cell.startswith("✗") for cell in row.drop("protocol")), (backend,
                                                                           row.to_dict())
    assert set(result.unreachable()) == set(matrix.index)
    reasons = matrix["evaluate"]
    assert "/json/version: HTTP Error 404" in reasons.iloc[0]
    assert "cannot reach" in reasons.iloc[1]
    # A WebSocket that never answers: not even BiDi's session.status.
    assert "speaks neither CDP nor WebDriver BiDi" in reasons.iloc[2]
    assert "got no answer" in reasons.iloc[2]


def test_a_missing_backend_is_a_row_of_reasons_not_a_crash(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CDPNB_NODE", "/nonexistent/node")
    result = asyncio.run(cdpnb.probe(["node"]))
    row = result.matrix_text()["node"]
    assert row["protocol"] == "cdp"  # what the kind speaks, installed or not
    assert all(cell.startswith("✗ not installed") for cell in row.drop("protocol"))
    assert result.unreachable()["node"].startswith("not installed")


@pytest.mark.browser
def test_a_backend_that_could_not_be_supervised_is_tried_again_with_longer_budgets(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """What a loaded machine did to Firefox (session.new with no reply in time): the
    probe tries again, twice as patient, and says so; nothing of the first attempt is
    left in the results."""
    from cdpnb.probes import run as run_mod

    budgets: list[float] = []
    real_start = run_mod.Supervisor.start

    async def slow_first(connect: object, **options: object) -> object:
        budgets.append(float(options["command_timeout_s"]))  # type: ignore[arg-type]
        if len(budgets) == 1:
            raise cdpnb.CdpnbError("session.new got no reply within 10 s")
        return await real_start(connect, **options)  # type: ignore[arg-type]

    monkeypatch.setattr(run_mod.Supervisor, "start", slow_first)
    result = asyncio.run(cdpnb.probe(["headless-shell"], progress=False, out=tmp_path))
    info = result.backends["headless-shell"]
    assert info["retried"] == ("the first attempt could not probe it (cannot supervise: "
                               "session.new got no reply within 10 s); tried again with "
                               f"{budgets[1]:g} s budgets")
    assert budgets[1] == 2 * budgets[0] and budgets[0] >= run_mod.STEP_BUDGET_S
    assert len(budgets) == 3  # the retry's native and bridge supervisors
    assert result.unreachable() == {} and result.surprises().empty
    assert len(result.results) == len(CHECKS)  # one result per check, none from attempt 1


@pytest.mark.browser
def test_an_unprobed_backend_is_one_line_with_the_command_to_retry(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from cdpnb.probes import run as run_mod

    async def never(connect: object, **options: object) -> object:
        raise cdpnb.CdpnbError("session.new got no reply within 3 s")

    monkeypatch.setattr(run_mod.Supervisor, "start", never)
    monkeypatch.setenv("COLUMNS", "200")
    assert cli.main(["probe", "--backends", "headless-shell", "--timeout", "3"]) == 1
    out = capsys.readouterr().out
    assert "Different from what the measured facts predict" not in out
    lines = [line for line in out.splitlines() if line.startswith("headless-shell ")]
    assert len(lines) == 1, out
    assert "cannot supervise: session.new got no reply within 3 s (tried twice)" in lines[0]
    assert lines[0].rstrip().endswith(
        "to try again: cdpnb probe --backends headless-shell --timeout 12")
    with pytest.raises(SystemExit) as exited:
        cli.main(["probe", "--backends", "headless-shell", "--timeout", "0"])
    assert exited.value.code == 2
    assert "--timeout must be a positive number of seconds, got 0.0" in capsys.readouterr().err


def test_probe_rejects_bad_arguments() -> None:
    with pytest.raises(ValueError, match="unknown backend 'firefox-nightly'"):
        asyncio.run(cdpnb.probe(["firefox-nightly"]))
    with pytest.raises(ValueError, match="repeats must be an int >= 1"):
        asyncio.run(cdpnb.probe(["chromium"], repeats=0))
    with pytest.raises(ValueError, match="timeout must be a positive number of seconds"):
        asyncio.run(cdpnb.probe(["chromium"], timeout=-1))
    with pytest.raises(ValueError, match="is not a trace file or folder"):
        parse_backend("replay:/nonexistent.jsonl")


@pytest.mark.browser
def test_cli_probe_prints_the_matrix_and_writes_results(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    assert cli.main(["probe", "--backends", "chromium", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    header = next(line for line in out.splitlines() if line.startswith("capability"))
    assert "Chrome/" not in header  # the version is shortened to its major number
    assert re.search(r"^capability\s+156$", header)
    assert re.search(r"^protocol\s+cdp\s*$", out, re.M)
    assert re.search(r"^dialogs cross-site\s+✓\s*$", out, re.M)
    assert re.search(r"^site isolation\s+yes\s*$", out, re.M)
    # (a token wider than the terminal, a long path, is printed whole on its own line)
    assert all(len(line) <= 80 or " " not in line.strip() for line in out.splitlines()), out
    # the traces: where they are in one line, not a list (probe.json and -v list them)
    assert f"2 traces (BACKEND.MODE.jsonl.gz) in {tmp_path}: open one with" in " ".join(
        out.split())
    assert ".native.jsonl.gz" not in out
    saved = ProbeResult.from_json((tmp_path / "probe.json").read_text())
    assert set(saved.traces["chromium"]) == {"native", "bridge"}
    assert saved.surprises().empty
    assert (tmp_path / "matrix.md").read_text().startswith("| backend | version | protocol |")
    assert (tmp_path / "chromium.native.jsonl.gz").exists()


def test_cli_with_no_browser_replays_the_shipped_datasets(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        probed: tuple[ProbeResult, Path], tmp_path: Path) -> None:
    _, out = probed
    shipped = tmp_path / "datasets"
    shipped.mkdir()
    for trace in out.glob("headless-shell.*.jsonl.gz"):
        shutil.copy(trace, shipped / trace.name)
    monkeypatch.setattr(probing, "available_backends",
                        lambda: {k: "not installed: apt-get install it" for k in ALL_KINDS})
    assert cli.main(["probe", "--datasets", str(shipped)]) == 0
    captured = capsys.readouterr()
    assert "No browser backend is installed" in captured.err and "REPLAYED" in captured.err
    assert re.search(r"replay:headless", captured.out)
    header = captured.out.split("─")[0]
    assert re.search(r"\b156\b", header) and "replayed" in header


def test_cli_rejects_unknown_backends() -> None:
    proc = subprocess.run([sys.executable, "-m", "cdpnb.cli", "probe", "--backends", "nope"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert "unknown backend 'nope'" in proc.stderr


def test_the_shipped_datasets_replay_to_their_recorded_findings() -> None:
    folder = ROOT / "datasets" / "probes"
    specs = recorded_probes(folder)
    assert {s.name for s in specs} == {f"replay:{kind}" for kind in ALL_KINDS}
    recorded = ProbeResult.from_json((folder / "probe.json").read_text())

    async def each() -> list[ProbeResult]:
        # One probe per recording, all side by side: a replay mostly waits (a dialog
        # that never comes waits its full 3 s). Beside two busy processes, a command
        # sent second by a client reached its replay up to 0.7 s late; the 50 ms a
        # replay once waited for it gave a check another verdict, one run in three
        # (cdpnb.playback.server.REORDER_GRACE_S): this test, so run, is what caught it.
        async def one(spec: BackendSpec) -> ProbeResult:
            return await cdpnb.probe([f"replay:{next(iter(spec.traces.values()))}"],
                                     progress=False)

        return await asyncio.gather(*(one(s) for s in specs))

    for result in asyncio.run(each()):
        (name, info), = result.backends.items()
        kind = name.removeprefix("replay:")
        assert info["replayed"] and info["protocol"] == recorded.backends[kind]["protocol"]
        assert result.unreachable() == {}
        surprises = result.surprises()
        assert surprises.empty, surprises[["backend", "check", "detail"]].to_string()
        # the same verdict for every check as when it was recorded, words too
        found = {(r.check, r.run): (r.status, r.finding) for r in result.results}
        assert found == {(r.check, r.run): (r.status, r.finding) for r in recorded.results
                         if r.backend == kind}, kind


def test_readme_has_exactly_two_setup_commands_and_ci_runs_the_test_one() -> None:
    readme = (ROOT / "README.md").read_text()
    commands = re.findall(r"^    (bash scripts/setup\.sh && .*)$", readme, flags=re.M)
    assert commands == ["bash scripts/setup.sh && .venv/bin/cdpnb probe",
                        "bash scripts/setup.sh && .venv/bin/python -m pytest"]
    ci = (ROOT / ".ci" / "run").read_text()
    assert "README.md" in ci and "pytest" in ci
