"""The WebDriver-server backends as launchers: ``webkit`` (WebKitWebDriver under an
Xvfb of cdpnb's) and ``chromium+chromedriver``. Each starts on loopback, makes a
browser per session, and ends by pid with everything a session started, also when
the session was never deleted; webkit's Xvfb goes with it."""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import cdpnb
from cdpnb.backends import backend_available, reaper
from cdpnb.backends.chromium import chromium_version, find_executable
from cdpnb.backends.listeners import is_loopback, listeners
from cdpnb.backends.webdriver_servers import OFFLINE_RESOLVER_RULES, WebKitWebDriverProcess
from cdpnb.transport.webdriver_http import WebDriverError, WebDriverServer
from tests.test_launch import pid_alive

pytestmark = pytest.mark.browser

#: POST /session starts a browser: 0.3-1 s alone, more on a loaded machine.
SESSION_TIMEOUT_S = 60.0


def comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


def wait_gone(pids: list[int], timeout: float = 20.0) -> list[int]:
    deadline = time.monotonic() + timeout
    while True:
        left = [pid for pid in pids if pid_alive(pid) and comm(pid)]
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.05)


def check_loopback(pids: list[int], endpoint_port: int) -> None:
    found = listeners(pids)
    assert endpoint_port in {listener.port for listener in found}, found
    assert all(is_loopback(listener.host) for listener in found), found


def test_webkit_runs_a_minibrowser_per_session_under_its_own_xvfb_and_ends_it_all() -> None:
    with cdpnb.launch("webkit") as backend:
        driver = backend._browser
        assert isinstance(driver, WebKitWebDriverProcess)
        xvfb = driver.xvfb
        assert backend.kind == "webkit" and backend.protocol == "classic"
        assert backend.url == backend.cdp_url == backend.http_url == \
            f"http://127.0.0.1:{driver.port}"
        assert backend.version.startswith("WebKitGTK/2.")
        info = backend.describe()
        assert info["webkit"]["display"] == xvfb.display and info["protocol"] == "classic"
        assert "--replace-on-new-session" in backend.args
        assert "--host=127.0.0.1" in backend.args
        assert backend.webdriver_capabilities == {"unhandledPromptBehavior": "ignore"}
        # X: a local socket only (-nolisten tcp), on the display it found free.
        assert xvfb.running and listeners([xvfb.pid]) == []
        assert {"-nolisten", "tcp"} <= set(xvfb.args)
        environ = Path(f"/proc/{backend.pid}/environ").read_bytes().split(b"\0")
        assert f"DISPLAY={xvfb.display}".encode() in environ
        home = driver.workdir / "home"
        assert f"XDG_CACHE_HOME={home / 'cache'}".encode() in environ

        server = WebDriverServer(backend.url)
        assert server.status(10)["ready"] is True
        made = server.new_session(backend.webdriver_capabilities, SESSION_TIMEOUT_S)
        assert made.capabilities["browserName"] == "MiniBrowser"
        assert backend.version == f"WebKitGTK/{made.capabilities['browserVersion']}"
        assert made.capabilities["unhandledPromptBehavior"] == "ignore"
        members = reaper.members(backend.pid)
        names = {comm(pid) for pid in members}
        assert {"WebKitWebDriver", "MiniBrowser"} <= names, names
        check_loopback(members, driver.port)
        # Its caches are in the work dir, not in this user's home.
        assert (home / "cache" / "gstreamer-1.0").is_dir()
        # A client that dies leaves its session: the next one replaces it.
        again = server.new_session(backend.webdriver_capabilities, SESSION_TIMEOUT_S)
        assert again.session_id != made.session_id
        with pytest.raises(WebDriverError) as gone:
            server.request("GET", f"/session/{made.session_id}/url", None, 10)
        assert gone.value.error == "invalid session id"
        members = reaper.members(backend.pid)
        server.close()
        # The session is never deleted: closing the backend ends it anyway.
    assert wait_gone([*members, xvfb.pid]) == []
    assert not driver.workdir.exists() and not xvfb.workdir.exists()
    assert not xvfb.running and not backend.running


