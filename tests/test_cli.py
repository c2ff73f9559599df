"""The ``cdpnb`` command: five commands, --json, --version, exit statuses, and output
that fits an 80-column terminal."""

from __future__ import annotations

import gzip
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import cdpnb
from cdpnb import cli
from cdpnb.cli.status import EXIT_STATUSES
from cdpnb.probes import ScenarioServer

ROOT = Path(__file__).resolve().parent.parent
PROBES = ROOT / "datasets" / "probes"
CHROMIUM = PROBES / "chromium.native.jsonl.gz"
PLAYWRIGHT = PROBES / "chromium+playwright.native.jsonl.gz"


def cdpnb_command(*args: str, columns: int = 80, timeout: float = 120,
                  ) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": str(columns)}
    return subprocess.run([sys.executable, "-m", "cdpnb.cli", *args], capture_output=True,
                          text=True, timeout=timeout, env=env, cwd=ROOT)


def assert_fits(text: str, columns: int = 80) -> None:
    too_wide = [line for line in text.splitlines() if len(line) > columns]
    assert too_wide == [], f"{len(too_wide)} lines wider than {columns}: {too_wide[:3]}"


@pytest.mark.parametrize("command", ["", "probe", "record", "replay", "matrix", "compare",
                                     "campaign"])
def test_help_fits_80_columns_without_rest_markup(command: str) -> None:
    done = cdpnb_command(*([command] if command else []), "--help")
    assert done.returncode == 0
    assert "``" not in done.stdout and ":func:" not in done.stdout
    assert "exit status:" in done.stdout  # (each command's own: test_cli_conventions.py)
    assert_fits(done.stdout)


def test_version() -> None:
    for flag in ("--version", "-V"):
        done = cdpnb_command(flag)
        assert done.returncode == 0 and done.stdout.strip() == f"cdpnb {cdpnb.__version__}"


def test_bare_cdpnb_shows_what_it_can_do() -> None:
    done = cdpnb_command()
    assert done.returncode == 0 and done.stderr == ""
    assert "WebDriver BiDi" in done.stdout and "cdpnb probe " in done.stdout
    assert_fits(done.stdout)


