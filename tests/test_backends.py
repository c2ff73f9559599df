"""The ``chromium+playwright`` and ``node`` backends, against the real programs.

No mocks: each test starts real node, real Chromium and Playwright's real driver, talks
to them over a raw ``websockets`` client, and checks that every process, thread and
temporary directory it started is gone afterwards.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.metadata
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from conftest import cdpnb_dirs, private_dirs
from test_launch import check_ended, leaked_browsers, listeners, pid_alive
from websockets.asyncio.client import ClientConnection, connect

import cdpnb
from cdpnb.backends import (
    BACKEND_KINDS,
    BIDI_KINDS,
    CLASSIC_KINDS,
    LAUNCHABLE,
    RUNTIME_KINDS,
    WEBDRIVER_SERVER_KINDS,
    WIP_KINDS,
    backend_available,
    backend_kind,
    kind_protocol,
)
from cdpnb.protocol.specs import PROTOCOL_SPECS

CHROMIUM = "/usr/lib/chromium/chromium"
NODE_WS = re.compile(r"^ws://127\.0\.0\.1:(\d+)/[0-9a-f-]{36}$")
BROWSER_WS = re.compile(r"^ws://127\.0\.0\.1:(\d+)/devtools/browser/[0-9A-Fa-f-]+$")


# --- helpers ------------------------------------------------------------------------


class RawCDP:
    """A bare CDP client: commands by id, events kept with their arrival time."""

    def __init__(self, ws: ClientConnection) -> None:
        self.ws = ws
        self.next_id = 0
        self.replies: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self.events: list[tuple[float, dict[str, Any]]] = []
        self.arrived = asyncio.Event()
        self.reader = asyncio.create_task(self._read())

    async def _read(self) -> None:
        async for raw in self.ws:
            message = json.loads(raw)
            if "id" in message:
                self.replies.pop(message["id"]).set_result(message)
            else:
                self.events.append((time.monotonic(), message))
                self.arrived.set()

    async def call(self, method: str, params: dict[str, Any] | None = None,
                   session_id: str | None = None) -> dict[str, Any]:
        """The whole reply: ``result`` or ``error``."""
        self.next_id += 1
        message: dict[str, Any] = {"id": self.next_id, "method": method, "params": params or {}}
        if session_id is not None:
            message["sessionId"] = session_id
        reply = self.replies[self.next_id] = asyncio.get_running_loop().create_future()
        await self.ws.send(json.dumps(message))
        return await asyncio.wait_for(reply, 5)

    async def result(self, method: str, params: dict[str, Any] | None = None,
                     session_id: str | None = None) -> dict[str, Any]:
        reply = await self.call(method, params, session_id)
        assert "result" in reply, reply
        result: dict[str, Any] = reply["result"]
        return result

    async def event(self, method: str, timeout: float = 20.0) -> tuple[float, dict[str, Any]]:
        """The first ``method`` event received (also one that came before the call)."""
        deadline = time.monotonic() + timeout
        while True:
            for at, message in self.events:
                if message.get("method") == method:
                    return at, message.get("params", {})
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"no {method} within {timeout} s; got "
                                     f"{[m.get('method') for _, m in self.events]}")
            self.arrived.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.arrived.wait(), left)

    async def close(self) -> None:
        await self.ws.close()
        await self.reader


async def raw_cdp(url: str) -> RawCDP:
    return RawCDP(await connect(url, max_size=None, ping_interval=None))


def get_json(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=5) as reply:
        return json.loads(reply.read())


def live_children() -> set[int]:
    """This process's live (non-zombie) children: browsers, node, Playwright's driver."""
    me, found = str(os.getpid()), set()
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            lines = status.read_text().splitlines()
        except OSError:
            continue
        fields = dict(line.split(":", 1) for line in lines if ":" in line)
        if fields.get("PPid", "").strip() == me and not fields["State"].strip().startswith("Z"):
            found.add(int(status.parent.name))
    return found


def wait_for_baseline(threads: set[threading.Thread], children: set[int],
                      timeout: float = 5.0) -> tuple[list[str], set[int]]:
    """Wait until no thread or child process beyond the baseline is left; return what is."""
    deadline = time.monotonic() + timeout
    while True:
        extra_threads = [t.name for t in threading.enumerate() if t not in threads]
        extra_children = live_children() - children
        if (not extra_threads and not extra_children) or time.monotonic() > deadline:
            return extra_threads, extra_children
        time.sleep(0.02)


async def alert(cdp: RawCDP, session: str) -> float:
    """Open ``alert("1")`` on the page and return when Page.javascriptDialogOpening came.
    The alert is set off by a timer, so the evaluate answers before the dialog blocks."""
    await cdp.result("Runtime.evaluate", {"expression": "setTimeout(() => alert(1))"},
                     session_id=session)
    opened_at, opened = await cdp.event("Page.javascriptDialogOpening")
    assert opened["type"] == "alert" and opened["message"] == "1"
    return opened_at


# --- node ---------------------------------------------------------------------------


def check_node(backend: cdpnb.Backend) -> None:
    found = NODE_WS.match(backend.cdp_url)
    assert found, backend.cdp_url
    port = int(found[1])
    assert backend.kind == "node"
    assert backend.http_url == f"http://127.0.0.1:{port}"
    assert re.match(r"^node\.js/v\d+\.\d+\.\d+$", backend.version), backend.version
    assert backend.version_info["Browser"] == backend.version
    assert backend.running and pid_alive(backend.pid)
    node = shutil.which("node")
    assert node is not None
    assert backend.executable == node
    assert os.readlink(f"/proc/{backend.pid}/exe") == os.path.realpath(node)
    assert backend.args[:2] == (node, "--inspect=127.0.0.1:0")
    assert listeners(port) == [("tcp", "0100007F")]
    assert 0 < backend.started_in_s < 10

    # one target, and it is the endpoint cdpnb hands out: node has no browser endpoint
    targets = get_json(backend.http_url + "/json/list")
    assert [(t["type"], t["webSocketDebuggerUrl"]) for t in targets] == [
        ("node", backend.cdp_url)]
    assert "webSocketDebuggerUrl" not in get_json(backend.http_url + "/json/version")

    # stderr went to a file in the work dir, which is where the URL was read from
    log = (backend._browser.workdir / "output.log").read_text()
    assert f"Debugger listening on {backend.cdp_url}" in log

    info = backend.describe()
    assert info["kind"] == "node" and info["runtime_only"] is True
    assert "runtime-only" in info["what"]
    assert info["version"] == backend.version and info["cdp_url"] == backend.cdp_url
    assert "ws://" not in repr(backend) and f"pid={backend.pid}" in repr(backend)


@pytest.mark.browser
def test_node_plain_with() -> None:
    with cdpnb.launch("node") as backend:
        check_node(backend)
        pid, workdir = backend.pid, backend._browser.workdir
    assert not backend.running
    check_ended(pid, workdir)


@pytest.mark.browser
async def test_node_async_with_speaks_runtime_only() -> None:
    async with cdpnb.launch("node") as backend:
        check_node(backend)
        pid, workdir = backend.pid, backend._browser.workdir
        cdp = await raw_cdp(backend.cdp_url)
        try:
            two = await cdp.result("Runtime.evaluate", {"expression": "1+1"})
            assert two["result"] == {"type": "number", "value": 2, "description": "2"}
            for method in ("Page.enable", "Target.setDiscoverTargets", "Fetch.enable"):
                params = {"discover": True} if method.startswith("Target.") else {}
                reply = await cdp.call(method, params)
                assert reply["error"]["code"] == -32601, (method, reply)
        finally:
            await cdp.close()
    assert not backend.running
    check_ended(pid, workdir)


def test_node_executable_override_and_start_errors(private_tmp: Path) -> None:
    with pytest.raises(cdpnb.BrowserNotFound, match=r"executable=.*/nonexistent/node"):
        cdpnb.launch("node", executable="/nonexistent/node").start_blocking()
    with pytest.raises(cdpnb.BrowserStartError, match=r"/bin/false exited with code 1"):
        cdpnb.launch("node", executable="/bin/false").start_blocking()
    assert cdpnb_dirs(private_tmp) == []


def test_node_missing_names_the_debian_package(monkeypatch: pytest.MonkeyPatch,
                                              tmp_path: Path, private_tmp: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("CDPNB_NODE", raising=False)
    assert backend_available("node") == "not installed: apt-get install nodejs"
    with pytest.raises(cdpnb.BrowserNotFound, match=r"`apt-get install nodejs`"), \
            cdpnb.launch("node"):
        pass
    monkeypatch.setenv("CDPNB_NODE", "/nonexistent/node")
    reason = backend_available("node")
    assert reason is not None and "$CDPNB_NODE" in reason and "/nonexistent/node" in reason
    assert cdpnb_dirs(private_tmp) == []


@pytest.mark.browser
def test_node_ends_itself_when_its_parent_is_killed(tmp_path: Path) -> None:
    """node runs in a session of its own; a Python killed with SIGKILL runs no atexit,
    so its reaper (and, as a second guard, the keepalive script noticing the lost
    parent) must end it and remove its work dir. The kill comes right after the
    launch: node may not have run its script yet."""
    script = ("import cdpnb, sys, time\n"
              "b = cdpnb.launch('node').start_blocking()\n"
              "print(b.pid, b._browser.workdir, flush=True)\n"
              "time.sleep(60)\n")
    parent = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE,
                              env=private_dirs(tmp_path), text=True)
    try:
        assert parent.stdout is not None
        pid_text, workdir = parent.stdout.readline().split()
        node_pid = int(pid_text)
        assert pid_alive(node_pid)
    finally:
        parent.send_signal(signal.SIGKILL)
        parent.wait()
    deadline = time.monotonic() + 5
    while node_alive(node_pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    alive = node_alive(node_pid)
    if alive:
        os.kill(node_pid, signal.SIGKILL)
    assert not alive, "node outlived its killed parent"
    while Path(workdir).exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    left = Path(workdir).exists()
    shutil.rmtree(workdir, ignore_errors=True)
    assert not left, "node's work dir outlived its killed parent"


def node_alive(pid: int) -> bool:
    """Running and not a zombie (it is no child of ours, so we cannot reap it)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] != "Z"


