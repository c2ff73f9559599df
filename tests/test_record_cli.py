"""``cdpnb record`` exits 0 only when its trace holds everything it recorded (issue 25,
item 4), and what cdpnb writes for a recording is its owner's alone (item 6).

The command is run as a user runs it (``python -m cdpnb.cli record ...``, exit status
and output read); a full disk is a file size limit (RLIMIT_FSIZE) on the command's
process, or ``/dev/full``. Modes are read from every file and folder a recording, a
Parquet export and a small campaign leave behind, under a umask that would let others
read them.
"""

from __future__ import annotations

import errno
import json
import os
import re
import socket
import stat
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import cdpnb
from cdpnb.backends import LAUNCHABLE
from cdpnb.campaign.cells import Cell
from cdpnb.campaign.layout import Layout
from cdpnb.cli.record import RECORDABLE
from cdpnb.errors import CdpnbWarning
from cdpnb.probes.server import ScenarioServer
from cdpnb.protocol import Event
from cdpnb.testing import ScriptedBrowser
from cdpnb.trace import Recorder, Trace
from cdpnb.trace import recorder as recorder_module

ROOT = Path(__file__).resolve().parent.parent
PROBE_TRACE = ROOT / "datasets" / "probes" / "headless-shell.native.jsonl.gz"
FORMATS = (".jsonl", ".jsonl.gz", ".jsonl.zst")
#: What the child runs: the limits first, then ``python -m cdpnb.cli`` as it is.
_LAUNCHER = """\
import os, resource, runpy, sys
umask, limit = int(sys.argv[1]), int(sys.argv[2])
if umask >= 0:
    os.umask(umask)
if limit > 0:  # Python ignores SIGXFSZ: a write past the limit fails with EFBIG
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
sys.argv = ["cdpnb", *sys.argv[3:]]
runpy.run_module("cdpnb.cli", run_name="__main__", alter_sys=True)
"""


