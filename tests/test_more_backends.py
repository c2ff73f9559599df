"""The backends of issue 17 against the real programs: ``firefox`` (Debian firefox-esr,
WebDriver BiDi), ``chromium+bidi`` (npm chromium-bidi over Debian Chromium),
``chromium+puppeteer`` (npm puppeteer-core in front of Debian Chromium) and
``lightpanda`` (PyPI lightpanda).

No mocks: each test starts the real browser (and node where one runs), talks to it over
a raw ``websockets`` client or through ``cdpnb.Supervisor``, serves every page it needs
from loopback, and checks that every process and directory it started is gone after.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import cdpnb_dirs, open_two_site, private_dirs
from test_launch import pid_alive, session_members, wait_until_gone
from websockets.asyncio.client import ClientConnection, connect

import cdpnb
import cdpnb.backends.firefox as firefox_mod
from cdpnb.backends import LAUNCHABLE, backend_available
from cdpnb.probes import ScenarioServer

NEW_KINDS = ["chromium+puppeteer", "lightpanda", "chromium+bidi", "firefox"]
CHROMIUM = "/usr/lib/chromium/chromium"
FIREFOX = "/usr/lib/firefox-esr/firefox-esr"
IGNORE = {"default": "ignore", "beforeUnload": "ignore"}
#: The npm versions package.json pins (exactly): what describe() must report, read here
#: rather than restated so a bump of the pin does not fail this file.
NPM_PINS: dict[str, str] = json.loads(
    (Path(__file__).resolve().parents[1] / "package.json").read_text())["dependencies"]

URL = {
    "chromium+puppeteer": re.compile(r"^ws://127\.0\.0\.1:(\d+)/devtools/browser/[0-9a-f-]+$"),
    "lightpanda": re.compile(r"^ws://127\.0\.0\.1:(\d+)/$"),
    "chromium+bidi": re.compile(r"^ws://127\.0\.0\.1:(\d+)/session$"),
    "firefox": re.compile(r"^ws://127\.0\.0\.1:(\d+)/session$"),
}
VERSION = {
    "chromium+puppeteer": re.compile(r"^Chrome/\d+\.\d+\.\d+\.\d+$"),
    "lightpanda": re.compile(r"^Lightpanda/\d+\.\d+$"),
    "chromium+bidi": re.compile(r"^Chrome/\d+\.\d+\.\d+\.\d+$"),
    "firefox": re.compile(r"^Firefox/\d+\.\d+(\.\d+)?esr$"),
}


def lightpanda_binary() -> str:
    import lightpanda  # type: ignore[import-untyped]

    return str(Path(lightpanda.__file__).with_name("lightpanda"))


def expected_exe(kind: str) -> str:
    """What ``/proc/PID/exe`` of the backend's pid must be: the program itself, never a
    wrapper script that forks it. Through realpath: a package may make any of these paths
    a symlink (chromium-driver 156.0.8078.114 did so with /usr/bin/chromedriver)."""
    node = shutil.which("node")
    assert node is not None
    return os.path.realpath({"chromium+puppeteer": CHROMIUM, "lightpanda": lightpanda_binary(),
                             "chromium+bidi": node, "firefox": FIREFOX}[kind])


# --- sockets of a process tree ------------------------------------------------------


def _socket_inodes(pids: list[int]) -> set[str]:
    found = set()
    for pid in pids:
        with contextlib.suppress(OSError):
            for fd in Path(f"/proc/{pid}/fd").iterdir():
                with contextlib.suppress(OSError):
                    target = os.readlink(fd)
                    if target.startswith("socket:["):
                        found.add(target[8:-1])
    return found


def _address(hex_address: str) -> str:
    host, port = hex_address.split(":")
    if len(host) == 8:
        octets = [str(int(host[i:i + 2], 16)) for i in (6, 4, 2, 0)]
        return f"{'.'.join(octets)}:{int(port, 16)}"
    return f"[{host}]:{int(port, 16)}"  # IPv6, kept in the kernel's hex


def sockets_of(pids: list[int]) -> dict[str, list[str]]:
    """The TCP listeners and the bound UDP sockets of ``pids`` (dotted IPv4, or hex
    IPv6), read from /proc: ``{"tcp": [...], "udp": [...]}``."""
    inodes = _socket_inodes(pids)
    found: dict[str, list[str]] = {"tcp": [], "udp": []}
    for table in ("tcp", "tcp6", "udp", "udp6"):
        with contextlib.suppress(FileNotFoundError):
            for line in Path(f"/proc/net/{table}").read_text().splitlines()[1:]:
                fields = line.split()
                if fields[9] not in inodes:
                    continue
                if table.startswith("tcp") and fields[3] == "0A":
                    found["tcp"].append(_address(fields[1]))
                elif table.startswith("udp"):
                    found["udp"].append(_address(fields[1]))
    return found


def tree_of(backend: cdpnb.Backend) -> list[int]:
    """Every live process the backend started: its session, and Puppeteer's node."""
    pids = session_members(backend.pid)
    puppeteer = backend._started.puppeteer
    if puppeteer is not None:
        pids += session_members(puppeteer.pid)
    return pids