# --- chromium+playwright ------------------------------------------------------------


def check_chromium_playwright(backend: cdpnb.Backend) -> None:
    found = BROWSER_WS.match(backend.cdp_url)
    assert found, backend.cdp_url
    assert backend.kind == "chromium+playwright"
    assert backend.http_url == f"http://127.0.0.1:{found[1]}"
    assert re.match(r"^Chrome/\d+\.\d+\.\d+\.\d+$", backend.version), backend.version
    assert backend.executable == CHROMIUM
    assert os.readlink(f"/proc/{backend.pid}/exe") == os.path.realpath(CHROMIUM)
    assert backend.running and pid_alive(backend.pid)
    assert listeners(int(found[1])) == [("tcp", "0100007F")]
    assert 0 < backend.started_in_s < 10
    info = backend.describe()
    assert info["playwright"]["version"] == importlib.metadata.version("playwright")
    assert info["playwright"]["version"].startswith("1.65.")
    assert info["playwright"]["dialog_handler"] is None
    assert "auto-dismisses" in info["what"]
    assert backend.spec is backend_kind("chromium+playwright") and backend.spec.client is not None
    # Playwright is attached, on its own loop in its own daemon thread
    threads = [t for t in threading.enumerate() if t.name == "cdpnb-playwright"]
    assert len(threads) == 1 and threads[0].daemon
    attachment = backend._started.attachment
    assert attachment is not None and attachment.connected
    assert attachment.thread is threads[0]
    assert "ws://" not in repr(backend)