def cdpnb_record(*args: str | Path, umask: int = -1, limit_bytes: int = 0,
                 timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """``cdpnb record ARGS`` in a process of its own, with a umask and a file size limit
    (which reach that process only, not the browser it attaches to)."""
    env = {**os.environ, "COLUMNS": "80"}
    return subprocess.run(
        [sys.executable, "-c", _LAUNCHER, str(umask), str(limit_bytes), "record",
         *map(str, args)], capture_output=True, text=True, timeout=timeout, env=env, cwd=ROOT)


def refused_port() -> int:
    """A loopback port nothing listens on (bound, read, let go)."""
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port: int = free.getsockname()[1]
    return port


def words(text: str) -> str:
    """What was said, whatever the width it was wrapped to (at spaces: the CLI keeps
    words whole)."""
    return " ".join(text.split())


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@contextmanager
def umask(value: int) -> Iterator[None]:
    before = os.umask(value)
    try:
        yield
    finally:
        os.umask(before)


@pytest.fixture(scope="module")
def chatty(site: ScenarioServer) -> str:
    """A page that logs ~1000 hard-to-compress console lines a second."""
    return site.add("/record-cli/chatty", "<p>chatty</p><script>setInterval(() => "
                    "console.log(Math.random().toString(36).repeat(12)), 1)</script>")


# -- bad input: a usage error naming what was wrong -------------------------------------

@pytest.mark.parametrize(("args", "said"), [
    (["not-a-url"], "URL must be an absolute http://, https://, file:, data: or about: URL, "
                    "got 'not-a-url'"),
    (["example.com"], "URL must be an absolute"),
    (["about:blank", "--connect", "not-an-endpoint"],
     "--connect must be a ws://, wss://, http:// or https:// endpoint URL, got "
     "'not-an-endpoint'"),
    (["about:blank", "--connect", "ws://127.0.0.1:9/", "--backend", "firefox"],
     "--backend launches a browser and --connect attaches to one: give one of them"),
    (["about:blank", "--out", "{folder}"], "--out must name a trace file, got the folder"),
    (["about:blank", "--duration", "0"], "--duration must be a positive number of seconds, "
                                         "got 0"),
    (["about:blank", "--dialog-timeout", "nan"],
     "--dialog-timeout must be a positive number of seconds, got nan"),
    (["about:blank", "--dialog-timeout", "300000"],
     "--dialog-timeout is in seconds: 300000 s is more than the 3600 s cdpnb takes; did you "
     "mean 300?"),
    (["about:blank", "--backend", "node"], "argument --backend: invalid choice: 'node'"),
    (["about:blank", "--dialogs", "ok"], "argument --dialogs: invalid choice: 'ok'"),
    (["about:blank", "--dialogs", "dismiss", "--dialog-timeout", "5"],
     "--dialog-timeout is how long a dialog waits for an answer: it goes with --dialogs "
     "wait, not --dialogs dismiss"),
    (["about:blank", "--dialogs", "accept", "--policy", "auto_accept"],
     "--policy is the old name of --dialogs: give one of them"),
])
def test_what_record_cannot_use_is_a_usage_error_that_names_it(
        tmp_path: Path, args: list[str], said: str) -> None:
    args = [a.replace("{folder}", str(tmp_path)) for a in args]
    out = [] if "--out" in args else ["--out", str(tmp_path / "t.jsonl")]
    done = cdpnb_record(*args, *out)
    assert done.returncode == 2, done.stderr
    assert said in words(done.stderr), done.stderr
    assert done.stderr.startswith("usage: cdpnb record ") and "Traceback" not in done.stderr
    assert done.stdout == "" and list(tmp_path.iterdir()) == []  # nothing started


def test_help_names_every_kind_it_launches_and_every_trace_format() -> None:
    done = cdpnb_record("--help")
    assert done.returncode == 0
    text = words(done.stdout)
    # Every kind cdpnb.launch starts but the runtimes (no page to open a URL in).
    assert tuple(kind for kind in LAUNCHABLE if kind not in ("node", "deno", "bun")) \
        == RECORDABLE
    assert {"firefox", "chromium+bidi"} <= set(RECORDABLE)
    assert f"browser to launch: {', '.join(RECORDABLE)} (default chromium)" in text
    assert ".jsonl, .jsonl.gz (gzip) or .jsonl.zst (zstd)" in text
    assert "(CDP, WebDriver BiDi or WebDriver classic)" in text
    assert "--dialogs {wait,accept,dismiss} what to do when the page opens an alert" in text


# -- an endpoint or a page that cannot be reached: exit 1, one line -----------------------

def test_an_endpoint_nobody_answers_is_one_line_and_exit_1(tmp_path: Path) -> None:
    endpoint = f"ws://127.0.0.1:{refused_port()}/"
    trace = tmp_path / "t.jsonl"
    done = cdpnb_record("about:blank", "--connect", endpoint, "--out", trace)
    assert done.returncode == 1
    said = words(done.stderr)
    assert done.stdout == "" and said.count("cdpnb record:") == 1, done.stderr
    assert said.startswith("cdpnb record: cannot start: ") and "Traceback" not in said
    assert endpoint.removesuffix("/") in said and "Connection refused" in said
    assert Trace.load(trace).records == ()  # the header and footer only: nothing lost

    as_json = cdpnb_record("about:blank", "--connect", endpoint, "--out", trace, "--json")
    assert as_json.returncode == 1
    summary = json.loads(as_json.stdout)
    assert summary["error"].startswith("cannot start: ") and summary["messages"] == 0


def test_every_path_records_a_page_and_ends_at_one_it_cannot_load(
        every_path: cdpnb.Backend, site: ScenarioServer, tmp_path: Path) -> None:
    """Attached with --connect, on CDP (chromium, headless-shell) and WebDriver BiDi
    (firefox, chromium+bidi); under umask 0 the trace and its new folder stay private."""
    trace = tmp_path / "new" / "loaded.jsonl"
    done = cdpnb_record(site.url("/blank"), "--connect", every_path.cdp_url, "--out", trace,
                        "--duration", "1", umask=0)
    assert done.returncode == 0, done.stderr
    recorded = re.fullmatch(r"recorded (\d+) messages in \d+\.\d s to (.+) \(0 dialogs, "
                            r"1 frame\)", words(done.stdout))
    assert recorded is not None and recorded.group(2) == str(trace), done.stdout
    loaded = Trace.load(trace)
    assert len(loaded.records) == int(recorded.group(1)) and loaded.complete
    assert loaded.header["protocol"] == every_path.protocol
    assert mode(trace) == 0o600 and mode(trace.parent) == 0o700

    dead = f"http://127.0.0.1:{refused_port()}/"
    trace = tmp_path / "refused.jsonl"
    done = cdpnb_record(dead, "--connect", every_path.cdp_url, "--out", trace,
                        "--duration", "30")
    assert done.returncode == 1 and done.stdout == "", done.stderr
    said = words(done.stderr)
    failed = re.search(rf"cdpnb record: navigating to {re.escape(dead)} failed: .*"
                       r"CONNECTION_REFUSED; the trace so far \((\d+) messages\) is in "
                       rf"{re.escape(str(trace))}$", said)
    assert failed is not None and said.count(dead) == 1, done.stderr
    loaded = Trace.load(trace)
    assert len(loaded.records) == int(failed.group(1)) and loaded.complete


@pytest.mark.browser
@pytest.mark.parametrize("kind", ["firefox", "chromium+bidi"])
def test_record_launches_the_webdriver_bidi_kinds(kind: str, site: ScenarioServer,
                                                  tmp_path: Path) -> None:
    trace = tmp_path / f"{kind}.jsonl.zst"
    done = cdpnb_record(site.url("/blank"), "--backend", kind, "--out", trace,
                        "--duration", "1", "--json")
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    loaded = Trace.load(trace)
    assert summary["error"] is None and summary["write_errors"] == 0
    assert summary["messages"] == summary["recorded"] == len(loaded.records) > 0
    assert loaded.header["protocol"] == "bidi" and loaded.header["backend"]["kind"] == kind


# -- the page's dialogs: answered as --dialogs says, and recorded -------------------------

#: An alert, then a prompt whose answer the page shows in a last alert: the trace holds
#: what the page's prompt() returned.
DIALOGS_PAGE = ("<title>dialogs</title><script>setTimeout(() => { alert('hello'); "
                "const name = prompt('name?', 'Ada'); alert('got ' + name); }, 100)</script>")


@pytest.mark.parametrize(("answer", "accepted", "typed", "got"), [
    (["--dialogs", "accept"], True, "Ada", "got Ada"),
    (["--dialogs", "dismiss"], False, None, "got null"),
    (["--policy", "auto_accept"], True, "Ada", "got Ada"),  # (its name before --dialogs)
], ids=["accept", "dismiss", "policy"])
def test_record_answers_the_pages_dialogs_as_asked_and_records_them(
        headless_shell: cdpnb.Backend, site: ScenarioServer, tmp_path: Path,
        answer: list[str], accepted: bool, typed: str | None, got: str) -> None:
    page = site.add(f"/record-cli/dialogs-{answer[1]}", DIALOGS_PAGE)
    trace = tmp_path / "dialogs.jsonl.zst"
    done = cdpnb_record(page, "--connect", headless_shell.cdp_url, "--out", trace, *answer,
                        "--duration", "3")
    assert done.returncode == 0, done.stderr
    assert re.fullmatch(r"recorded \d+ messages in \d+\.\d s to .+ \(3 dialogs, 1 frame\)",
                        words(done.stdout)), done.stdout
    assert "waits for an answer" not in done.stderr  # (none waited)
    closed = Trace.load(trace).final_state().recent_dialogs
    assert [(d.type, d.message) for d in closed] == [
        ("alert", "hello"), ("prompt", "name?"), ("alert", got)]
    assert {d.closed_by for d in closed} == {"auto_policy"}
    assert [(d.accepted, d.prompt_text) for d in closed] == [
        (accepted, None), (accepted, typed), (accepted, None)]


def test_record_says_once_that_a_dialog_waits_and_how_to_answer_it(
        headless_shell: cdpnb.Backend, site: ScenarioServer, tmp_path: Path) -> None:
    """``--dialogs wait`` (the default): the first dialog left open is said, with what
    answers it at once; each is dismissed after --dialog-timeout."""
    page = site.add("/record-cli/dialogs-wait", DIALOGS_PAGE)
    trace = tmp_path / "waited.jsonl"
    done = cdpnb_record(page, "--connect", headless_shell.cdp_url, "--out", trace,
                        "--dialog-timeout", "0.5", "--duration", "4")
    assert done.returncode == 0, done.stderr
    said = words(done.stderr)
    assert said.count("waits for an answer") == 1, done.stderr
    assert ("hint: the page opened an alert (d-1); it waits for an answer from another "
            "client or a person at the browser, and cdpnb dismisses it after 0.5 s. To "
            "answer each dialog at once: --dialogs accept, or --dialogs dismiss.") in said
    closed = Trace.load(trace).final_state().recent_dialogs
    assert [(d.message, d.closed_by, d.accepted) for d in closed] == [
        ("hello", "watchdog", False), ("name?", "watchdog", False),
        ("got null", "watchdog", False)]


# -- a trace that cannot be written: exit 1, and how much of it is there ------------------

def test_a_trace_that_cannot_be_created_or_started_is_exit_1(
        headless_shell: cdpnb.Backend, tmp_path: Path) -> None:
    before = mode(Path("/dev/full"))
    done = cdpnb_record("about:blank", "--connect", headless_shell.cdp_url, "--out",
                        "/dev/full")
    assert done.returncode == 1 and done.stdout == ""
    assert words(done.stderr) == ("cdpnb record: cannot write the trace /dev/full: No space "
                                  "left on device")
    assert mode(Path("/dev/full")) == before  # a device is not made private

    (tmp_path / "a-file").touch()
    done = cdpnb_record("about:blank", "--connect", headless_shell.cdp_url, "--out",
                        tmp_path / "a-file" / "t.jsonl")
    assert done.returncode == 1
    assert words(done.stderr) == (f"cdpnb record: cannot write the trace "
                                  f"{tmp_path}/a-file/t.jsonl: Not a directory")


@pytest.mark.parametrize("suffix", FORMATS)
def test_a_full_disk_ends_the_recording_saying_how_many_messages_the_trace_holds(
        headless_shell: cdpnb.Backend, chatty: str, tmp_path: Path, suffix: str) -> None:
    """The file size limit reached mid-recording: exit 1, never 'recorded N messages';
    the line says how many messages the file holds, and it holds exactly those (cut back
    to its last whole flush: no half line, no half compressed block)."""
    trace = tmp_path / f"t{suffix}"
    limit = 48 * 1024
    done = cdpnb_record(chatty, "--connect", headless_shell.cdp_url, "--out", trace,
                        "--duration", "60", limit_bytes=limit)
    assert done.returncode == 1 and done.stdout == "", (done.stdout, done.stderr)
    failed = re.search(rf"cdpnb record: writing the trace {re.escape(str(trace))} failed "
                       r"\(File too large\): it holds the first (\d+) messages and nothing "
                       r"after them is recorded \((\d+) messages lost\)$", words(done.stderr))
    assert failed is not None, done.stderr
    held, lost = int(failed.group(1)), int(failed.group(2))
    assert held > 0 and lost > 0
    assert trace.stat().st_size <= limit and mode(trace) == 0o600
    loaded = Trace.load(trace)
    assert len(loaded.records) == held
    # the stream just stops where writing stopped; nothing in it is damaged
    assert loaded.problems == ("no footer: the recording did not close cleanly (a crash, "
                               "or still being written)",)
    if suffix == ".jsonl":  # and the same as JSON
        trace.unlink()
        done = cdpnb_record(chatty, "--connect", headless_shell.cdp_url, "--out", trace,
                            "--duration", "60", "--json", limit_bytes=limit)
        assert done.returncode == 1
        summary = json.loads(done.stdout)
        assert summary["messages"] == len(Trace.load(trace).records) > 0
        assert summary["write_errors"] > 0 and summary["recorded"] > summary["messages"]
        assert summary["error"].startswith(f"writing the trace {trace} failed")


async def test_a_supervisor_refuses_a_trace_it_cannot_start() -> None:
    browser = ScriptedBrowser()
    with pytest.raises(OSError, match=r"No space left on device: '/dev/full'"):
        await cdpnb.Supervisor.start(browser, record="/dev/full")
    assert browser.connections == 0  # refused before connecting


async def test_a_trace_that_stops_being_writable_is_said_not_only_counted(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A disk that fills up mid-recording (writes fail with ENOSPC after a budget, the
    last one partly written as the kernel does): the supervisor warns at the next call
    and keeps it in hints; the file holds exactly the first ``written`` messages."""
    browser = ScriptedBrowser()
    path = tmp_path / "t.jsonl"
    sup = await cdpnb.Supervisor.start(browser, record=path)
    recorder = sup.recorder
    assert recorder is not None and recorder.failure is None
    budget = path.stat().st_size + 2000
    write = recorder_module._Descriptor.write

    def filling_up(self: Any, data: bytes, /) -> int:
        room = budget - self.size
        if len(data) <= room or self.discarding:
            return write(self, data)
        write(self, data[:max(room, 0)])
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(recorder_module._Descriptor, "write", filling_up)
    try:
        for i in range(100):
            await browser.emit("Runtime.consoleAPICalled",
                               {"type": "log", "args": [{"type": "string", "value": "x" * 90}],
                                "executionContextId": 1, "timestamp": i},
                               session_id=browser.page_session_id)
        with pytest.warns(CdpnbWarning, match=r"writing the trace .* failed \(No space left "
                                              r"on device\): it holds the first \d+ messages"):
            sup.snapshot()
        assert sup.hints == [recorder.failure]
    finally:
        await sup.stop()
    assert recorder.write_errors > 0 and recorder.error is not None
    assert path.stat().st_size <= budget
    assert len(Trace.load(path).records) == recorder.written


# -- private files and folders -------------------------------------------------------------

@pytest.mark.parametrize("suffix", FORMATS)
def test_a_recording_is_private_from_its_creation_whatever_the_umask(
        tmp_path: Path, suffix: str) -> None:
    path = tmp_path / "new" / "deeper" / f"t{suffix}"
    with umask(0):
        recorder = Recorder(path)
        assert mode(path) == 0o600  # before a message is in it
        recorder(Event("Page.javascriptDialogOpening", {"message": "secret?"}, "S", 1.0, 1.0))
        recorder.close()
    assert mode(path) == 0o600
    assert mode(tmp_path / "new") == mode(tmp_path / "new" / "deeper") == 0o700
    assert mode(tmp_path) == 0o700  # pytest's: a folder that was there keeps its mode

    existing = tmp_path / f"existing{suffix}"
    existing.write_bytes(b"")
    existing.chmod(0o644)
    Recorder(existing).close()
    assert mode(existing) == 0o600
    assert len(Trace.load(existing).records) == 0


def test_a_parquet_export_is_private_from_its_creation(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    modes_while_writing: list[int] = []
    write_table = pq.write_table

    def watched(table: pa.Table, where: Any, **options: Any) -> None:
        modes_while_writing.append(stat.S_IMODE(os.fstat(where.fileno()).st_mode))
        write_table(table, where, **options)

    monkeypatch.setattr(pq, "write_table", watched)
    trace = Trace.load(PROBE_TRACE)
    with umask(0):
        exported = trace.to_parquet(tmp_path / "exports" / "probe.parquet")
    assert mode(exported) == 0o600 and mode(exported.parent) == 0o700
    exported.chmod(0o644)
    trace.to_parquet(exported)  # written over: private again
    assert mode(exported) == 0o600 and modes_while_writing == [0o600, 0o600]
    assert len(Trace.from_parquet(exported).records) == len(trace.records)


def test_a_campaigns_layout_writes_every_file_private_and_whole(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each file is written to a temporary name created 0600 (checked at the rename:
    never readable by others, not even before it is complete), then renamed."""
    replaced: list[tuple[str, int]] = []
    replace = os.replace

    def watched(source: Any, target: Any) -> None:
        replaced.append((Path(target).name, mode(Path(source))))
        replace(source, target)

    monkeypatch.setattr(os, "replace", watched)  # (layout calls os.replace)
    layout = Layout(tmp_path / "new" / "campaign")
    cell = Cell("ws://127.0.0.1:9/devtools/browser/x", "runtime.evaluate", 3)
    with umask(0):
        layout.create()
        layout.write_manifest({"cdpnb_campaign": 1, "runs": []})
        assert layout.start_attempt(cell) == 1 and layout.start_attempt(cell) == 2
        layout.write(layout.checks_file(cell), pa.table({"a": [1]}))
    assert replaced == [("campaign.json", 0o600), (".r00003.attempts", 0o600),
                        (".r00003.attempts", 0o600), ("r00003.parquet", 0o600)]
    assert json.loads(layout.manifest.read_text()) == {"cdpnb_campaign": 1, "runs": []}
    assert layout.finished() == {cell} and layout.attempts(cell) == 2
    _assert_private_tree(tmp_path / "new", files=3, folders=5)


def test_a_probes_results_are_private_whatever_the_umask(tmp_path: Path) -> None:
    """``cdpnb probe --out DIR`` (a replayed trace: no browser) under a login shell's
    umask: the folders it creates 0700, ``probe.json`` and ``matrix.md`` 0600, and so
    the partial result an interrupted probe saves beside them."""
    from cdpnb import cli
    from cdpnb.cli import probing
    from cdpnb.probes import ProbeResult

    out = tmp_path / "new" / "probe"
    with umask(0o022):
        assert cli.main(["probe", "--backends", f"replay:{PROBE_TRACE}",
                         "--out", str(out)]) == 0
        probing._save(ProbeResult(), out, interrupted=True)
        ProbeResult().save(tmp_path / "new" / "saved")  # the library's own way
    assert {path.name for path in out.iterdir()} == {
        "probe.json", "matrix.md", probing.PARTIAL_JSON, probing.PARTIAL_MARKDOWN}
    _assert_private_tree(tmp_path / "new", files=6, folders=3)


@pytest.mark.browser  # the campaign launches its headless-shell
def test_a_campaign_leaves_only_private_files_and_folders(tmp_path: Path) -> None:
    """Cells that succeed (row, latencies, trace) and cells that fail every attempt
    (failure row, attempts count, trace), the manifest, and every folder: under the
    umask of a login shell (022), which would leave them readable by all."""
    out = tmp_path / "new" / "campaign"
    nobody = f"ws://127.0.0.1:{refused_port()}/devtools/browser/none"
    with umask(0o022):
        result = cdpnb.campaign(["headless-shell", nobody],
                                ["runtime.evaluate", "dialog.alert.main"], 1, retries=0,
                                out=out, progress=False)
    assert result.run is not None and (result.run.ran, result.run.failed) == (2, 2)
    names = {path.name for path in out.rglob("*") if path.is_file()}
    assert {"campaign.json", "r00000.parquet", "r00000.jsonl.gz", "r00000.failed.parquet",
            ".r00000.attempts"} <= names
    _assert_private_tree(tmp_path / "new", files=12, folders=12)


def _assert_private_tree(top: Path, *, files: int, folders: int) -> None:
    """``top`` and everything under it: files 0600, folders 0700, as many as said."""
    found = [top, *top.rglob("*")]
    shared = [f"{oct(mode(p))} {p.relative_to(top.parent)}" for p in found
              if mode(p) != (0o700 if p.is_dir() else 0o600)]
    assert shared == []
    assert (sum(p.is_file() for p in found), sum(p.is_dir() for p in found)) == (files,
                                                                                 folders)