def check_loopback_only(backend: cdpnb.Backend) -> list[str]:
    """Every TCP listener of the backend's process tree is on 127.0.0.1 (never 0.0.0.0,
    never ::), and the endpoint's port is one of them; returns the listeners."""
    found = sockets_of(tree_of(backend))
    port = int(backend.url.split(":")[2].split("/")[0])
    assert f"127.0.0.1:{port}" in found["tcp"], found
    assert all(address.startswith("127.0.0.1:") for address in found["tcp"]), found
    return found["tcp"]


# --- the surface of each kind -----------------------------------------------------------


def check_running(backend: cdpnb.Backend, kind: str) -> None:
    found = URL[kind].match(backend.url)
    assert found, backend.url
    port = int(found[1])
    assert backend.kind == kind
    assert backend.protocol == ("bidi" if kind in ("chromium+bidi", "firefox") else "cdp")
    assert backend.cdp_url == backend.url
    assert backend.http_url == f"http://127.0.0.1:{port}"
    assert VERSION[kind].match(backend.version), backend.version
    assert backend.version_info["Browser"] == backend.version
    assert backend.running and pid_alive(backend.pid)
    assert os.readlink(f"/proc/{backend.pid}/exe") == expected_exe(kind)
    assert 0 < backend.started_in_s < 15
    info = backend.describe()
    assert info["kind"] == kind and info["protocol"] == backend.protocol
    assert info["url"] == info["cdp_url"] == backend.url
    assert info["version"] == backend.version and info["what"]
    assert "ws://" not in repr(backend) and f"pid={backend.pid}" in repr(backend)
    json.dumps(info)  # a matrix or a trace header can carry it as it is
    listeners = check_loopback_only(backend)

    if kind == "firefox":
        # WebDriver BiDi only: no CDP discovery on its port
        with pytest.raises(urllib.error.HTTPError) as http_error:
            urllib.request.urlopen(backend.http_url + "/json/version", timeout=5)
        assert http_error.value.code == 404
        assert backend.version_info["BuildID"].isdigit()
        profile = backend._browser.workdir / "profile"
        assert f"{profile}" in backend.args and "--remote-debugging-port=0" in backend.args
        assert "--headless" in backend.args and "--no-remote" in backend.args
        assert 'user_pref("app.update.disabledForTesting", true);' in \
            (profile / "user.js").read_text()
        # Firefox also writes its port into the profile (what the stderr line said)
        port_file = json.loads((profile / "WebDriverBiDiServer.json").read_text())
        assert port_file == {"ws_host": "127.0.0.1", "ws_port": port}
        assert info["one_session_per_browser"] is True
        assert listeners == [f"127.0.0.1:{port}"]
        # and no UDP socket at all (measured on 153: none)
        assert sockets_of(tree_of(backend))["udp"] == []
    elif kind == "lightpanda":
        with urllib.request.urlopen(backend.http_url + "/json/version", timeout=5) as reply:
            version = json.loads(reply.read())
        assert version["Browser"] == backend.version
        assert version["webSocketDebuggerUrl"] == backend.url
        assert backend.version_info["Lightpanda-Version"].startswith("1.0.")
        assert backend.args[1:] == ("serve", "--host", "127.0.0.1", "--port", "0",
                                    "--load-resources", "iframe")
        environ = Path(f"/proc/{backend.pid}/environ").read_bytes().split(b"\0")
        assert b"LIGHTPANDA_DISABLE_TELEMETRY=true" in environ
        assert listeners == [f"127.0.0.1:{port}"]
        assert sockets_of(tree_of(backend))["udp"] == []
    elif kind == "chromium+bidi":
        assert info["chromium_bidi"]["version"] == NPM_PINS["chromium-bidi"]
        assert info["chromium_bidi"]["browser_executable"] == CHROMIUM
        assert backend.version_info["chromium-bidi"] == info["chromium_bidi"]["version"]
        assert backend.executable == shutil.which("node")
        # no browser runs until a client asks for a session
        assert [p for p in session_members(backend.pid) if p != backend.pid] == []
        assert listeners == [f"127.0.0.1:{port}"]
    else:
        assert info["puppeteer"]["version"] == NPM_PINS["puppeteer-core"]
        assert info["puppeteer"]["dialog_handler"] is None
        assert "leaves native JS dialogs open" in info["what"]
        puppeteer = backend._started.puppeteer
        assert puppeteer is not None and puppeteer.running
        assert info["puppeteer"]["pid"] == puppeteer.pid
        assert os.readlink(f"/proc/{puppeteer.pid}/exe") == expected_exe("chromium+bidi")
        assert puppeteer.cdp_url == backend.url
        log = (puppeteer.workdir / "output.log").read_text()
        assert f"puppeteer-core {info['puppeteer']['version']} attached to {backend.url}" in log


