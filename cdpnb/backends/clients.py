"""The automation clients a launch attaches in front of its browser, with no dialog
handler: Playwright (``chromium+playwright``) and Puppeteer (``chromium+puppeteer``).

Each is made before the browser starts (what it needs is checked first, so a missing
package fails before a browser is started, and Playwright's driver boots while Chromium
starts), attached once the browser is up, and closed before the browser is ended, so it
sees an orderly disconnect rather than a dead browser.
"""

from __future__ import annotations

from typing import Any, Protocol

from cdpnb.backends import npm, puppeteer_attach
from cdpnb.backends.chromium import find_executable
from cdpnb.backends.node import find_node
from cdpnb.backends.playwright_attach import PlaywrightAttachment
from cdpnb.backends.process import Executable, LocalProcess
from cdpnb.backends.puppeteer_attach import PuppeteerProcess

__all__ = ["FrontClient", "PlaywrightInFront", "PuppeteerInFront"]


class FrontClient(Protocol):
    """A client riding along in front of a launched browser."""

    #: It closes every native dialog itself (no handler): ``bridge="auto"`` then turns
    #: the dialog bridge on from the start (``Backend.describe()["dismisses_dialogs"]``).
    dismisses_dialogs: bool

    def attach(self, browser: LocalProcess) -> None:
        """Attach to ``browser``, now up (blocking)."""

    def close(self) -> None:
        """Let go of the browser (it is not the client's to end). Idempotent."""

    def described(self) -> dict[str, Any]:
        """What ``Backend.describe()`` says of it, under its own key."""


class PlaywrightInFront:
    """Playwright's ``chromium.connect_over_cdp`` with no dialog handler."""

    #: Playwright with no ``dialog`` handler dismisses every native dialog, on every page
    #: (other clients' too).
    dismisses_dialogs = True

    def __init__(self, executable: Executable, timeout: float) -> None:
        find_executable("chromium", executable)  # a missing browser fails before the driver
        # Playwright's driver boots while Chromium starts: ~0.6 s each on their own.
        self.attachment = PlaywrightAttachment(timeout)

    def attach(self, browser: LocalProcess) -> None:
        self.attachment.connect(browser.http_url)

    def close(self) -> None:
        self.attachment.close()

    def described(self) -> dict[str, Any]:
        return {"playwright": {"version": self.attachment.version,
                               "attached_via": "chromium.connect_over_cdp",
                               "dialog_handler": None}}


class PuppeteerInFront:
    """npm ``puppeteer-core``'s ``connect({browserURL})`` with no dialog handler, in a
    node process of its own."""

    #: Puppeteer with no ``dialog`` handler leaves dialogs open.
    dismisses_dialogs = False

    def __init__(self, executable: Executable, timeout: float) -> None:
        # Missing npm packages or node fail before a browser is started.
        npm.require(puppeteer_attach.PACKAGES)
        find_node()
        self.timeout = timeout
        self.process: PuppeteerProcess | None = None

    def attach(self, browser: LocalProcess) -> None:
        self.process = PuppeteerProcess.attach(browser.http_url, browser.port, self.timeout)

    def close(self) -> None:
        if self.process is not None:
            self.process.close()

    def described(self) -> dict[str, Any]:
        process = self.process
        return {"puppeteer": {"version": None if process is None else process.puppeteer_version,
                              "attached_via": "puppeteer.connect({browserURL})",
                              "dialog_handler": None,
                              "pid": None if process is None else process.pid}}