def test_errors_and_warnings_speak_words_not_python(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "not-a-result.json").write_text("{}")
    assert cli.main(["matrix", str(tmp_path / "not-a-result.json")]) == 1
    assert cli.main(["matrix", str(tmp_path / "missing.json")]) == 1
    err = " ".join(capsys.readouterr().err.split())  # (as wrapped to the terminal)
    assert "it has no 'results'" in err and "No such file or directory" in err
    assert "KeyError" not in err and "FileNotFoundError" not in err and "[Errno" not in err
    cut = tmp_path / "cut.jsonl"
    text = gzip.decompress(CHROMIUM.read_bytes())
    cut.write_bytes(text[: len(text) // 2])  # a trace a crash cut short
    assert cli.main(["compare", str(CHROMIUM), str(cut)]) == 0
    err = capsys.readouterr().err  # (wrapped at spaces: a long path starts a line)
    assert " ".join(err.split()).startswith("warning: ") and ".py:" not in err, err


def test_probe_takes_repeats_as_campaign_does() -> None:
    args = cli.build_parser().parse_args(["probe", "--repeats", "3"])
    assert args.repeats == 3


def test_matrix_of_a_saved_result_is_transposed_and_fits(capsys: pytest.CaptureFixture[str],
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    assert cli.main(["matrix", str(PROBES / "probe.json"), "--reasons"]) == 0
    out = capsys.readouterr().out
    assert_fits(out)
    lines = out.splitlines()
    # Fourteen backends at 80 columns: as many tables as their widths need, each
    # backend once, names broken where they break.
    tables = [i for i, line in enumerate(lines) if line.startswith("capability")]
    assert len(tables) >= 2
    headers = " ".join(" ".join(lines[i - 2:i + 1]) for i in tables)
    for backend in ("chromium", "headless-", "playwright", "node", "deno", "bun",
                    "puppeteer", "lightpanda", "bidi", "firefox", "153", "webkit",
                    "chromedriver", "selenium"):
        assert backend in headers
    assert len(tables) <= 3  # short versions and names broken after "+": 5, 5 and 4
    # (the tables only: the reasons below their legend start lines with capabilities too)
    tables_end = next(i for i, line in enumerate(lines) if line.startswith("(--reasons"))
    cells = [c for line in lines[:tables_end] if line.startswith("dialogs cross-site ")
             for c in line.split()[2:]]
    # playwright and lightpanda partial; node, deno and bun without pages; webkit and
    # chromedriver over WebDriver classic seen with no frame ("frame?", in the legend)
    assert sorted(cells) == sorted(["✓"] * 7 + ["~", "~", "✗", "✗", "✗"] + ["frame?"] * 2)
    assert "frame?: seen and answered, its frame unknown" in out
    assert any(line.startswith("command RTT ms") for line in lines)
    assert "closed by remote" in out  # --reasons
    assert "no Page domain" in out


def test_matrix_json_and_strict(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["matrix", str(PROBES), "--json", "--strict"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["exit_status"] == 0 and data["unreachable"] == {} and data["surprises"] == []
    assert data["matrix"]["node"]["dialogs main"].startswith("✗ no Page domain")
    assert len(data["results"]) > 60


def test_matrix_strict_exits_3_on_surprises(tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    data = json.loads((PROBES / "probe.json").read_text())
    data["results"][0]["status"] = "fail"  # chromium's Runtime check, expected ok
    (tmp_path / "probe.json").write_text(json.dumps(data))
    assert cli.main(["matrix", str(tmp_path)]) == 0
    assert "Different from what the measured facts predict" in capsys.readouterr().out
    assert cli.main(["matrix", str(tmp_path), "--strict"]) == 3


def test_matrix_of_a_missing_file_exits_1(tmp_path: Path) -> None:
    done = cdpnb_command("matrix", str(tmp_path / "nothing.json"))
    assert done.returncode == 1 and "cannot read a probe result" in done.stderr


def test_usage_errors_exit_2() -> None:
    for args in (["probe", "--backends", "nope"], ["probe", "--repeat", "0"],
                 ["compare", str(CHROMIUM)], ["nope"], ["probe", "--timeout", "-1"]):
        done = cdpnb_command(*args)
        assert done.returncode == 2, (args, done.stderr)


def test_probe_of_an_unreachable_backend_exits_1(site: ScenarioServer,
                                                 capsys: pytest.CaptureFixture[str],
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    # An HTTP server with no CDP: every cell ✗ with the reason, exit 1.
    assert cli.main(["probe", "--backends", site.site_a]) == 1
    captured = capsys.readouterr()
    assert "Could not be probed" in captured.out and "404" in captured.out
    assert_fits(captured.out)
    assert cli.main(["probe", "--backends", site.site_a, "--json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["exit_status"] == 1 and list(data["unreachable"]) == [site.site_a]


def test_probe_of_a_replayed_trace_at_80_columns() -> None:
    done = cdpnb_command("probe", "--backends", f"replay:{CHROMIUM}", "--reasons")
    assert done.returncode == 0, done.stderr
    assert_fits(done.stdout)
    assert_fits(done.stderr)
    assert "replay:chromium" in done.stdout and "sandbox native" in done.stdout


def test_compare_two_traces_fits_and_says_who_closed_the_dialogs(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    assert cli.main(["compare", str(CHROMIUM), str(PLAYWRIGHT)]) == 0
    out = capsys.readouterr().out
    assert_fits(out)
    assert "remote" in out and "agent" in out
    assert cli.main(["compare", str(CHROMIUM), str(PLAYWRIGHT), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    closed = next(r for r in data["rows"] if r["item"] == 'alert "probe": closed_by')
    assert closed["values"] == {str(CHROMIUM): "agent", str(PLAYWRIGHT): "remote"}


def test_compare_of_a_file_that_is_not_a_trace_exits_1(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text("not json\n")
    done = cdpnb_command("compare", str(CHROMIUM), str(bad))
    assert done.returncode == 1 and "cannot read" in done.stderr


def _start(*args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "COLUMNS": "80"}
    return subprocess.Popen([sys.executable, "-m", "cdpnb.cli", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT)


@pytest.mark.browser
def test_record_until_sigint_then_replay_until_sigterm(site: ScenarioServer,
                                                       tmp_path: Path) -> None:
    trace = tmp_path / "run.jsonl.gz"
    recording = _start("record", site.url("/two-site"), "--out", str(trace),
                       "--backend", "headless-shell", "--json")
    try:
        deadline = time.monotonic() + 30
        while not (trace.exists() and trace.stat().st_size > 2000):
            assert recording.poll() is None, recording.communicate()
            assert time.monotonic() < deadline, "nothing recorded within 30 s"
            time.sleep(0.2)
        time.sleep(1.0)  # the OOPIF attaches
        recording.send_signal(signal.SIGINT)
        out, err = recording.communicate(timeout=30)
    finally:
        if recording.poll() is None:
            recording.kill()
    assert recording.returncode == 0, err
    summary = json.loads(out)
    assert summary["trace"] == str(trace) and summary["messages"] > 20
    loaded = cdpnb.Trace.load(trace)
    assert loaded.complete  # stopped cleanly: the footer is there
    frames = loaded.frames()
    assert frames["is_oopif"].any() and frames["url"].astype(str).str.endswith("/child").any()

    serving = _start("replay", str(trace), "--json")
    try:
        lines = []
        assert serving.stdout is not None
        while not lines or lines[-1] != "}":
            line = serving.stdout.readline()
            assert line, serving.communicate()
            lines.append(line.rstrip("\n"))
        info = json.loads("\n".join(lines))
        assert info["cdp_url"].startswith("ws://127.0.0.1:")
        sup = cdpnb.sync.Supervisor.start(info["cdp_url"], reconnect_attempts=0)
        assert sup.connected
        sup.stop()
        serving.send_signal(signal.SIGTERM)
        serving.communicate(timeout=30)
    finally:
        if serving.poll() is None:
            serving.kill()
    assert serving.returncode == 0


def test_record_of_an_unreachable_endpoint_exits_1(tmp_path: Path) -> None:
    done = cdpnb_command("record", "about:blank", "--out", str(tmp_path / "x.jsonl"),
                         "--connect", "http://127.0.0.1:9")
    assert done.returncode == 1 and "cannot start" in done.stderr


def test_replay_of_a_missing_trace_exits_1(tmp_path: Path) -> None:
    done = cdpnb_command("replay", str(tmp_path / "missing.jsonl"))
    assert done.returncode == 1 and "cannot serve" in done.stderr


def test_every_exit_status_is_documented_in_the_readme() -> None:
    readme = (ROOT / "README.md").read_text()
    for code in EXIT_STATUSES:
        assert f"| {code} |" in readme, code


#: Text an endpoint, a page or a trace could hold to steer a terminal: retitle it, clear
#: it, write the clipboard (OSC 52), overwrite the line, reorder it, and rich markup.
STEER = ("\x1b]0;pwned\x07\x1b[2J\x1b]52;c;aGk=\x07\rback\u202eesrever"
         "[link=http://evil.test]click[/link]")


def _assert_inert(out: str) -> None:
    for raw in ("\x1b", "\x07", "\r", "\u202e"):
        assert raw not in out, repr(raw)
    assert "\\x1b]0;pwned" in out and "\\u202e" in out
    assert "[link=http://evil.test]click[/link]" in out  # shown as text, not a link


def test_text_from_a_result_or_a_trace_cannot_steer_the_terminal(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "300")
    data = json.loads((PROBES / "probe.json").read_text())
    data["backends"]["chromium"]["version"] = "Chrome/156" + STEER
    data["results"][0].update(status="fail", detail=STEER)
    (tmp_path / "probe.json").write_text(json.dumps(data))
    assert cli.main(["matrix", str(tmp_path), "--reasons"]) == 0
    _assert_inert(capsys.readouterr().out)

    lines = gzip.decompress(CHROMIUM.read_bytes()).decode().splitlines(keepends=True)
    header = json.loads(lines[0])
    header["browser"] = {"Browser": "Chrome/156" + STEER}
    header["backend"] = {**(header.get("backend") or {}), "kind": "chromium" + STEER,
                         "version": "Chrome/156" + STEER}
    hostile = tmp_path / f"hostile{STEER[:4]}.jsonl"
    hostile.write_text(json.dumps(header) + "\n" + "".join(lines[1:]))
    assert cli.main(["compare", str(CHROMIUM), str(hostile)]) == 0
    _assert_inert(capsys.readouterr().out)


@pytest.mark.parametrize("recorded", ["webkit", "chromium+chromedriver"])
def test_replay_of_a_classic_trace_prints_how_to_replay_it_and_that_works(
        recorded: str) -> None:
    """A WebDriver classic recording is served in CDP's framing that only cdpnb's replay
    connector speaks: the CLI prints the lines that replay it (not a URL no client can
    use), and those lines, run as printed, give a supervisor on the recording."""
    trace = PROBES / f"{recorded}.native.jsonl.gz"
    done = cdpnb_command("replay", str(trace), "--duration", "0.5")
    assert done.returncode == 0, done.stderr
    assert "ws://" not in done.stdout and "replays to cdpnb itself" in done.stdout
    assert f"cdpnb probe --backends replay:{trace}" in done.stdout
    done = cdpnb_command("replay", str(trace), "--duration", "0.5", "--json")
    info = json.loads(done.stdout)
    assert info["protocol"] == "classic"
    snippet = info["replay_with"]
    assert snippet.splitlines()[0] == f"async with cdpnb.replay({str(trace)!r}) as backend:"
    body = "\n".join(f"    {line}" for line in snippet.splitlines())
    code = (f"async def main():\n{body}\n        protocol = sup.protocol\n"
            f"        await sup.stop()\n    return protocol\n")
    scope: dict[str, object] = {"cdpnb": cdpnb}
    exec(compile(code, "<printed by cdpnb replay>", "exec"), scope)
    main = scope["main"]
    assert callable(main)
    import asyncio
    assert asyncio.run(main()) == "classic"


def test_replay_of_a_cdp_trace_prints_its_url() -> None:
    done = cdpnb_command("replay", str(CHROMIUM), "--duration", "0.5", "--json")
    info = json.loads(done.stdout)
    assert (info["protocol"], info["replay_with"]) == ("cdp", None)
    assert info["cdp_url"].startswith("ws://127.0.0.1:")
