"""Playwright attached to a browser over CDP with no dialog handler: the "cloud CDP
proxy" quirk, reproduced locally.

``chromium.connect_over_cdp`` makes Playwright auto-attach to every page target, also
to pages another CDP client creates later, and a page with no ``page.on("dialog")``
listener gets each native JS dialog dismissed by Playwright within milliseconds. A
client beside it sees ``Page.javascriptDialogOpening`` then ``…Closed`` without having
answered, and its own ``Page.handleJavaScriptDialog`` fails with "No dialog is showing".
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import contextlib
import importlib.metadata
import threading
from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any, TypeVar

from cdpnb.backends import process as _process  # noqa: F401 - its atexit must run last
from cdpnb.errors import BrowserNotFound, BrowserStartError

if TYPE_CHECKING:
    from playwright.async_api import Browser, Playwright

__all__ = ["INSTALL_HINT", "PlaywrightAttachment", "playwright_version"]

INSTALL_HINT = "pip install playwright"

T = TypeVar("T")

_live: set[PlaywrightAttachment] = set()
_live_lock = threading.Lock()


def playwright_version() -> str | None:
    """The installed ``playwright`` package's version, or None when it is missing."""
    try:
        return importlib.metadata.version("playwright")
    except importlib.metadata.PackageNotFoundError:
        return None


class PlaywrightAttachment:
    """Playwright's ``connect_over_cdp`` on an event loop of its own, in a daemon thread.

    Playwright's async API needs a loop that keeps running between our calls, and the
    caller may have no loop (a script) or one that must not be blocked or nested into
    (a Jupyter kernel). So Playwright gets a private loop in a thread of its own, and
    every call is handed to it with ``run_coroutine_threadsafe``; whatever the caller's
    loop does, Playwright keeps dismissing dialogs.

    Construction starts Playwright's node driver at once, so it boots while the
    browser starts; ``connect`` then attaches; ``close`` disconnects, stops the driver
    and joins the thread. The browser itself is never closed by Playwright: it belongs
    to whoever launched it, and is ended by its pid after ``close``.
    """

    def __init__(self, timeout: float = 20.0) -> None:
        try:
            from playwright.async_api import async_playwright
        except ImportError as exc:
            raise BrowserNotFound(f"the playwright package is not importable ({exc}); install "
                                  f"it with `{INSTALL_HINT}` (no `playwright install` needed: "
                                  "it attaches to cdpnb's own Chromium)") from exc
        self.version = playwright_version() or "?"
        self.timeout = timeout
        self._playwright: Playwright | None = None
        self._browser: Browser | None = None
        self._connecting: concurrent.futures.Future[None] | None = None
        self._closed = False
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop  # set by _serve, in the thread
        self._stop: asyncio.Event
        up = threading.Event()
        self._thread = threading.Thread(target=asyncio.run, args=(self._serve(up),),
                                        name="cdpnb-playwright", daemon=True)
        self._thread.start()
        up.wait()
        with _live_lock:
            _live.add(self)

        async def start_driver() -> None:
            self._playwright = await async_playwright().start()

        self._starting = self._submit(start_driver())

    async def _serve(self, up: threading.Event) -> None:
        """The thread's whole life: run the loop until ``close`` sets ``_stop``; then
        ``asyncio.run`` cancels what is left and closes the loop."""
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        up.set()
        await self._stop.wait()

    def _submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        return asyncio.run_coroutine_threadsafe(coro, self._loop)

    @property
    def thread(self) -> threading.Thread:
        return self._thread

    @property
    def connected(self) -> bool:
        # Read from the caller's thread: a plain flag of Playwright's, no call into it.
        return self._browser is not None and self._browser.is_connected()

    def connect(self, http_url: str) -> None:
        """Attach to the browser at ``http_url`` (blocking; at most ``timeout`` s)."""
        try:
            self._starting.result(self.timeout)
        except concurrent.futures.TimeoutError:
            raise BrowserStartError(f"Playwright's driver did not start within "
                                    f"{self.timeout:g} s") from None
        except Exception as exc:
            raise BrowserStartError(f"Playwright's driver did not start: {exc}") from exc

        async def attach() -> None:
            assert self._playwright is not None
            # No page.on("dialog") anywhere: that is what makes Playwright dismiss them.
            self._browser = await self._playwright.chromium.connect_over_cdp(
                http_url, timeout=self.timeout * 1000)

        self._connecting = self._submit(attach())
        try:
            self._connecting.result(self.timeout + 1)
        except concurrent.futures.TimeoutError:
            raise BrowserStartError(f"Playwright did not attach to {http_url} within "
                                    f"{self.timeout:g} s") from None
        except Exception as exc:
            raise BrowserStartError(f"Playwright could not attach to {http_url}: "
                                    f"{exc}") from exc

    async def _shutdown(self) -> None:
        if self._connecting is not None and not self._connecting.done():
            self._connecting.cancel()
        # A driver still booting is waited for, not cancelled: cancelling it halfway
        # could leave its node process running with nobody to stop it.
        for pending in (self._connecting, self._starting):
            if pending is not None:
                await asyncio.gather(asyncio.wrap_future(pending), return_exceptions=True)
        try:
            if self._browser is not None:
                # For a connect_over_cdp browser this only drops Playwright's connection.
                await self._browser.close()
        finally:
            if self._playwright is not None:
                await self._playwright.stop()

    def close(self) -> None:
        """Disconnect, stop the driver, end the loop and join the thread. Idempotent;
        call it before the browser is ended, so Playwright sees an orderly goodbye."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        with _live_lock:
            _live.discard(self)
        try:
            # Best effort: whatever the shutdown says, the loop is ended and joined below.
            with contextlib.suppress(Exception):
                self._submit(self._shutdown()).result(self.timeout)
        finally:
            self._loop.call_soon_threadsafe(self._stop.set)
            self._thread.join(self.timeout)

    def __repr__(self) -> str:
        state = "closed" if self._closed else "connected" if self.connected else "starting"
        return f"<PlaywrightAttachment playwright {self.version} {state}>"


# Registered after cdpnb.backends.process's handler (imported above), and atexit runs
# handlers last-in first-out: so at exit Playwright lets go before browsers are ended.
@atexit.register
def _close_all_at_exit() -> None:
    with _live_lock:
        attachments = list(_live)
    for attachment in attachments:
        attachment.close()