@pytest.mark.browser
def test_chromium_playwright_plain_with() -> None:
    threads, children = set(threading.enumerate()), live_children()
    with cdpnb.launch("chromium+playwright") as backend:
        check_chromium_playwright(backend)
        # Chromium, its reaper and Playwright's node driver, all children of this process
        assert backend._browser.reaper is not None
        assert {backend.pid, backend._browser.reaper.pid} <= live_children() - children
        assert len(live_children() - children) == 3
        pid, workdir = backend.pid, backend._browser.workdir
    assert not backend.running
    check_ended(pid, workdir)
    assert wait_for_baseline(threads, children) == ([], set())


@pytest.mark.browser
async def test_chromium_playwright_async_with() -> None:
    threads, children = set(threading.enumerate()), live_children()
    async with cdpnb.launch("chromium+playwright") as backend:
        check_chromium_playwright(backend)
        pid, workdir = backend.pid, backend._browser.workdir
    assert not backend.running
    check_ended(pid, workdir)
    assert wait_for_baseline(threads, children) == ([], set())


@pytest.mark.browser
async def test_chromium_playwright_plain_with_inside_a_running_loop() -> None:
    """A notebook cell: a loop runs in this thread, and the blocking ``with`` is used.
    Playwright does not need (or touch) the caller's loop."""
    asyncio.get_running_loop()
    with cdpnb.launch("chromium+playwright") as backend:
        check_chromium_playwright(backend)
        pid, workdir = backend.pid, backend._browser.workdir
    check_ended(pid, workdir)