def started_pids(backend: cdpnb.Backend) -> list[tuple[int, Path]]:
    """(pid, work dir) of each program the launch started."""
    found = [(backend.pid, backend._browser.workdir)]
    puppeteer = backend._started.puppeteer
    if puppeteer is not None:
        found.append((puppeteer.pid, puppeteer.workdir))
    return found


def check_all_ended(started: list[tuple[int, Path]]) -> None:
    for pid, workdir in started:
        assert wait_until_gone(pid) == [], f"processes of {pid}'s session outlived it"
        assert not workdir.exists()


@pytest.mark.browser
@pytest.mark.parametrize("kind", NEW_KINDS)
def test_starts_on_loopback_describes_itself_and_ends_by_pid(kind: str) -> None:
    with cdpnb.launch(kind) as backend:
        check_running(backend, kind)
        started = started_pids(backend)
    assert not backend.running
    check_all_ended(started)


@pytest.mark.browser
@pytest.mark.parametrize("kind", ["lightpanda", "firefox"])
async def test_async_with_each_launch_gets_a_fresh_one(kind: str) -> None:
    async with cdpnb.launch(kind) as one, cdpnb.launch(kind) as two:
        assert one.pid != two.pid and one.url != two.url
        assert one._browser.workdir != two._browser.workdir
        started = started_pids(one) + started_pids(two)
    check_all_ended(started)


def test_launchable_lists_every_kind_and_each_is_available_here() -> None:
    assert LAUNCHABLE == ("chromium", "headless-shell", "chromium+playwright", "node", "deno",
                          "bun", "chromium+puppeteer", "lightpanda", "chromium+bidi", "firefox",
                          "webkit", "chromium+chromedriver", "chromium+chromedriver+bidi",
                          "chromium+selenium")
    assert {kind: backend_available(kind) for kind in NEW_KINDS} == dict.fromkeys(NEW_KINDS)


# --- what is missing, said exactly ----------------------------------------------------------


