"""``cdpnb.launch(kind)``: start a backend for the length of a ``with`` block."""

from __future__ import annotations

import asyncio
import os
from types import TracebackType
from typing import Any

from cdpnb.backends.chromium import KINDS, BrowserProcess
from cdpnb.transport import get_json

__all__ = ["Backend", "launch"]


class Backend:
    """A running backend: where to connect, and what it is."""

    def __init__(self, browser: BrowserProcess) -> None:
        self._browser = browser

    @property
    def kind(self) -> str:
        return self._browser.kind

    @property
    def cdp_url(self) -> str:
        """The browser's WebSocket endpoint (``ws://127.0.0.1:PORT/devtools/browser/<id>``)."""
        return self._browser.cdp_url

    @property
    def http_url(self) -> str:
        return self._browser.http_url

    @property
    def version(self) -> str:
        """``Browser`` from ``/json/version``, e.g. ``HeadlessChrome/156.0.8078.79``."""
        return self._browser.version

    @property
    def version_info(self) -> dict[str, Any]:
        return dict(self._browser.version_info)

    @property
    def pid(self) -> int:
        return self._browser.pid

    @property
    def executable(self) -> str:
        return self._browser.executable

    @property
    def args(self) -> tuple[str, ...]:
        return self._browser.args

    @property
    def running(self) -> bool:
        return self._browser.running

    @property
    def started_in_s(self) -> float:
        return self._browser.started_in_s

    def describe(self) -> dict[str, Any]:
        """What this backend is and how it was started (for matrices and traces)."""
        return {"kind": self.kind, "version": self.version, "executable": self.executable,
                "args": list(self.args), "cdp_url": self.cdp_url,
                "started_in_s": round(self.started_in_s, 4)}

    def close(self) -> None:
        """End the browser by its pid and remove its temporary directory."""
        self._browser.close()

    def __repr__(self) -> str:
        state = "running" if self.running else "ended"
        return f"<Backend {self.kind} {self.version or '?'} pid={self.pid} {state}>"


def _start(kind: str, executable: str | os.PathLike[str] | None, args: tuple[str, ...],
           timeout: float) -> BrowserProcess:
    """Start the browser and read what it is; blocking, so async callers use a thread."""
    browser = BrowserProcess.start(kind, executable, args, timeout)
    try:
        browser.version_info = get_json(browser.http_url + "/json/version")
    except BaseException:
        browser.close()
        raise
    return browser


def _close_when_started(starting: asyncio.Future[BrowserProcess]) -> None:
    if not starting.cancelled() and starting.exception() is None:
        starting.result().close()


class launch:
    """Start a browser backend; end it when the block exits, also on error.

    ``kind`` is ``"chromium"`` or ``"headless-shell"``; ``executable=`` (or
    ``$CDPNB_CHROMIUM``) overrides the binary; ``args`` adds browser flags.
    """

    def __init__(
        self,
        kind: str = "chromium",
        *,
        executable: str | os.PathLike[str] | None = None,
        args: tuple[str, ...] | list[str] = (),
        timeout: float = 20.0,
    ) -> None:
        if kind not in KINDS:
            raise ValueError(f"unknown backend kind {kind!r}; choose one of {', '.join(KINDS)}")
        if isinstance(args, str) or not all(isinstance(a, str) for a in args):
            raise TypeError(f"args must be a list of flag strings, got {args!r}")
        self.kind = kind
        self.executable = executable
        self.args = tuple(args)
        self.timeout = timeout
        self.backend: Backend | None = None

    def start_blocking(self) -> Backend:
        browser = _start(self.kind, self.executable, self.args, self.timeout)
        self.backend = Backend(browser)
        return self.backend

    def close_blocking(self) -> None:
        if self.backend is not None:
            self.backend.close()

    async def __aenter__(self) -> Backend:
        starting = asyncio.ensure_future(asyncio.to_thread(
            _start, self.kind, self.executable, self.args, self.timeout))
        try:
            browser = await asyncio.shield(starting)
        except asyncio.CancelledError:
            # The thread goes on starting the browser; end it once it is up, so an
            # interrupted cell or an expired wait_for leaves nothing running.
            starting.add_done_callback(_close_when_started)
            raise
        self.backend = Backend(browser)
        return self.backend

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await asyncio.to_thread(self.close_blocking)

    def __enter__(self) -> Backend:
        return self.start_blocking()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close_blocking()