@pytest.mark.browser
@pytest.mark.parametrize("kind", ["chromium+playwright", "chromium"])
async def test_dialog_on_a_page_another_client_creates(kind: str) -> None:
    """Playwright attaches to a page that a separate CDP connection creates after the
    launch and dismisses its alert within milliseconds, unanswered by us; plain
    Chromium, the control, keeps it open until we answer."""
    async with cdpnb.launch(kind) as backend:
        cdp = await raw_cdp(backend.cdp_url)
        try:
            target = await cdp.result("Target.createTarget", {"url": "about:blank"})
            attached = await cdp.result("Target.attachToTarget",
                                        {"targetId": target["targetId"], "flatten": True})
            session = attached["sessionId"]
            await cdp.result("Page.enable", session_id=session)
            if kind == "chromium":
                await alert(cdp, session)
                await asyncio.sleep(0.3)
                assert not [m for _, m in cdp.events
                            if m.get("method") == "Page.javascriptDialogClosed"]
                await cdp.result("Page.handleJavaScriptDialog", {"accept": True},
                                 session_id=session)
                await cdp.event("Page.javascriptDialogClosed")
                return
            # Playwright attaches to the new page on its own time: a dialog opened before
            # it did is never reported to it, so it stays open (seen beside two CPU-bound
            # processes: no dismissal in 30 s). Such a dialog is ours to close; once
            # Playwright is there it dismisses each one. How soon is a measurement
            # (median ≈4 ms quiet on 2 cores, 0.5-16 ms in 80 dialogs; the probe records
            # it, cdpnb.probes.expected.RACES), not asserted here.
            dismissed = before_attached = 0
            while dismissed < 3 and before_attached < 20:
                cdp.events.clear()
                await alert(cdp, session)
                try:
                    _, closed = await cdp.event("Page.javascriptDialogClosed", timeout=5.0)
                except AssertionError:  # not Playwright's page yet
                    before_attached += 1
                    await cdp.result("Page.handleJavaScriptDialog", {"accept": True},
                                     session_id=session)
                    await cdp.event("Page.javascriptDialogClosed")
                    continue
                assert closed["result"] is False  # dismissed, not accepted
                reply = await cdp.call("Page.handleJavaScriptDialog", {"accept": True},
                                       session_id=session)
                assert reply["error"]["message"] == "No dialog is showing", reply
                dismissed += 1
            assert dismissed == 3, f"Playwright never took the page ({before_attached} tries)"
        finally:
            await cdp.close()


@pytest.mark.browser
@pytest.mark.parametrize("after_s", [0.05, 0.4])
async def test_cancelled_chromium_playwright_launch_leaves_nothing_behind(
    private_tmp: Path, after_s: float
) -> None:
    """The cell is interrupted while Chromium starts and Playwright's driver boots:
    the browser, the driver, the Playwright thread and the temp dir must all go."""
    threads, children = set(threading.enumerate()), live_children()
    launcher = cdpnb.launch("chromium+playwright")
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(launcher.__aenter__(), after_s)
    assert launcher.backend is None
    # The start goes on in its thread, then closes what it started by itself: this
    # test blocks its own loop meanwhile (time.sleep), as a busy cell would.
    assert [t.name for t in threading.enumerate() if t.name == "cdpnb-playwright"]
    extra_threads, extra_children = wait_for_baseline(threads, children, timeout=8)
    assert extra_threads == [] and extra_children == set()
    assert leaked_browsers(private_tmp) == []
    assert cdpnb_dirs(private_tmp) == []