def test_missing_firefox_names_the_debian_package(monkeypatch: pytest.MonkeyPatch,
                                                  tmp_path: Path, private_tmp: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("CDPNB_FIREFOX", raising=False)
    monkeypatch.setattr(firefox_mod, "_CANDIDATES", ("/nonexistent/firefox-esr",))
    assert backend_available("firefox") == "not installed: apt-get install firefox-esr"
    with pytest.raises(cdpnb.BrowserNotFound, match=r"`apt-get install firefox-esr`"), \
            cdpnb.launch("firefox"):
        pass
    monkeypatch.setenv("CDPNB_FIREFOX", "/nonexistent/ff")
    reason = backend_available("firefox")
    assert reason is not None and "$CDPNB_FIREFOX" in reason and "/nonexistent/ff" in reason
    with pytest.raises(cdpnb.BrowserStartError, match=r"/bin/false exited with code 1"):
        cdpnb.launch("firefox", executable="/bin/false").start_blocking()
    assert cdpnb_dirs(private_tmp) == []


def test_missing_lightpanda_names_pip_install(monkeypatch: pytest.MonkeyPatch,
                                              private_tmp: Path) -> None:
    import importlib.util

    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "lightpanda" else real_find_spec(name,
                                                                                          *a))
    monkeypatch.delenv("CDPNB_LIGHTPANDA", raising=False)
    assert backend_available("lightpanda") == "not installed: pip install lightpanda"
    with pytest.raises(cdpnb.BrowserNotFound, match=r"`pip install lightpanda`"), \
            cdpnb.launch("lightpanda"):
        pass
    monkeypatch.setenv("CDPNB_LIGHTPANDA", "/nonexistent/lp")
    reason = backend_available("lightpanda")
    assert reason is not None and "$CDPNB_LIGHTPANDA" in reason
    assert cdpnb_dirs(private_tmp) == []


@pytest.mark.parametrize(("kind", "needs"), [
    ("chromium+bidi", ["chromium-bidi", "websocket", "@puppeteer/browsers"]),
    ("chromium+puppeteer", ["puppeteer-core"]),
])
def test_missing_npm_packages_are_named(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                        private_tmp: Path, kind: str, needs: list[str]) -> None:
    empty = tmp_path / "node_modules"
    empty.mkdir()
    monkeypatch.setenv("CDPNB_NODE_MODULES", str(empty))
    assert backend_available(kind) == f"not installed: npm ci ({', '.join(needs)})"
    with pytest.raises(cdpnb.BrowserNotFound, match=r"not installed: npm ci") as info, \
            cdpnb.launch(kind):
        pass
    assert str(empty) in str(info.value) and "$CDPNB_NODE_MODULES" in str(info.value)
    # all but one there: the one is named
    real = Path(__file__).resolve().parents[1] / "node_modules"
    for name in needs[1:]:
        (empty / name).parent.mkdir(parents=True, exist_ok=True)
        (empty / name).symlink_to(real / name)
    assert backend_available(kind) == f"not installed: npm ci ({needs[0]})"
    # nothing was started for a launch that could not run: no browser, no node
    assert cdpnb_dirs(private_tmp) == []


