"""The ``deno`` and ``bun`` backends against the real runtimes: launch, evaluate,
raw commands, a recorded trace that loads and replays, their probe rows, and their end.

Bun speaks the WebKit Inspector Protocol: the same calls must give the same values and
errors as over CDP (``cdpnb.protocol.wip``), and its trace must hold WIP as it came.
One runtime of each kind per module (the module fixtures).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from test_launch import check_ended, pid_alive
from test_more_backends import sockets_of

import cdpnb
import cdpnb.backends.bun as bun_mod
from cdpnb import Trace
from cdpnb.backends import backend_available
from cdpnb.backends.bun import bun_binaries, find_bun
from cdpnb.backends.bun import keepalive_script as bun_keepalive
from cdpnb.backends.deno import find_deno
from cdpnb.backends.deno import keepalive_script as deno_keepalive
from cdpnb.backends.process import read_output
from cdpnb.errors import EvaluateError
from cdpnb.probes import CHECKS, ProbeResult
from cdpnb.probes.expected import expected_status
from cdpnb.protocol import Command, Reply
from cdpnb.transport.discovery import get_json

RUNTIMES = ("deno", "bun")
#: What each runtime's endpoint looks like, and what it says it is.
URLS = {"deno": re.compile(r"^ws://127\.0\.0\.1:(\d+)/[0-9a-f-]{36}$"),
        "bun": re.compile(r"^ws://127\.0\.0\.1:(\d+)/cdpnb-[0-9a-f]{16}$")}
VERSIONS = {"deno": re.compile(r"^Deno/\d+\.\d+\.\d+$"), "bun": re.compile(r"^Bun/\d+\.\d+\.\d+$")}
PROTOCOLS = {"deno": "cdp", "bun": "wip"}
NODE_URL = re.compile(r"^ws://127\.0\.0\.1:(\d+)/[0-9a-f-]{36}$")


@pytest.fixture(scope="module", params=RUNTIMES)
def runtime(request: pytest.FixtureRequest) -> Iterator[cdpnb.Backend]:
    with cdpnb.launch(request.param) as backend:
        yield backend


@pytest.fixture
async def supervised(runtime: cdpnb.Backend) -> AsyncIterator[cdpnb.Supervisor]:
    sup = await cdpnb.Supervisor.start(runtime)
    try:
        yield sup
    finally:
        await sup.stop()


@pytest.mark.browser
def test_launch_is_one_runtime_on_loopback(runtime: cdpnb.Backend) -> None:
    kind = runtime.kind
    found = URLS[kind].match(runtime.url)
    assert found, runtime.url
    port = int(found[1])
    assert runtime.http_url == f"http://127.0.0.1:{port}"
    assert runtime.protocol == PROTOCOLS[kind]
    assert VERSIONS[kind].match(runtime.version), runtime.version
    assert runtime.running and pid_alive(runtime.pid)
    assert os.readlink(f"/proc/{runtime.pid}/exe") == os.path.realpath(runtime.executable)
    # the inspector is its one listener, on 127.0.0.1 (never 0.0.0.0 or ::), no UDP
    assert sockets_of([runtime.pid]) == {"tcp": [f"127.0.0.1:{port}"], "udp": []}
    info = runtime.describe()
    assert info["kind"] == kind and info["runtime_only"] is True
    assert info["protocol"] == PROTOCOLS[kind] and info["version"] == runtime.version
    # the keepalive script is in the fresh work dir, and names this Python as its parent
    script = runtime._browser.workdir / "keepalive.js"
    assert str(script) == runtime.args[-1] and str(os.getpid()) in script.read_text()
    # its caches in the fresh work dir (Deno), no update check (Deno), no crash upload
    # (Bun): neither opened any socket but the inspector's in 3 s (strace -f, by hand)
    environ = Path(f"/proc/{runtime.pid}/environ").read_bytes().split(b"\0")
    wanted = {"deno": [f"DENO_DIR={runtime._browser.workdir / 'deno-dir'}".encode(),
                       b"DENO_NO_UPDATE_CHECK=1"], "bun": [b"DO_NOT_TRACK=1"]}[kind]
    assert set(wanted) <= set(environ)
    version = get_json(runtime.http_url + "/json/version")
    assert "webSocketDebuggerUrl" not in version
    if kind == "bun":
        # Bun says "Bun" and its version in User-Agent; cdpnb shows the latter
        assert version["Browser"] == "Bun" and version["User-Agent"] == runtime.version
        assert runtime.version_info["Browser (served)"] == "Bun"
        with pytest.raises(cdpnb.EndpointError, match="404"):
            get_json(runtime.http_url + "/json/list")
    else:
        assert version["Browser"] == runtime.version
        targets = get_json(runtime.http_url + "/json/list")
        assert [t["webSocketDebuggerUrl"] for t in targets] == [runtime.url]


@pytest.mark.browser
async def test_evaluate_gives_values_promises_and_errors_as_over_cdp(
        supervised: cdpnb.Supervisor, runtime: cdpnb.Backend) -> None:
    sup = supervised
    assert sup.protocol == PROTOCOLS[runtime.kind]
    assert await sup.evaluate("1 + 1") == 2
    assert await sup.evaluate("Promise.resolve(2)") == 2
    assert await sup.evaluate("new Promise(r => setTimeout(() => r({a: [1, 'x']}), 20))") \
        == {"a": [1, "x"]}
    assert await sup.evaluate("({a: {b: null}, c: 'd'})") == {"a": {"b": None}, "c": "d"}
    assert await sup.evaluate("undefined") is cdpnb.Undefined
    nan = await sup.evaluate("NaN")
    assert nan != nan
    assert await sup.evaluate("-Infinity") == float("-inf")
    assert await sup.evaluate("2n ** 64n") == 2**64
    function = await sup.evaluate("(function named() {})")
    assert isinstance(function, cdpnb.RemoteObject) and function.type == "function"
    with pytest.raises(EvaluateError, match="Error: boom"):
        await sup.evaluate("throw new Error('boom')")
    with pytest.raises(EvaluateError, match="no way"):
        await sup.evaluate("Promise.reject(new Error('no way'))")
    with pytest.raises(EvaluateError, match="Uncaught just text"):
        await sup.evaluate("throw 'just text'")
    with pytest.raises(EvaluateError, match="SyntaxError"):
        await sup.evaluate("1 +")
    # the runtime survived the rejection: the keepalive script handles it
    assert await sup.evaluate("'still here'") == "still here"
    assert runtime.running


@pytest.mark.browser
async def test_a_raw_command_is_the_protocols_own(supervised: cdpnb.Supervisor,
                                                 runtime: cdpnb.Backend) -> None:
    reply = await supervised.cdp("Runtime.evaluate", {"expression": "6 * 7"})
    assert reply["result"]["type"] == "number" and reply["result"]["value"] == 42
    thrown = await supervised.cdp("Runtime.evaluate", {"expression": "throw new Error('x')"})
    if runtime.kind == "bun":  # WIP's words, as Bun said them
        assert thrown["wasThrown"] is True and "exceptionDetails" not in thrown
        assert thrown["result"]["description"] == "Error: x"
        assert isinstance(json.loads(thrown["result"]["objectId"]), dict)  # JSON text
    else:
        assert thrown["exceptionDetails"]["exception"]["description"].startswith("Error: x")
    with pytest.raises(cdpnb.CDPError) as refused:
        await supervised.cdp("Page.enable")
    assert refused.value.code == -32601
    assert "Page.enable" in supervised.unsupported


@pytest.mark.browser
async def test_a_recorded_trace_loads_and_replays(runtime: cdpnb.Backend, tmp_path: Path) -> None:
    path = tmp_path / f"{runtime.kind}.jsonl.gz"
    sup = await cdpnb.Supervisor.start(runtime, record=path)
    try:
        assert await sup.evaluate("Promise.resolve(40 + 2)") == 42
        with pytest.raises(EvaluateError, match="boom"):
            await sup.evaluate("throw new Error('boom')")
    finally:
        await sup.stop()
    trace = Trace.load(path)
    assert trace.protocol == PROTOCOLS[runtime.kind]
    assert trace.backend["kind"] == runtime.kind
    evaluates = [m for m in trace.messages
                 if isinstance(m, Command) and m.method == "Runtime.evaluate"]
    replies = [m for m in trace.messages if isinstance(m, Reply)
               and m.id in {c.id for c in evaluates}]
    if runtime.kind == "bun":
        # the wire as it was: no awaitPromise sent, the Promise awaited by its own
        # command, a thrown error as wasThrown (never rewritten into exceptionDetails)
        assert all("awaitPromise" not in c.params for c in evaluates)
        assert any(m.method == "Runtime.awaitPromise" for m in trace.messages
                   if isinstance(m, Command))
        assert any(r.result.get("wasThrown") is True for r in replies)
        assert not any("exceptionDetails" in r.result for r in replies)
    async with cdpnb.replay(trace) as backend:
        again = await cdpnb.Supervisor.start(backend)
        try:
            assert again.protocol == PROTOCOLS[runtime.kind]
            assert await again.evaluate("Promise.resolve(40 + 2)") == 42
            with pytest.raises(EvaluateError, match="boom"):
                await again.evaluate("throw new Error('boom')")
        finally:
            await again.stop()
        assert not backend.unmatched


@pytest.mark.browser
def test_the_probe_rows_are_what_the_facts_predict(tmp_path: Path) -> None:
    result = asyncio.run(cdpnb.probe(list(RUNTIMES), out=tmp_path, progress=False))
    checks = result.checks()
    assert len(checks) == len(RUNTIMES) * len(CHECKS)
    assert checks["expected"].notna().all()
    surprises = result.surprises()
    assert surprises.empty, surprises[["backend", "check", "status", "detail"]].to_string()
    matrix = result.matrix_text()
    typed = result.matrix()
    for kind in RUNTIMES:
        row = matrix[kind]
        assert row["protocol"] == PROTOCOLS[kind] and row["evaluate"] == "✓"
        assert float(row["command RTT ms"]) > 0
        assert float(row["evaluate RTT with Debugger on ms"]) > 0
        for capability in ("frame tree complete", "dialogs main", "beforeunload",
                           "bridge cross-site", "dialog seen ms"):
            assert row[capability].startswith("✗ no Page domain"), (kind, row[capability])
        assert typed.loc["protocol", kind] == PROTOCOLS[kind]
        assert expected_status(kind, "latency.debugger_rtt") == "ok"
    assert result.backends["bun"]["version"].startswith("Bun/")
    # the saved result reads back the same; the bun trace is WIP
    saved = ProbeResult.from_json((result.save(tmp_path) / "probe.json").read_text())
    assert saved.matrix_text().equals(matrix)
    assert Trace.load(tmp_path / "bun.native.jsonl.gz").protocol == "wip"


@pytest.mark.browser
def test_the_runtime_is_gone_by_its_pid_after_close() -> None:
    for kind in RUNTIMES:
        backend = cdpnb.launch(kind).start_blocking()
        pid, workdir = backend.pid, backend._browser.workdir
        assert pid_alive(pid)
        backend.close()
        assert not backend.running
        check_ended(pid, workdir)


def test_missing_runtimes_say_how_to_install_them(monkeypatch: pytest.MonkeyPatch,
                                                  tmp_path: Path) -> None:
    monkeypatch.setenv("CDPNB_NODE_MODULES", str(tmp_path / "node_modules"))
    monkeypatch.delenv("CDPNB_BUN", raising=False)
    assert backend_available("bun") == "not installed: npm ci (bun)"
    with pytest.raises(cdpnb.BrowserNotFound, match=r"`npm ci`.*CDPNB_BUN"):
        find_bun()
    assert all(str(tmp_path) in str(path) for path in bun_binaries())
    monkeypatch.setenv("CDPNB_BUN", "/nonexistent/bun")
    reason = backend_available("bun")
    assert reason is not None and "$CDPNB_BUN" in reason and "/nonexistent/bun" in reason
    monkeypatch.setenv("CDPNB_DENO", "/nonexistent/deno")
    with pytest.raises(cdpnb.BrowserNotFound, match=r"\$CDPNB_DENO names '/nonexistent/deno'"):
        find_deno()


@pytest.mark.browser
@pytest.mark.parametrize("kind", RUNTIMES)
def test_the_keepalive_script_ends_the_runtime_once_its_parent_is_not_ours(
        kind: str, tmp_path: Path) -> None:
    """The second guard beside the reaper: the script itself ends the runtime when its
    parent is no longer the Python that launched it (here: never was), and keeps it up
    through an unhandled rejection meanwhile."""
    script = tmp_path / "keepalive.js"
    if kind == "deno":
        script.write_text(deno_keepalive(os.getpid() + 1) + "Promise.reject(new Error('x'));\n")
        args = [find_deno(), "run", "--no-prompt", "--no-config", str(script)]
    else:
        script.write_text(bun_keepalive(os.getpid() + 1) + "Promise.reject(new Error('x'));\n")
        args = [find_bun(), "--no-install", f"--cwd={tmp_path}", str(script)]
    done = subprocess.run(args, capture_output=True, timeout=30, env={
        **os.environ, "DENO_DIR": str(tmp_path / "deno"), "DENO_NO_UPDATE_CHECK": "1",
        "DO_NOT_TRACK": "1"}, check=False)
    assert done.returncode == 0, done.stderr[-500:]


#: Bun 1.4.5's banner with FORCE_COLOR=1 in its environment (NO_COLOR=1 beside it or
#: not), as it wrote it into its log file: the URL in dim, the link an OSC 8 hyperlink.
COLOURED_BUN_BANNER = (
    b"\x1b[2m--------------------- Bun Inspector ---------------------\x1b[22m\x1b[49m\n"
    b"Listening:\n  \x1b[2mws://127.0.0.1:37583/cdpnb-0123456789abcdef\x1b[22m\n"
    b"Inspect in browser:\n  \x1b[1m\x1b]8;;https://debug.bun.sh/#127.0.0.1:37583/x\x1b\\"
    b"https://debug.bun.sh/#127.0.0.1:37583/x\x1b]8;;\x1b\\\x1b[22m\n")


def test_a_coloured_banner_is_read_as_a_plain_one(tmp_path: Path) -> None:
    log = tmp_path / "output.log"
    log.write_bytes(COLOURED_BUN_BANNER)
    assert bun_mod._LISTENING.search(log.read_bytes()) is None  # what notebooks met
    found = bun_mod._LISTENING.search(read_output(log))
    assert found is not None
    assert found[1] == b"ws://127.0.0.1:37583/cdpnb-0123456789abcdef"
    assert b"\x1b" not in read_output(log)
    assert b"https://debug.bun.sh/#127.0.0.1:37583/x\n" in read_output(log)


@pytest.mark.browser
@pytest.mark.parametrize("kind", ["node", *RUNTIMES])
def test_a_notebook_kernels_force_color_does_not_hide_the_endpoint(
        kind: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Jupyter kernels set FORCE_COLOR=1: the runtime starts with colour off (NO_COLOR=1,
    no FORCE_COLOR), prints no escape, and is found where it listens."""
    monkeypatch.setenv("FORCE_COLOR", "1")
    monkeypatch.delenv("NO_COLOR", raising=False)
    with cdpnb.launch(kind) as backend:
        assert backend.running and URLS.get(kind, NODE_URL).match(backend.url), backend.url
        environ = Path(f"/proc/{backend.pid}/environ").read_bytes().split(b"\0")
        assert b"NO_COLOR=1" in environ
        assert not [e for e in environ if e.startswith(b"FORCE_COLOR=")], environ
        assert b"\x1b" not in (backend._browser.workdir / "output.log").read_bytes()


@pytest.mark.browser
def test_bun_colouring_its_banner_anyway_is_still_understood(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The second defence alone: with colour left on (FORCE_COLOR=1 reaching Bun), the
    escapes around the URL are stripped before the banner is read."""
    monkeypatch.setenv("FORCE_COLOR", "1")
    monkeypatch.setattr(bun_mod, "uncoloured", dict)
    with cdpnb.launch("bun") as backend:
        assert URLS["bun"].match(backend.url), backend.url
        log = (backend._browser.workdir / "output.log").read_bytes()
        assert b"\x1b[" in log  # it did colour it
        assert backend.version.startswith("Bun/")