@pytest.mark.browser
def test_chromium_playwright_ended_at_interpreter_exit(tmp_path: Path) -> None:
    """A script that never closes its backend: atexit lets Playwright go, then ends
    Chromium by its pid, and removes the temp dir."""
    script = ("import cdpnb\n"
              "b = cdpnb.launch('chromium+playwright').start_blocking()\n"
              "print(b.pid, flush=True)\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env=private_dirs(tmp_path), timeout=30,
                          check=False)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    pid = int(done.stdout)
    assert not node_alive(pid)
    assert leaked_browsers(tmp_path) == []
    assert cdpnb_dirs(tmp_path) == []


def test_missing_playwright_names_pip_install(monkeypatch: pytest.MonkeyPatch,
                                              private_tmp: Path) -> None:
    # None in sys.modules makes `import playwright...` fail as if it were not installed.
    for name in ("playwright", "playwright.async_api"):
        monkeypatch.setitem(sys.modules, name, None)
    assert backend_available("chromium+playwright") == "not installed: pip install playwright"
    with pytest.raises(cdpnb.BrowserNotFound, match=r"`pip install playwright`"), \
            cdpnb.launch("chromium+playwright"):
        pass
    # nothing was started for a launch that could not attach Playwright
    assert cdpnb_dirs(private_tmp) == []


# --- every kind -----------------------------------------------------------------------


def test_launchable_kinds_and_availability() -> None:
    assert LAUNCHABLE[:4] == ("chromium", "headless-shell", "chromium+playwright", "node")
    assert cdpnb.backends.LAUNCHABLE is LAUNCHABLE
    assert {kind: backend_available(kind) for kind in LAUNCHABLE} == dict.fromkeys(LAUNCHABLE)
    for call in (backend_available, cdpnb.launch):
        with pytest.raises(ValueError, match=r"'firefox-nightly'") as info:
            call("firefox-nightly")
        assert all(kind in str(info.value) for kind in LAUNCHABLE)


def test_each_kind_is_one_spec_of_the_table() -> None:
    assert tuple(spec.name for spec in BACKEND_KINDS) == LAUNCHABLE
    for spec in BACKEND_KINDS:
        assert backend_kind(spec.name) is spec and backend_kind(spec) is spec
        assert spec.protocol in PROTOCOL_SPECS
        assert kind_protocol(spec.name) == spec.protocol.name
    # The sets code asked before the kinds were values, read off the table: as they were.
    sets = {"bidi": BIDI_KINDS, "classic": CLASSIC_KINDS, "wip": WIP_KINDS,
            "webdriver servers": WEBDRIVER_SERVER_KINDS, "runtimes": RUNTIME_KINDS}
    assert sets == {"bidi": {"chromium+bidi", "firefox", "chromium+chromedriver+bidi"},
                    "classic": {"webkit", "chromium+chromedriver"}, "wip": {"bun"},
                    "webdriver servers": {"webkit", "chromium+chromedriver",
                                          "chromium+chromedriver+bidi"},
                    "runtimes": {"node", "deno", "bun"}}
    # Only the DevTools endpoints are asked /json/version; the rest read it as they start.
    assert {spec.name for spec in BACKEND_KINDS if spec.read_version is None} == \
        BIDI_KINDS | CLASSIC_KINDS | {"chromium+selenium"}
    assert kind_protocol("firefox-nightly") == "cdp"  # (as before: no kind, no check)
    with pytest.raises(ValueError, match=r"unknown backend kind 'firefox-nightly'") as info:
        backend_kind("firefox-nightly")
    assert all(kind in str(info.value) for kind in LAUNCHABLE)


def test_missing_chromium_is_reported_for_chromium_playwright(
    monkeypatch: pytest.MonkeyPatch, private_tmp: Path
) -> None:
    monkeypatch.setenv("CDPNB_CHROMIUM", "/nonexistent/chrome")
    reason = backend_available("chromium+playwright")
    assert reason is not None and "$CDPNB_CHROMIUM" in reason
    threads = set(threading.enumerate())
    with pytest.raises(cdpnb.BrowserNotFound, match=r"\$CDPNB_CHROMIUM"), \
            cdpnb.launch("chromium+playwright"):
        pass
    # it failed before Playwright's driver was started
    assert [t.name for t in threading.enumerate() if t not in threads] == []
    assert cdpnb_dirs(private_tmp) == []

