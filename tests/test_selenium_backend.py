"""``chromium+selenium``: a Selenium ``webdriver.Chrome`` session (Debian chromedriver,
no Selenium Manager) driving Debian Chromium, and cdpnb supervising the same browser
over CDP through the session's ``debuggerAddress``.

Measured (Selenium 4.51, chromedriver and Chromium 156.0.8078.108): Selenium asks for
no ``unhandledPromptBehavior``, so chromedriver's "dismiss and notify" applies, and only
when a Selenium command meets a dialog: a dialog that opens while Selenium is idle
stays open for cdpnb; the next Selenium command dismisses it (the page gets null) and
raises UnexpectedAlertPresentException. ``driver.get`` of a page whose main frame opens
a prompt returns at once with the prompt open. A prompt in a cross-site iframe during
``driver.get``: with cdpnb supervising the tab the get returns (0.08-0.2 s) while the
prompt is open, and cdpnb answers it; with nobody supervising, the get never returned
(chromedriver's 15 s page-load timeout did not end it; Selenium's 120 s HTTP read
timeout did), twice out of twice.
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import os
import threading
from collections.abc import Iterator
from typing import Any

import pytest

import cdpnb
from cdpnb.backends import reaper
from cdpnb.backends.chromium import chromium_version, find_executable
from cdpnb.backends.listeners import is_loopback, listeners
from cdpnb.backends.selenium_attach import SeleniumProcess
from cdpnb.backends.webdriver_servers import find_chromedriver
from cdpnb.probes import ScenarioServer
from tests.conftest import wait_report
from tests.test_webdriver_servers import wait_gone

pytestmark = pytest.mark.browser

CHILD = ("<!doctype html><title>child</title><script>const r = prompt('from the iframe', "
         "'d'); fetch('/report?frame=iframe&value=' + "
         "encodeURIComponent(JSON.stringify(r)));</script>")
OUTER = "<!doctype html><title>outer</title><iframe src='{B}/selenium-child'></iframe>"


@pytest.fixture(scope="module")
def selenium_chromium() -> Iterator[cdpnb.Backend]:
    with cdpnb.launch("chromium+selenium") as backend:
        yield backend


def get_in_thread(driver: Any, url: str) -> tuple[threading.Thread, dict[str, Any]]:
    """``driver.get(url)`` on a thread of its own (it blocks while the page loads)."""
    outcome: dict[str, Any] = {}

    def get() -> None:
        try:
            driver.get(url)
            outcome["error"] = None
        except Exception as exc:
            outcome["error"] = exc

    thread = threading.Thread(target=get, name="selenium-get", daemon=True)
    thread.start()
    return thread, outcome


def test_selenium_starts_debian_chromium_through_chromedriver_and_ends_it_all(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from selenium.webdriver.common.selenium_manager import SeleniumManager

    def never(*args: object) -> None:
        raise AssertionError("Selenium Manager was run (it would look up or download)")

    monkeypatch.setattr(SeleniumManager, "binary_paths", never)
    with cdpnb.launch("chromium+selenium") as backend:
        process = backend._browser
        assert isinstance(process, SeleniumProcess)
        assert backend.protocol == "cdp" and backend.url.startswith("ws://127.0.0.1:")
        assert backend.url == backend.version_info["webSocketDebuggerUrl"]
        # The Chromium cdpnb chose, whatever its version: a Debian update must not fail this.
        assert backend.version == chromium_version(find_executable("chromium"))
        # The pid cdpnb holds is chromedriver itself (not a wrapper). Compared through
        # realpath, not a fixed path: chromium-driver 156.0.8078.114 made
        # /usr/bin/chromedriver a symlink to /usr/lib/chromium/chromedriver, which is what
        # /proc/PID/exe names.
        assert backend.executable == find_chromedriver()
        assert os.readlink(f"/proc/{backend.pid}/exe") == os.path.realpath(backend.executable)
        info = backend.describe()["selenium"]
        driver = backend.selenium
        assert info["session_id"] == driver.session_id
        assert info["version"] == importlib.metadata.version("selenium")
        assert driver.capabilities["unhandledPromptBehavior"] == "dismiss and notify"
        browser = info["browser_pid"]
        assert os.readlink(f"/proc/{browser}/exe") == os.path.realpath(find_executable("chromium"))
        members = reaper.members(backend.pid)
        assert browser in members  # in the group cdpnb ends
        found = listeners(members)
        assert {backend._browser.port} <= {listener.port for listener in found}
        assert all(is_loopback(listener.host) for listener in found), found
        workdir = process.workdir
        assert (workdir / "chromedriver.log").exists() and (workdir / "profile").is_dir()
    assert wait_gone(members) == []
    assert not workdir.exists() and not backend.running


async def test_a_cross_site_iframe_prompt_is_answered_by_cdpnb_while_selenium_navigates(
        selenium_chromium: cdpnb.Backend, site: ScenarioServer) -> None:
    site.add("/selenium-child", CHILD)
    outer = site.add("/selenium-outer", OUTER)
    site.requests.clear()
    # Selenium's own tab: the one the supervisor adopts.
    async with await cdpnb.Supervisor.start(selenium_chromium, page="first",
                                            dialog_timeout_s=60) as sup:
        thread, outcome = get_in_thread(selenium_chromium.selenium, outer)
        dialog = await sup.wait_for_dialog(timeout=30)
        frame = sup.frame_tree().find(dialog.frame_id)
        assert frame is not None and frame.is_oopif
        assert frame.url == site.url("/selenium-child", "b")
        assert (dialog.type, dialog.message) == ("prompt", "from the iframe")
        record = await sup.respond("accept", prompt_text="answered beside Selenium")
        assert record.closed_by == "agent"
        assert await wait_report(site, "iframe") == "answered beside Selenium"
        thread.join(60)
        assert not thread.is_alive() and outcome["error"] is None
        assert selenium_chromium.selenium.title == "outer"


async def test_selenium_dismisses_a_dialog_only_when_a_command_of_its_own_meets_it(
        selenium_chromium: cdpnb.Backend, site: ScenarioServer) -> None:
    from selenium.common.exceptions import UnexpectedAlertPresentException
    driver = selenium_chromium.selenium
    site.requests.clear()
    async with await cdpnb.Supervisor.start(selenium_chromium, page="first",
                                            dialog_timeout_s=60, bridge=False) as sup:
        driver.get(site.url("/blank"))
        driver.execute_script("setTimeout(() => { const r = confirm('idle'); fetch("
                              "'/report?frame=idle&value=' + JSON.stringify(r)); }, 50)")
        dialog = await sup.wait_for_dialog(timeout=30)
        # Selenium idle: nobody dismisses it (well past any auto-dismisser's few ms).
        await asyncio.sleep(0.5)
        assert [d.id for d in sup.state.pending_dialogs] == [dialog.id]
        with pytest.raises(UnexpectedAlertPresentException, match="idle"):
            driver.title  # noqa: B018 - the command is what dismisses it
        assert await wait_report(site, "idle") is False
        closed = next(r for r in sup.snapshot().recent_dialogs if r.id == dialog.id)
        assert (closed.closed_by, closed.accepted) == ("remote", False)