def test_chromedriver_starts_each_session_a_debian_chromium_on_loopback_and_ends_them() -> None:
    with cdpnb.launch("chromium+chromedriver") as backend:
        assert backend.kind == "chromium+chromedriver" and backend.protocol == "classic"
        assert backend.url == backend.http_url == f"http://127.0.0.1:{backend._browser.port}"
        assert os.path.basename(backend.executable) == "chromedriver"
        info = backend.describe()
        assert backend.version == chromium_version(find_executable("chromium"))
        assert backend.version == f"Chrome/{info['chromedriver']['version']}"
        first, second = backend.webdriver_capabilities, backend.webdriver_capabilities
        assert first is not None and second is not None
        options = first["goog:chromeOptions"]
        # The binary cdpnb chose, and an ELF program, not Debian's wrapper script (which
        # package's layout holds it is the package's business).
        assert options["binary"] == find_executable("chromium")
        with open(options["binary"], "rb") as program:
            assert program.read(4) == b"\x7fELF"
        assert "--headless" in options["args"]
        assert ("--no-sandbox" in options["args"]) == (os.geteuid() == 0)
        assert not any(a.startswith("--remote-debugging-port") for a in options["args"])
        assert OFFLINE_RESOLVER_RULES in options["args"]  # no DNS query of its own
        profile = [a for a in options["args"] if a.startswith("--user-data-dir=")]
        assert profile != [a for a in second["goog:chromeOptions"]["args"]
                           if a.startswith("--user-data-dir=")]  # a fresh one each time
        assert profile[0].startswith(f"--user-data-dir={backend._browser.workdir}/")
        assert first["unhandledPromptBehavior"] == {"default": "ignore",
                                                    "beforeUnload": "ignore"}

        server = WebDriverServer(backend.url)
        made = server.new_session(first, SESSION_TIMEOUT_S)
        assert made.capabilities["unhandledPromptBehavior"] == first["unhandledPromptBehavior"]
        browser_pid = made.capabilities["goog:processID"]
        members = reaper.members(backend.pid)
        assert browser_pid in members
        assert os.readlink(f"/proc/{browser_pid}/exe") == os.path.realpath(options["binary"])
        check_loopback(members, backend._browser.port)
        # CDP on the same browser, for a supervisor beside the session.
        debugger = made.capabilities["goog:chromeOptions"]["debuggerAddress"]
        port = int(debugger.rpartition(":")[2])
        assert port in {listener.port for listener in listeners([browser_pid])}
        server.close()
        workdir = backend._browser.workdir
    assert wait_gone(members) == []
    assert not workdir.exists() and not backend.running


def test_a_missing_driver_names_the_debian_package(monkeypatch: pytest.MonkeyPatch,
                                                   tmp_path: Path) -> None:
    from cdpnb.backends import webdriver_servers, xvfb
    monkeypatch.setenv("PATH", str(tmp_path))
    for variable in ("CDPNB_WEBKITWEBDRIVER", "CDPNB_CHROMEDRIVER", "CDPNB_XVFB"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setattr(xvfb, "_CANDIDATES", ("/nonexistent/Xvfb",))
    # WebKitWebDriver there, no X server: xvfb is what to install.
    assert backend_available("webkit") == "not installed: apt-get install xvfb"
    for name in ("WEBKITWEBDRIVER", "CHROMEDRIVER"):
        monkeypatch.setattr(webdriver_servers, name, dataclasses.replace(
            getattr(webdriver_servers, name), candidates=("/nonexistent/driver",)))
    assert backend_available("webkit") == "not installed: apt-get install " \
                                                "webkit2gtk-driver"
    for kind in ("chromium+chromedriver", "chromium+chromedriver+bidi", "chromium+selenium"):
        assert backend_available(kind) == "not installed: apt-get install chromium-driver"
    with pytest.raises(cdpnb.BrowserNotFound, match="`apt-get install chromium-driver`"), \
            cdpnb.launch("chromium+chromedriver"):
        pass
    with pytest.raises(cdpnb.BrowserNotFound, match="`apt-get install webkit2gtk-driver`"), \
            cdpnb.launch("webkit"):
        pass


DYING_OWNER = r"""
import json, sys, time
import cdpnb
from cdpnb.backends import reaper
from cdpnb.transport.webdriver_http import WebDriverServer

webkit = cdpnb.launch("webkit").start_blocking()
# A session that is never deleted: its MiniBrowser must die with this Python too.
WebDriverServer(webkit.url).new_session(webkit.webdriver_capabilities, 60)
selenium = cdpnb.launch("chromium+selenium").start_blocking()
xvfb = webkit._browser.xvfb
print(json.dumps({
    "pids": [*reaper.members(webkit.pid), *reaper.members(selenium.pid), xvfb.pid],
    "workdirs": [str(webkit._browser.workdir), str(xvfb.workdir),
                 str(selenium._browser.workdir)]}), flush=True)
time.sleep(600)
"""


def test_every_process_dies_with_the_python_that_launched_it() -> None:
    """SIGKILL runs no atexit handler: the reapers end WebKitWebDriver's group (its
    MiniBrowser and WebKit processes), the Xvfb, and Selenium's chromedriver and
    Chromium."""
    root = Path(__file__).resolve().parent.parent
    child = subprocess.Popen([sys.executable, "-c", DYING_OWNER], cwd=root,
                             stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None
    try:
        line = child.stdout.readline()
        assert line, f"the child printed nothing (exit code {child.poll()})"
        info = json.loads(line)
        names = {comm(pid) for pid in info["pids"]}
        assert {"MiniBrowser", "WebKitWebDriver", "Xvfb", "chromedriver", "chromium"} <= names
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
    assert wait_gone(info["pids"]) == []
    # (each reaper removes its work dir once its group is gone)
    deadline = time.monotonic() + 20
    while any(Path(d).exists() for d in info["workdirs"]) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert [d for d in info["workdirs"] if Path(d).exists()] == []