def test_missing_chromium_or_node_is_reported_for_the_node_kinds(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CDPNB_CHROMIUM", "/nonexistent/chrome")
    for kind in ("chromium+bidi", "chromium+puppeteer"):
        reason = backend_available(kind)
        assert reason is not None and "$CDPNB_CHROMIUM" in reason
    monkeypatch.delenv("CDPNB_CHROMIUM")
    monkeypatch.setenv("CDPNB_NODE", "/nonexistent/node")
    for kind in ("chromium+bidi", "chromium+puppeteer"):
        reason = backend_available(kind)
        assert reason is not None and "$CDPNB_NODE" in reason


# --- dying with the owner ---------------------------------------------------------------------

_OWNER = """
import json, sys, cdpnb
kind = sys.argv[1]
b = cdpnb.launch(kind).start_blocking()
if kind == "chromium+bidi":
    # a session, so that a Chromium runs under the server too
    from websockets.sync.client import connect
    ws = connect(b.url)
    ws.send(json.dumps({"id": 1, "method": "session.new", "params": {"capabilities": {}}}))
    while json.loads(ws.recv()).get("id") != 1:
        pass
started = [[b.pid, str(b._browser.workdir)]]
if b._started.puppeteer is not None:
    started.append([b._started.puppeteer.pid, str(b._started.puppeteer.workdir)])
print(json.dumps(started), flush=True)
import time; time.sleep(60)
"""


def live(pid: int) -> bool:
    """Running and not a zombie (no child of ours, so we cannot reap it)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] != "Z"


@pytest.mark.browser
@pytest.mark.parametrize("kind", NEW_KINDS)
def test_dies_with_its_owner(tmp_path: Path, kind: str) -> None:
    """The Python that launched it is SIGKILLed (no atexit runs): its reaper ends the
    program's whole process group and removes its work dir."""
    parent = subprocess.Popen([sys.executable, "-c", _OWNER, kind], stdout=subprocess.PIPE,
                              env=private_dirs(tmp_path), text=True)
    members: list[int] = []
    try:
        assert parent.stdout is not None
        started = json.loads(parent.stdout.readline())
        for pid, _ in started:
            members += session_members(pid)
        if kind == "chromium+bidi":
            assert len(members) > 2  # node, and the Chromium of the session (with helpers)
    finally:
        parent.send_signal(signal.SIGKILL)
        parent.wait()
    deadline = time.monotonic() + 8
    while any(live(p) for p in members) and time.monotonic() < deadline:
        time.sleep(0.05)
    left = [p for p in members if live(p)]
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    assert left == [], f"{kind}: processes outlived their killed owner"
    while any(Path(w).exists() for _, w in started) and time.monotonic() < deadline:
        time.sleep(0.05)
    dirs = [w for _, w in started if Path(w).exists()]
    for workdir in dirs:
        shutil.rmtree(workdir, ignore_errors=True)
    assert dirs == [], f"{kind}: work dirs outlived their killed owner"


# --- WebDriver BiDi over the endpoint, by hand -------------------------------------------------


class RawBiDi:
    """A bare WebDriver BiDi client: commands by id, events kept in arrival order."""

    def __init__(self, ws: ClientConnection) -> None:
        self.ws = ws
        self.next_id = 0
        self.replies: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self.events: list[dict[str, Any]] = []
        self.arrived = asyncio.Event()
        self.reader = asyncio.create_task(self._read())

    @classmethod
    async def open(cls, url: str) -> RawBiDi:
        return cls(await connect(url, max_size=None, ping_interval=None))

    async def _read(self) -> None:
        async for raw in self.ws:
            message = json.loads(raw)
            if message.get("type") == "event":
                self.events.append(message)
                self.arrived.set()
            else:
                self.replies.pop(message["id"]).set_result(message)

    async def call(self, method: str, params: dict[str, Any] | None = None,
                   timeout: float = 10.0) -> dict[str, Any]:
        """The whole reply: ``type`` success with ``result``, or ``error``."""
        self.next_id += 1
        reply = self.replies[self.next_id] = asyncio.get_running_loop().create_future()
        await self.ws.send(json.dumps({"id": self.next_id, "method": method,
                                       "params": params or {}}))
        return await asyncio.wait_for(reply, timeout)

    async def result(self, method: str, params: dict[str, Any] | None = None
                     ) -> dict[str, Any]:
        reply = await self.call(method, params)
        assert reply["type"] == "success", reply
        result: dict[str, Any] = reply["result"]
        return result

    def seen(self, method: str) -> list[dict[str, Any]]:
        return [e["params"] for e in self.events if e["method"] == method]

    async def event(self, method: str, timeout: float = 20.0) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while not self.seen(method):
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"no {method} within {timeout} s; got "
                                     f"{[e['method'] for e in self.events]}")
            self.arrived.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.arrived.wait(), left)
        return self.seen(method)[0]

    async def close(self) -> None:
        await self.ws.close()
        await self.reader


async def ignoring_session(url: str) -> tuple[RawBiDi, dict[str, Any]]:
    bidi = await RawBiDi.open(url)
    created = await bidi.result("session.new", {"capabilities": {
        "alwaysMatch": {"unhandledPromptBehavior": IGNORE}}})
    await bidi.result("session.subscribe", {"events": ["browsingContext"]})
    return bidi, created


async def open_page(bidi: RawBiDi, url: str) -> str:
    context: str = (await bidi.result("browsingContext.create", {"type": "tab"}))["context"]
    await bidi.result("browsingContext.navigate", {"context": context, "url": url,
                                                   "wait": "complete"})
    return context


async def evaluate(bidi: RawBiDi, context: str, expression: str) -> dict[str, Any]:
    reply = await bidi.result("script.evaluate", {"expression": expression,
                                                  "target": {"context": context},
                                                  "awaitPromise": False})
    value: dict[str, Any] = reply["result"]
    return value


