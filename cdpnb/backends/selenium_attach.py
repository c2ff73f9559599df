"""A Selenium ``webdriver.Chrome`` session driving Debian Chromium while cdpnb
supervises the same browser over CDP: ``cdpnb.launch("chromium+selenium")``.

Selenium starts Debian's chromedriver itself (``Service(executable_path=…)``: with a
driver path given, Selenium Manager is never run, so nothing is downloaded or looked
up), in a session of its own (``popen_kw``) that cdpnb watches like every program it
starts: a work dir with Selenium's log and Chromium's profile, a reaper that ends the
group if this Python dies, the group ended by ``close()`` after ``driver.quit()``.
The session's ``goog:chromeOptions.debuggerAddress`` is the browser's DevTools port
(Chromium binds 127.0.0.1; chromedriver names it ``localhost:PORT``), where cdpnb's
supervisor connects beside Selenium.

Selenium asks for no ``unhandledPromptBehavior``, so chromedriver applies W3C's
default, "dismiss and notify" — but only when Selenium sends a command: a dialog
opened while Selenium is idle stays open for cdpnb to see and answer, and the next
Selenium command that meets one dismisses it and fails with UnexpectedAlertPresent
(measured: ``tests/test_selenium_backend.py``).
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import time
from dataclasses import dataclass
from typing import Any

from cdpnb.backends import reaper
from cdpnb.backends.chromium import find_executable, merged_flags
from cdpnb.backends.process import (
    Executable,
    LocalProcess,
    Reaper,
    Spawned,
    guard_started,
    new_workdir,
)
from cdpnb.backends.webdriver_servers import (
    CHROMEDRIVER_CHROMIUM_FLAGS,
    chromedriver_version,
    find_chromedriver,
)
from cdpnb.errors import BrowserNotFound, BrowserStartError
from cdpnb.transport import get_json

__all__ = ["INSTALL_HINT", "SeleniumProcess", "selenium_version"]

INSTALL_HINT = "pip install 'selenium>=4.51,<4.53'"


def selenium_version() -> str | None:
    """The installed ``selenium`` package's version, or None when it is missing."""
    try:
        return importlib.metadata.version("selenium")
    except importlib.metadata.PackageNotFoundError:
        return None


@dataclass(kw_only=True)
class SeleniumProcess(LocalProcess):
    """Selenium's chromedriver (``process``: its pid and group are what cdpnb ends),
    and the browser it started for the session: ``cdp_url`` is that browser's DevTools
    endpoint, ``driver`` Selenium's ``webdriver.Chrome``."""

    driver: Any
    browser_executable: str
    browser_pid: int | None
    session_id: str
    selenium_version: str
    chromedriver_version: str

    @classmethod
    def start(cls, executable: Executable = None, extra_args: tuple[str, ...] = (),
              timeout: float = 20.0) -> SeleniumProcess:
        browser = find_executable("chromium", executable)
        chromedriver = find_chromedriver()
        try:
            from selenium import webdriver
            from selenium.webdriver.chrome.service import Service
        except ImportError as exc:
            raise BrowserNotFound(f"the selenium package is not importable ({exc}); install "
                                  f"it with `{INSTALL_HINT}`") from exc
        began = time.monotonic()
        workdir = new_workdir("chromium+selenium", on_ram=True)  # (the profile is in it)
        guards: list[Reaper] = []

        class WatchedService(Service):
            """Selenium's Service, its chromedriver watched by a reaper from the moment
            it answers (before any browser is started)."""

            def start(self) -> None:
                super().start()
                guards.append(guard_started(self.process, workdir))

        service = WatchedService(executable_path=chromedriver,
                                 log_output=str(workdir / "chromedriver.log"),
                                 popen_kw={"start_new_session": True})
        options = webdriver.ChromeOptions()
        options.binary_location = browser
        for flag in merged_flags([*CHROMEDRIVER_CHROMIUM_FLAGS,
                                  f"--user-data-dir={workdir / 'profile'}"], extra_args):
            options.add_argument(flag)
        driver = None
        try:
            driver = webdriver.Chrome(options=options, service=service)
            caps = driver.capabilities
            address = str(caps.get("goog:chromeOptions", {}).get("debuggerAddress", ""))
            port = int(address.rpartition(":")[2]) if address[-1:].isdigit() else 0
            if not port:
                raise BrowserStartError(f"Selenium's session names no debuggerAddress "
                                        f"({address!r})")
            http_url = f"http://127.0.0.1:{port}"
            version_info = get_json(http_url + "/json/version", timeout)
        except BaseException as exc:
            if driver is not None:
                with contextlib.suppress(Exception):
                    driver.quit()
            else:
                with contextlib.suppress(Exception):
                    service.stop()
            _end_group(service, guards)
            reaper.remove_workdir(str(workdir))
            if isinstance(exc, Exception) and \
                    not isinstance(exc, BrowserStartError | BrowserNotFound):
                raise BrowserStartError(f"Selenium could not start Chromium through "
                                        f"{chromedriver}: {exc}") from exc
            raise
        ready_at = time.monotonic()
        started: Spawned[None] = Spawned(service.process, workdir,
                                         (chromedriver, *service.command_line_args()), None,
                                         ready_at - began, guards[0], began, ready_at)
        browser_pid = caps.get("goog:processID")
        process = cls.adopt(started, kind="chromium+selenium", executable=chromedriver,
                            port=port, cdp_url=str(version_info["webSocketDebuggerUrl"]),
                            driver=driver, browser_executable=browser,
                            browser_pid=browser_pid if isinstance(browser_pid, int) else None,
                            session_id=str(driver.session_id),
                            selenium_version=selenium_version() or "?",
                            chromedriver_version=chromedriver_version(chromedriver))
        process.version_info = version_info
        return process

    def close(self) -> None:
        """Selenium ends its session (the browser) and its chromedriver; then cdpnb ends
        whatever of the group is left and removes the work dir."""
        try:
            with contextlib.suppress(Exception):
                self.driver.quit()
        finally:
            super().close()


def _end_group(service: Any, guards: list[Reaper]) -> None:
    """After a failed start: the group ended, the reaper dismissed."""
    process = getattr(service, "process", None)
    if process is not None and guards:
        reaper.end_group(process.pid, guards[0].pgid_start)
    for guard in guards:
        guard.dismiss()
