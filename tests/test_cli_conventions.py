"""CLI conventions (issue 25, item 10): each command's help lists the exit statuses it
can return, in its words (``cdpnb.cli.status.COMMAND_STATUSES``), and every one of them
is driven here for real; progress where stderr is no terminal is plain lines; Ctrl-C in
``probe`` prints the matrix of what finished, marked partial, and exits 130 with no
browser left behind."""

from __future__ import annotations

import contextlib
import errno
import gzip
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path

import psutil
import pytest
from test_terminal_hostile import in_terminal

from cdpnb import cli
from cdpnb.cli import live
from cdpnb.cli.status import COMMAND_STATUSES, EXIT_STATUSES, INTERRUPTED
from cdpnb.probes import CHECKS, ScenarioServer

ROOT = Path(__file__).resolve().parent.parent
PROBES = ROOT / "datasets" / "probes"
CHROMIUM = PROBES / "chromium.native.jsonl.gz"
NODE = PROBES / "node.native.jsonl.gz"
COMMANDS = tuple(COMMAND_STATUSES)


def cdpnb_command(*args: str, columns: int = 80, timeout: float = 240,
                  env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """The command as a user runs it, through pipes (stderr no terminal)."""
    environment = {**os.environ, "COLUMNS": str(columns),
                   # a scheduler that is not there is given up on after 3 s, not Dask's 30
                   "DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT": "3s", **(env or {})}
    return subprocess.run([sys.executable, "-m", "cdpnb.cli", *args], capture_output=True,
                          text=True, timeout=timeout, env=environment, cwd=ROOT)


class Statuses:
    """The exit statuses one command was seen to return: each must be in its table,
    and by the end of its test every status in its table must have been seen."""

    def __init__(self, command: str) -> None:
        self.command = command
        self.seen: set[int] = set()

    def saw(self, status: int, output: str = "") -> None:
        assert status in COMMAND_STATUSES[self.command], (self.command, status, output)
        self.seen.add(status)

    def run(self, expected: int, *args: str, **options: object
            ) -> subprocess.CompletedProcess[str]:
        done = cdpnb_command(self.command, *args, **options)  # type: ignore[arg-type]
        assert done.returncode == expected, (args, done.stdout[-2000:], done.stderr[-2000:])
        assert "Traceback" not in done.stderr, done.stderr
        self.saw(done.returncode, done.stderr)
        return done

    def all_seen(self, but: frozenset[int] = frozenset()) -> None:
        assert self.seen == set(COMMAND_STATUSES[self.command]) - but, self.seen


def exit_table(help_text: str) -> dict[int, str]:
    """The ``exit status:`` section of a help text: each status and its words."""
    section = help_text.split("\nexit status:\n", 1)[1]
    table: dict[int, str] = {}
    last = 0
    for line in section.splitlines():
        found = re.match(r"  (\d+) +(.*)", line)
        if found:
            last = int(found[1])
            table[last] = found[2]
        elif line.strip():
            table[last] += " " + line.strip()
    return table


# -- a: each command's help lists its own statuses --------------------------------------

@pytest.mark.parametrize("command", ["", *COMMANDS])
def test_help_lists_only_the_statuses_the_command_returns(
        command: str, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    with pytest.raises(SystemExit) as exited:
        cli.main([*([command] if command else []), "-h"])
    assert exited.value.code == 0
    shown = capsys.readouterr().out
    assert all(len(line) <= 80 for line in shown.splitlines()), shown
    table = exit_table(shown)
    documented = COMMAND_STATUSES[command] if command else EXIT_STATUSES
    assert list(table) == list(documented)
    for status, words in documented.items():
        assert table[status] == " ".join(words.split())


def test_the_tables_say_what_differs_between_commands() -> None:
    # record and replay end on Ctrl-C by design (0); --strict is probe's and matrix's.
    for command in ("record", "replay"):
        assert INTERRUPTED not in COMMAND_STATUSES[command]
        assert "Ctrl-C" in COMMAND_STATUSES[command][0]
    assert {c for c, table in COMMAND_STATUSES.items() if 3 in table} == {"probe", "matrix"}
    assert set(EXIT_STATUSES) == {s for table in COMMAND_STATUSES.values() for s in table}


# -- a: every status of every command, driven -------------------------------------------

def _strict_surprise(folder: Path) -> Path:
    """A copy of the recorded chromium probe in which one latency check failed (a
    replay shows a latency check's recorded outcome): a result the facts do not
    predict."""
    for mode in ("native", "bridge"):
        source = PROBES / f"chromium.{mode}.jsonl.gz"
        lines = gzip.decompress(source.read_bytes()).decode().splitlines(keepends=True)
        for i, line in enumerate(lines):
            if '"probe.check"' in line and '"latency.command_rtt"' in line:
                lines[i] = line.replace('"status":"ok"', '"status":"fail"', 1)
                assert lines[i] != line
        (folder / source.name).write_bytes(gzip.compress("".join(lines).encode()))
    return folder / CHROMIUM.name


def test_probe_statuses(tmp_path: Path, site: ScenarioServer) -> None:
    probe = Statuses("probe")
    surprising = _strict_surprise(tmp_path)
    done = probe.run(0, "--backends", f"replay:{surprising}")
    assert "Partial" not in done.stdout
    done = probe.run(3, "--backends", f"replay:{surprising}", "--strict", "--json")
    data = json.loads(done.stdout)
    assert data["exit_status"] == 3 and data["partial"] is False and data["not_run"] == {}
    assert [s["check"] for s in data["surprises"]] == ["latency.command_rtt"]
    # an HTTP server with no CDP: nothing to probe (as test_cli, with short budgets)
    done = probe.run(1, "--backends", site.site_a, "--timeout", "2")
    assert "Could not be probed" in done.stdout
    done = probe.run(1, "--backends", f"replay:{CHROMIUM}", "--out", "/dev/null/probe")
    assert " ".join(done.stderr.split()) == (
        "cdpnb probe: cannot write to --out /dev/null/probe: Not a directory")
    (tmp_path / "a-file").write_text("")
    for bad in (["--backends", "no-such-browser"], ["--repeats", "0"], ["--timeout", "0"],
                ["--out", str(tmp_path / "a-file")]):
        done = probe.run(2, *bad)
        assert done.stderr.startswith("usage: cdpnb probe "), done.stderr
    probe.all_seen(but=frozenset({INTERRUPTED}))  # 130: the Ctrl-C tests below


def test_matrix_statuses(tmp_path: Path) -> None:
    matrix = Statuses("matrix")
    matrix.run(0, str(PROBES), "--strict")
    matrix.run(1, str(tmp_path / "missing.json"))
    matrix.run(2)
    data = json.loads((PROBES / "probe.json").read_text())
    data["results"][0]["status"] = "fail"  # chromium's Runtime check, expected ok
    (tmp_path / "probe.json").write_text(json.dumps(data))
    matrix.run(3, str(tmp_path), "--strict")
    # a saved result with a backend that could not be probed
    data["backends"]["node"]["unreachable"] = "nothing listening"
    (tmp_path / "probe.json").write_text(json.dumps(data))
    assert "Could not be probed" in matrix.run(1, str(tmp_path)).stdout
    # the tables for papers (their content: tests/test_report.py)
    assert matrix.run(0, str(PROBES), "--format", "tex").stdout.startswith("% cdpnb's")
    assert matrix.run(2, str(PROBES), "--format", "md", "--json").stderr.startswith(
        "usage: cdpnb matrix ")
    matrix.all_seen()


def test_report_statuses(tmp_path: Path) -> None:
    from test_report import altered_result

    report = Statuses("report")
    second = altered_result(tmp_path / "second")
    out = tmp_path / "report.html"
    done = report.run(0, str(PROBES), str(second), "--out", str(out), "--json")
    data = json.loads(done.stdout)
    assert data["changed"] == [{"backend": "chromium", "capability": "dialogs cross-site",
                                "before": "✓", "after": "~"}]
    assert out.stat().st_size == data["bytes"] and (out.stat().st_mode & 0o777) == 0o600
    done = report.run(0, str(PROBES), "--out", str(out))
    assert " ".join(done.stdout.split()).startswith(f"report written to {out} (")
    report.run(1, str(tmp_path / "missing"), "--out", str(out))
    done = report.run(1, str(PROBES), "--out", "/dev/null/report.html")
    assert "cannot write --out" in done.stderr
    for bad in ([str(PROBES)], ["--out", str(out)], [str(PROBES), "--out", str(tmp_path)],
                [str(PROBES), str(PROBES / "probe.json"), "--out", str(out)]):
        done = report.run(2, *bad)
        assert done.stderr.startswith("usage: cdpnb report "), done.stderr
    report.all_seen()


def test_compare_statuses(tmp_path: Path) -> None:
    compare = Statuses("compare")
    compare.run(0, str(CHROMIUM), str(NODE))
    (tmp_path / "not-a-trace.jsonl").write_text("hello\n")
    compare.run(1, str(CHROMIUM), str(tmp_path / "not-a-trace.jsonl"))
    compare.run(2, str(CHROMIUM))
    # Ctrl-C while a trace is read: a named pipe holds the read open until interrupted.
    fifo = tmp_path / "slow.jsonl"
    os.mkfifo(fifo)
    process = subprocess.Popen([sys.executable, "-m", "cdpnb.cli", "compare", str(fifo),
                                str(CHROMIUM)], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, cwd=ROOT)
    writer = -1
    try:
        deadline = time.monotonic() + 60
        while writer < 0:  # (opening the write end fails until the reader has it open)
            try:
                writer = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
            except OSError as exc:
                assert exc.errno == errno.ENXIO and process.poll() is None, exc
                assert time.monotonic() < deadline, "compare never opened the trace"
                time.sleep(0.05)
        # Ctrl-C once the reader is blocked reading the pipe (its wchan says so): a SIGINT
        # landing between its open() and its read() would only set Python's flag while the
        # read blocks on, and one during its exit would print a second traceback. Nothing
        # is written: the trace never ends by itself.
        wchan = Path(f"/proc/{process.pid}/wchan")
        while "pipe" not in wchan.read_text():
            assert process.poll() is None and time.monotonic() < deadline, \
                "compare never blocked reading the trace"
            time.sleep(0.02)
        process.send_signal(signal.SIGINT)
        try:
            out, err = process.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            raise AssertionError("compare did not end within 30 s of Ctrl-C") from None
    finally:
        if writer >= 0:
            os.close(writer)
        if process.poll() is None:
            process.kill()
    assert (process.returncode, out, err) == (INTERRUPTED, "", "interrupted\n")
    compare.saw(process.returncode)
    compare.all_seen()


def test_replay_statuses(tmp_path: Path) -> None:
    replay = Statuses("replay")
    replay.run(0, str(CHROMIUM), "--duration", "0.5")
    replay.run(1, str(tmp_path / "missing.jsonl"))
    for bad, said in ((["--speed", "0"], "--speed must be a positive number"),
                      (["--duration", "-1"], "--duration must be a positive number"),
                      ([], "the following arguments are required: TRACE")):
        done = replay.run(2, *([str(CHROMIUM)] if bad else []), *bad)
        assert done.stderr.startswith("usage: cdpnb replay ") and said in done.stderr
    replay.all_seen()


def test_proxy_statuses(tmp_path: Path) -> None:
    from websockets.sync.client import connect

    proxy = Statuses("proxy")
    proxy.run(0, "--replay", str(CHROMIUM), "--duration", "0.5")
    proxy.run(1, "--replay", str(tmp_path / "missing.jsonl"))
    for bad, said in ((["--url", "http://127.0.0.1:9", "--fault", "shuffle:A.b"],
                       "fault rule 'shuffle:A.b': unknown rule 'shuffle'"),
                      (["--url", "http://127.0.0.1:9", "--loose"], "--loose goes with --replay"),
                      (["--replay", str(CHROMIUM), "--fault", "drop:A.b"],
                       "--replay serves a recording as it is"),
                      ([], "one of the arguments --backend --url --replay is required")):
        done = proxy.run(2, *bad)
        assert done.stderr.startswith("usage: cdpnb proxy ") and said in done.stderr, done.stderr
    # A client that sends what the recording does not hold: told at once, and the
    # command exits 4 with the first divergence.
    with subprocess.Popen([sys.executable, "-m", "cdpnb.cli", "proxy", "--replay",
                           str(CHROMIUM), "--duration", "3"], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, cwd=ROOT) as process:
        assert process.stdout is not None and process.stderr is not None
        endpoint = process.stdout.readline().strip()
        ws_url = process.stdout.readline().strip()
        assert endpoint.startswith("http://127.0.0.1:") and ws_url.startswith("ws://127.0.0.1:")
        with connect(ws_url) as client:
            client.send(json.dumps({"id": 1, "method": "Nothing.recorded", "params": {}}))
            reply = json.loads(client.recv(timeout=10))
        assert "replay diverged" in reply["error"]["message"]
        err = process.stderr.read()
        assert process.wait(timeout=60) == 4, err
    assert "Nothing.recorded" in err and "Traceback" not in err
    proxy.saw(4)
    proxy.all_seen()


@pytest.mark.browser
def test_record_statuses(tmp_path: Path, site: ScenarioServer) -> None:
    record = Statuses("record")
    done = record.run(0, site.url("/"), "--out", str(tmp_path / "ok.jsonl"), "--backend",
                      "headless-shell", "--duration", "1")
    assert "recorded " in done.stdout
    record.run(1, "about:blank", "--out", str(tmp_path / "x.jsonl"), "--connect",
               "http://127.0.0.1:9")
    record.run(2, "not-a-url", "--out", str(tmp_path / "y.jsonl"))
    record.all_seen()


@pytest.mark.browser
def test_campaign_statuses(tmp_path: Path) -> None:
    campaign = Statuses("campaign")
    cell = ["--backends", "node", "--scenarios", "runtime.evaluate"]
    done = campaign.run(0, *cell, "--out", str(tmp_path / "ok"))
    assert "1 cell ran in" in done.stdout
    done = campaign.run(1, *cell, "--out", str(tmp_path / "x"), "--scheduler",
                        "tcp://127.0.0.1:9")
    assert "cannot run" in done.stderr
    campaign.run(2, *cell, "--out", str(tmp_path / "y"), "--repeats", "0")
    # Ctrl-C once the first cell is saved: 130, and the saved cells are said
    out = tmp_path / "interrupted"
    process = subprocess.Popen([sys.executable, "-m", "cdpnb.cli", "campaign", *cell,
                                "--repeats", "60", "--out", str(out)], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        deadline = time.monotonic() + 120
        while not list(out.rglob("*.parquet")):
            assert process.poll() is None, process.communicate()
            assert time.monotonic() < deadline, "no cell saved within 120 s"
            time.sleep(0.1)
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == INTERRUPTED, err
    assert "run the same call again to resume" in err and "Traceback" not in err, err
    campaign.saw(process.returncode)
    campaign.all_seen()


# -- b: progress where stderr is no terminal ------------------------------------------

_ESC = "\x1b"
#: SGR colours (foreground, background; 8, 16, 256 and true colour): what NO_COLOR rules out.
_COLOUR = re.compile(r"\x1b\[[0-9;]*(?:3[0-9]|4[0-9]|9[0-7]|10[0-7])(?:;[0-9;]*)?m")


def test_probe_progress_is_a_line_per_backend_when_stderr_is_a_pipe() -> None:
    done = cdpnb_command("probe", "--backends", f"replay:{CHROMIUM},replay:{NODE}")
    assert done.returncode == 0, done.stderr
    assert _ESC not in done.stderr and "\r" not in done.stderr
    lines = done.stderr.splitlines()
    assert lines[0::2] == ["probing replay:chromium (1 of 2) …", "probing replay:node (2 of 2) …"]
    assert [re.sub(r"in \d+\.\d s$", "in T s", line) for line in lines[1::2]] == [
        f"probed replay:chromium: {len(CHECKS)}/{len(CHECKS)} checks in T s",
        f"probed replay:node: {len(CHECKS)}/{len(CHECKS)} checks in T s"]


def test_progress_honours_term_dumb_and_no_color() -> None:
    backends = f"replay:{CHROMIUM}"
    # TERM=dumb: a terminal that cannot move the cursor gets the plain lines, no escape.
    status, written = in_terminal("probe", "--backends", backends, env={"TERM": "dumb"})
    assert status == 0 and _ESC not in written, written[-2000:]
    assert written.startswith("probing replay:chromium …\r\nprobed replay:chromium: ")
    # NO_COLOR: the bar is drawn in place (cursor control), but in no colour.
    status, written = in_terminal("probe", "--backends", backends, env={"NO_COLOR": "1"})
    assert status == 0 and "\x1b[2K" in written and "probing replay" not in written
    assert not _COLOUR.search(written), _COLOUR.findall(written)[:5]
    # neither: the bar in colour (what the two above leave out is there to leave out)
    status, written = in_terminal("probe", "--backends", backends, env={})
    assert status == 0 and _COLOUR.search(written)


def test_replay_status_is_a_plain_line_every_few_seconds_when_stderr_is_a_pipe(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(live, "PLAIN_STATUS_S", 0.3)
    assert cli.main(["replay", str(CHROMIUM), "--duration", "2"]) == 0
    err = capsys.readouterr().err
    assert err.startswith("serving until Ctrl-C or SIGTERM\n"), err
    statuses = [line for line in err.splitlines() if " · " in line]
    assert 2 <= len(statuses) <= 7, err  # (every 0.3 s at most, for 2 s)
    assert all(re.fullmatch(r"serving +\d+\.\d s · 0 connections · 0 unmatched commands", s)
               for s in statuses), statuses
    assert _ESC not in err


# -- c: Ctrl-C in probe: the partial matrix, exit 130, no browser left ------------------

class Watched:
    """``cdpnb probe`` in a subprocess whose stderr (a pipe: plain progress lines) is
    read as it comes, and whose descendants (browsers, their reapers) are noted.

    :meth:`interrupt` stops the reapers (SIGSTOP) before the Ctrl-C: a reaper ends its
    browser once the command is gone, which would hide a browser the command left
    running; stopped, it cannot, so a browser gone when the command ended was ended by
    the command. (A stopped reaper makes the command's ``dismiss`` wait 5 s, then kill
    it.) :meth:`left_running` lets them go on after looking."""

    def __init__(self, *args: str) -> None:
        env = {**os.environ, "COLUMNS": "80"}
        self.process = subprocess.Popen([sys.executable, "-m", "cdpnb.cli", "probe", *args],
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                        text=True, env=env, cwd=ROOT)
        self.lines: list[str] = []
        self.descendants: dict[int, psutil.Process] = {}
        self.names: dict[int, str] = {}
        self.reapers: list[psutil.Process] = []
        assert self.process.stderr is not None
        stderr = self.process.stderr
        self.reader = threading.Thread(target=lambda: self.lines.extend(stderr), daemon=True)
        self.reader.start()

    def wait_until(self, condition: Callable[[], bool], what: str, timeout: float = 180
                   ) -> None:
        deadline = time.monotonic() + timeout
        while not condition():
            self._note_descendants()
            assert self.process.poll() is None, ("ended before " + what, self.lines)
            assert time.monotonic() < deadline, (what, self.lines)
            time.sleep(0.05)
        self._note_descendants()

    def _note_descendants(self) -> None:
        with contextlib.suppress(psutil.NoSuchProcess):
            for child in psutil.Process(self.process.pid).children(recursive=True):
                if child.pid not in self.descendants:
                    with contextlib.suppress(psutil.NoSuchProcess):
                        self.names[child.pid] = " ".join(child.cmdline())
                        self.descendants[child.pid] = child

    def said(self, prefix: str) -> bool:
        return any(line.startswith(prefix) for line in self.lines)

    def interrupt(self) -> tuple[int, str, str]:
        self.reapers = [p for pid, p in self.descendants.items()
                        if "reaper.py" in self.names[pid] and _running(p)]
        for reaper in self.reapers:
            reaper.suspend()
        self.process.send_signal(signal.SIGINT)
        out, _ = self.process.communicate(timeout=120)
        self.reader.join(timeout=10)
        return self.process.returncode, out, "".join(self.lines)

    def left_running(self, timeout: float = 10) -> list[str]:
        """What the command left running when it ended (its reapers stopped; a process
        of a browser may take a moment to exit), then anything still running once the
        reapers go on."""
        reapers = {p.pid for p in self.reapers}
        left = self._running(timeout, but=reapers)
        for reaper in self.reapers:
            with contextlib.suppress(psutil.NoSuchProcess):
                reaper.resume()
        self.reapers = []
        return left or self._running(timeout)

    def _running(self, timeout: float, but: set[int] | None = None) -> list[str]:
        deadline = time.monotonic() + timeout
        while True:
            alive = [f"{pid} {self.names[pid]}" for pid, p in self.descendants.items()
                     if pid not in (but or set()) and _running(p)]
            if not alive or time.monotonic() > deadline:
                return alive
            time.sleep(0.1)

    def close(self) -> None:
        for reaper in self.reapers:  # (a test that failed before looking)
            with contextlib.suppress(psutil.NoSuchProcess):
                reaper.resume()
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


def _running(process: psutil.Process) -> bool:
    with contextlib.suppress(psutil.NoSuchProcess):
        return bool(process.is_running() and process.status() != psutil.STATUS_ZOMBIE)
    return False


@contextlib.contextmanager
def watched(*args: str) -> Iterator[Watched]:
    command = Watched(*args)
    try:
        yield command
    finally:
        command.close()


def _checks_recorded(trace: Path) -> int:
    """The probe.check notes in a trace being written (gzip, flushed per read)."""
    if not trace.exists():
        return 0
    text = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(trace.read_bytes())
    return text.count(b'"probe.check"')


@pytest.mark.browser
def test_ctrl_c_in_probe_prints_the_partial_matrix_and_leaves_no_browser(
        tmp_path: Path) -> None:
    # --out holds a whole result already (as datasets/probes does)
    shutil.copy(PROBES / "probe.json", tmp_path / "probe.json")
    with watched("--backends", "chromium,firefox", "--out", str(tmp_path)) as probe:
        probe.wait_until(lambda: probe.said("probed chromium: "), "chromium was probed")
        # ... and firefox is under way: a check of it finished (it has a browser, a
        # supervisor and a trace being written when Ctrl-C comes)
        probe.wait_until(lambda: _checks_recorded(tmp_path / "firefox.native.jsonl.gz") >= 1,
                         "a firefox check finished")
        assert any("firefox" in name for name in probe.names.values()), probe.names
        assert any("reaper.py" in name for name in probe.names.values()), probe.names
        status, out, err = probe.interrupt()
        assert probe.left_running() == []
    assert status == INTERRUPTED, (out, err)
    assert "Traceback" not in err and f"probed chromium: {len(CHECKS)}/{len(CHECKS)}" in err
    lines = out.splitlines()
    assert lines[0] == ("Partial matrix: the probe was interrupted (Ctrl-C) before every "
                        "check ran.")
    # (a path wider than the terminal is printed whole, on a line of its own)
    assert all(len(line) <= 80 or " " not in line.strip() for line in lines), out
    rows = {found[1]: [found[2], found[3]] for found in (
        re.fullmatch(r"(evaluate|dialogs nested|command RTT ms) {2,}(\S+) +(\S+) *", line)
        for line in lines) if found}
    assert rows["evaluate"] == ["✓", "✓"]  # firefox's first check finished
    assert rows["dialogs nested"] == ["✓", "—"]  # not reached: the interrupt came first
    assert rows["command RTT ms"][1] == "—"
    assert "— not run  ✓… some of its checks did not run" in out
    assert re.search(rf"^firefox +\d+ of {len(CHECKS)} checks$", out, re.M), out
    # what finished is saved, partial, beside the whole result that was there (never
    # over it): probe.partial.json says which checks did not run
    assert (tmp_path / "probe.json").read_bytes() == (PROBES / "probe.json").read_bytes()
    assert "probe.partial.json" in " ".join(out.split())
    assert (tmp_path / "matrix.partial.md").read_text().startswith("**Partial matrix**")
    saved = json.loads((tmp_path / "probe.partial.json").read_text())
    not_run = saved["backends"]["firefox"]["not_run"]
    assert "dialog.alert.nested" in not_run and "runtime.evaluate" not in not_run
    assert "not_run" not in saved["backends"]["chromium"]
    ran = {r["check"] for r in saved["results"] if r["backend"] == "firefox"}
    assert ran and ran.isdisjoint(not_run) and len(ran) + len(not_run) == len(CHECKS)
    # the interrupted supervisor stopped cleanly: its trace has its footer
    import cdpnb

    assert cdpnb.Trace.load(tmp_path / "firefox.native.jsonl.gz").complete
    # `cdpnb matrix` of the saved result shows it partial too (its own status: 0)
    matrix = cdpnb_command("matrix", str(tmp_path / "probe.partial.json"))
    assert matrix.returncode == 0 and matrix.stdout.startswith("Partial matrix:")
    Statuses("probe").saw(status, out)


@pytest.mark.browser
def test_ctrl_c_in_probe_with_json_says_partial(tmp_path: Path) -> None:
    with watched("--backends", "headless-shell,chromium", "--json") as probe:
        probe.wait_until(lambda: probe.said("probing chromium (2 of 2)"),
                         "headless-shell was probed")
        status, out, err = probe.interrupt()
        assert probe.left_running() == []
    assert status == INTERRUPTED, err
    data = json.loads(out)
    assert data["partial"] is True and data["exit_status"] == INTERRUPTED
    assert list(data["not_run"]) == ["chromium"] and "headless-shell" not in data["not_run"]
    assert set(data["matrix"]) == {"headless-shell", "chromium"}
    assert data["matrix"]["headless-shell"]["dialogs main"] == "✓"
    not_run = set(data["not_run"]["chromium"])
    ran = {r["check"] for r in data["results"] if r["backend"] == "chromium"}
    assert ran | not_run == {c.name for c in CHECKS} and not ran & not_run
    if not ran:  # interrupted before its first check: every cell not run
        assert set(data["matrix"]["chromium"].values()) - {"cdp"} == {"—"}
    Statuses("probe").saw(status, out)


def test_a_probe_interrupted_before_anything_ran_is_all_not_run(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C while the first backend starts (here: while the scenario server starts):
    every backend named, every cell not run, 130."""
    import cdpnb.probes.run as run

    def interrupted(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(run, "ScenarioServer", interrupted)
    monkeypatch.setenv("COLUMNS", "80")
    assert cli.main(["probe", "--backends", f"replay:{CHROMIUM},firefox"]) == INTERRUPTED
    out = capsys.readouterr().out
    assert out.startswith("Partial matrix:")
    assert re.search(r"^replay:chromium +every check$", out, re.M)
    assert re.search(r"^firefox +every check$", out, re.M)
    evaluate = next(line for line in out.splitlines() if line.startswith("evaluate "))
    assert evaluate.split()[1:] == ["—", "—"]