async def until(condition: Callable[[], bool], timeout: float = 20.0) -> None:
    """Poll ``condition`` (about processes, which send no events) until it holds or the
    time is up; the caller asserts."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        await asyncio.sleep(0.05)


def chromium_browsers(backend: cdpnb.Backend) -> list[int]:
    """The Chromium browser processes (not their helpers) under chromium-bidi's node."""
    found = []
    for pid in session_members(backend.pid):
        with contextlib.suppress(OSError):
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            if cmdline[0] == CHROMIUM.encode() and not any(a.startswith(b"--type=")
                                                           for a in cmdline):
                found.append(pid)
    return found


@pytest.mark.browser
@pytest.mark.parametrize("kind", ["firefox", "chromium+bidi"])
async def test_bidi_prompt_stays_open_until_handle_user_prompt(kind: str,
                                                               site: ScenarioServer) -> None:
    async with cdpnb.launch(kind) as backend:
        bidi, created = await ignoring_session(backend.url)
        try:
            assert created["capabilities"]["unhandledPromptBehavior"] == IGNORE
            if kind == "firefox":
                assert created["capabilities"]["browserName"] == "firefox"
                assert backend.version.startswith(
                    f"Firefox/{created['capabilities']['browserVersion']}")
            else:
                # measured quirks of chromium-bidi 17: no session id, name and version swapped
                assert created["sessionId"] == "unknown"
                assert created["capabilities"]["browserName"] == backend.version
                assert created["capabilities"]["browserVersion"].startswith("@")
                assert len(chromium_browsers(backend)) == 1
            # the page the test serves on loopback; the browser's sockets stay loopback
            context = await open_page(bidi, site.url("/two-site"))
            check_loopback_only(backend)

            await evaluate(bidi, context,
                           "setTimeout(() => { window.r = prompt('name?', 'def'); }, 0); 1")
            opened = await bidi.event("browsingContext.userPromptOpened")
            assert opened["context"] == context and opened["type"] == "prompt"
            assert opened["message"] == "name?" and opened["handler"] == "ignore"
            await asyncio.sleep(0.5)
            assert bidi.seen("browsingContext.userPromptClosed") == []

            began = time.monotonic()
            await bidi.result("browsingContext.handleUserPrompt",
                              {"context": context, "accept": True, "userText": "Ada"})
            took = time.monotonic() - began
            closed = await bidi.event("browsingContext.userPromptClosed")
            assert closed["context"] == context and closed["accepted"] is True
            assert await evaluate(bidi, context, "window.r") == {"type": "string",
                                                                 "value": "Ada"}
            again = await bidi.call("browsingContext.handleUserPrompt",
                                    {"context": context, "accept": True})
            assert again["type"] == "error" and again["error"] == "no such alert", again
            assert took < 2.0
        finally:
            await bidi.close()


@pytest.mark.browser
async def test_firefox_has_one_bidi_session_and_keeps_it(site: ScenarioServer) -> None:
    """Firefox 153 refuses a second session.new while one exists, also after the
    first session's connection closed (the session outlives its WebSocket)."""
    async with cdpnb.launch("firefox") as backend:
        first, _ = await ignoring_session(backend.url)
        second = await RawBiDi.open(backend.url)
        try:
            refused = await second.call("session.new", {"capabilities": {}})
            assert refused["type"] == "error" and refused["error"] == "session not created"
            assert "Maximum number of active sessions" in refused["message"]
            await first.close()
            await asyncio.sleep(0.3)
            refused = await second.call("session.new", {"capabilities": {}})
            assert refused["error"] == "session not created", refused
        finally:
            await second.close()


@pytest.mark.browser
async def test_chromium_bidi_default_session_dismisses_and_each_connection_has_a_chromium(
        site: ScenarioServer) -> None:
    async with cdpnb.launch("chromium+bidi") as backend:
        ignoring, _ = await ignoring_session(backend.url)
        default = await RawBiDi.open(backend.url)
        try:
            await default.result("session.new", {"capabilities": {}})
            await default.result("session.subscribe", {"events": ["browsingContext"]})
            assert len(chromium_browsers(backend)) == 2  # one per connection
            context = await open_page(default, site.url("/blank"))
            await evaluate(default, context,
                           "setTimeout(() => { window.r = confirm('q'); }, 0); 1")
            opened = await default.event("browsingContext.userPromptOpened")
            assert opened["handler"] == "dismiss"  # chromium-bidi#3281
            closed = await default.event("browsingContext.userPromptClosed")
            assert closed["accepted"] is False
            assert await evaluate(default, context, "window.r") == {"type": "boolean",
                                                                    "value": False}
            late = await default.call("browsingContext.handleUserPrompt",
                                      {"context": context, "accept": True})
            assert late["error"] == "no such alert"
        finally:
            await default.close()
        # closing a connection ends its Chromium, and only that one
        await until(lambda: len(chromium_browsers(backend)) == 1)
        assert len(chromium_browsers(backend)) == 1
        await ignoring.close()


@pytest.mark.browser
async def test_chromium_bidi_chromium_dies_with_its_server() -> None:
    """node killed alone (not its group): its Chromium goes too (measured: at once, as
    its --remote-debugging-pipe closes); and close() ends a server with a live session
    and everything under it."""
    backend = await cdpnb.launch("chromium+bidi")
    try:
        bidi, _ = await ignoring_session(backend.url)
        browsers = chromium_browsers(backend)
        assert len(browsers) == 1
        os.kill(backend.pid, signal.SIGKILL)
        await until(lambda: not any(live(p) for p in session_members(backend.pid)))
        assert [p for p in session_members(backend.pid) if live(p)] == []
        with contextlib.suppress(Exception):
            await bidi.close()
    finally:
        await backend.aclose()
    assert not backend._browser.workdir.exists()

    async with cdpnb.launch("chromium+bidi") as backend:
        bidi, _ = await ignoring_session(backend.url)
        assert len(chromium_browsers(backend)) == 1
        started = started_pids(backend)
    check_all_ended(started)
    with contextlib.suppress(Exception):
        await bidi.close()


# --- CDP kinds through the supervisor ------------------------------------------------------------


@pytest.mark.browser
async def test_puppeteer_in_front_leaves_dialogs_to_the_supervisor(site: ScenarioServer) -> None:
    """The control beside chromium+playwright: Puppeteer attaches to the supervisor's
    page too (its log says so) and never answers a dialog; the supervisor sees each one,
    it stays open, and the supervisor's answer reaches page JS."""
    async with cdpnb.launch("chromium+puppeteer") as backend:
        sup = await cdpnb.Supervisor.start(backend, dialog_timeout_s=30)
        try:
            frames = await open_two_site(sup, site)
            for name in ("main", "srcdoc", "oopif"):
                await sup.evaluate("setTimeout(() => { window.__r = prompt('who', 'x'); }, 0); 0",
                                   frame_id=frames[name])
                dialog = await sup.wait_for_dialog(timeout=5)
                assert dialog.frame_id == frames[name] and dialog.via == "native"
                # Playwright would have dismissed it within a few ms
                await asyncio.sleep(0.3)
                assert [d.id for d in sup.snapshot().pending_dialogs] == [dialog.id]
                record = await sup.respond("accept", prompt_text=f"from {name}")
                assert record.closed_by == "agent" and record.accepted is True
                assert await sup.evaluate("window.__r", frame_id=frames[name]) == f"from {name}"
            puppeteer = backend._started.puppeteer
            assert puppeteer is not None and puppeteer.running
            log = (puppeteer.workdir / "output.log").read_text()
            # targetcreated already at the URL ("attached to page ...") or on about:blank
            # and then targetchanged ("sees page at ..."), as the timing falls.
            url = re.escape(site.url("/two-site"))
            assert re.search(rf"puppeteer (attached to page|sees page at) {url}\n", log), log
        finally:
            await sup.stop()


@pytest.mark.browser
async def test_lightpanda_through_the_supervisor(site: ScenarioServer) -> None:
    async with cdpnb.launch("lightpanda") as backend:
        sup = await cdpnb.Supervisor.start(backend, dialog_timeout_s=30)
        try:
            assert await sup.evaluate("1 + 1") == 2
            await sup.navigate(site.url("/two-site"))
            assert await sup.evaluate("document.title") == "two sites"
        finally:
            await sup.stop()

