"""``cdpnb.launch(kind)``: start a backend, for a ``with`` block or until ``close()``."""

from __future__ import annotations

import os
import time
from collections.abc import Generator
from dataclasses import dataclass
from functools import partial
from types import TracebackType
from typing import Any

from cdpnb.backends.bidi_mapper import ChromiumBidiProcess
from cdpnb.backends.clients import FrontClient, PlaywrightInFront, PuppeteerInFront
from cdpnb.backends.kinds import (
    BIDI_KINDS,
    CLASSIC_KINDS,
    LAUNCHABLE,
    RUNTIME_KINDS,
    WEBDRIVER_SERVER_KINDS,
    WIP_KINDS,
    BackendKind,
    backend_available,
    backend_kind,
    kind_protocol,
)
from cdpnb.backends.playwright_attach import PlaywrightAttachment
from cdpnb.backends.process import LocalProcess
from cdpnb.backends.puppeteer_attach import PuppeteerProcess
from cdpnb.backends.selenium_attach import SeleniumProcess
from cdpnb.backends.webdriver_servers import ChromedriverProcess, WebKitWebDriverProcess
from cdpnb.errors import BackendNotStarted
from cdpnb.protocol.specs import CLASSIC
from cdpnb.runtime.closing import Closing
from cdpnb.runtime.threads import in_own_thread
from cdpnb.transport import Transport
from cdpnb.transport.webdriver_bidi import connect_webdriver_bidi

# The kinds' names and sets live with the kinds (cdpnb.backends.kinds); importable here
# as before.
__all__ = ["BIDI_KINDS", "CLASSIC_KINDS", "LAUNCHABLE", "RUNTIME_KINDS", "WEBDRIVER_SERVER_KINDS",
           "WIP_KINDS", "Backend", "backend_available", "kind_protocol", "launch"]


@dataclass
class _Started:
    """What one launch started: the process, and the client in front when one rides
    along."""

    spec: BackendKind
    process: LocalProcess
    started_in_s: float
    client: FrontClient | None = None
    #: ``time.monotonic()`` when the launch began.
    began: float = 0.0

    @property
    def kind(self) -> str:
        return self.spec.name

    @property
    def attachment(self) -> PlaywrightAttachment | None:
        """Playwright, when it is the client in front (tests look at its thread)."""
        client = self.client
        return client.attachment if isinstance(client, PlaywrightInFront) else None

    @property
    def puppeteer(self) -> PuppeteerProcess | None:
        """Puppeteer's node process, when it is the client in front."""
        client = self.client
        return client.process if isinstance(client, PuppeteerInFront) else None

    def close(self) -> None:
        # The client in front lets go first, so it sees an orderly disconnect, not a
        # dead browser.
        try:
            if self.client is not None:
                self.client.close()
        finally:
            self.process.close()


class Backend(Closing):
    """A running backend: where to connect, what it is, and how it was started.

    Every kind has the same surface. ``url`` is the endpoint to connect to, in the
    ``protocol`` it speaks (``"cdp"``, ``"bidi"`` or ``"wip"``): the browser endpoint for
    the CDP browsers, the one target's endpoint for ``node``, ``deno`` and ``bun``, ``ws://127.0.0.1:PORT/session``
    for the WebDriver BiDi kinds (``firefox``, ``chromium+bidi``). ``cdp_url`` is the
    same URL, whatever the protocol: ``Supervisor.start`` takes anything with a
    ``cdp_url`` and finds out which protocol it speaks.
    """

    def __init__(self, started: _Started) -> None:
        self._started = started
        # The started process (a browser, or node); tests read its work dir and port.
        self._browser = started.process

    @property
    def kind(self) -> str:
        return self._started.kind

    @property
    def spec(self) -> BackendKind:
        """What kind of backend this is: its facts (:mod:`cdpnb.backends.kinds`)."""
        return self._started.spec

    @property
    def protocol(self) -> str:
        """``"cdp"``, ``"bidi"`` (WebDriver BiDi), ``"wip"`` (the WebKit Inspector
        Protocol: ``bun``) or ``"classic"`` (WebDriver classic, over HTTP): what ``url``
        speaks (``spec.protocol``'s name)."""
        return self.spec.protocol.name

    @property
    def url(self) -> str:
        """The endpoint: ``ws://127.0.0.1:PORT/devtools/browser/<id>``; node's and deno's
        ``ws://127.0.0.1:PORT/<uuid>``; bun's ``ws://127.0.0.1:PORT/cdpnb-<random>``;
        lightpanda's ``ws://127.0.0.1:PORT/``; the BiDi kinds'
        ``ws://127.0.0.1:PORT/session``; the WebDriver servers' (``webkit``,
        ``chromium+chromedriver``, ``chromium+chromedriver+bidi``)
        ``http://127.0.0.1:PORT``, where a client makes its session; for
        ``chromium+selenium`` the DevTools endpoint of the browser Selenium drives."""
        return self._browser.url

    @property
    def webdriver_capabilities(self) -> dict[str, Any] | None:
        """For a WebDriver server (:data:`WEBDRIVER_SERVER_KINDS`), what a session cdpnb
        makes there must ask for (``alwaysMatch``): prompts left open
        (``unhandledPromptBehavior`` "ignore"), and for chromedriver Debian's real
        Chromium binary, cdpnb's flags and a fresh profile in the work dir (each read
        names another). None for every other kind."""
        browser = self._browser
        if isinstance(browser, ChromedriverProcess | WebKitWebDriverProcess):
            return browser.webdriver_capabilities
        return None

    @property
    def selenium(self) -> Any:
        """``chromium+selenium``'s Selenium ``webdriver.Chrome`` (drive the browser with
        it; cdpnb's supervisor watches the same browser over CDP); None for every other
        kind."""
        browser = self._browser
        return browser.driver if isinstance(browser, SeleniumProcess) else None

    @property
    def cdp_url(self) -> str:
        """``url``, under the name ``Supervisor.start`` looks for (also for BiDi kinds)."""
        return self._browser.cdp_url

    @property
    def http_url(self) -> str:
        """``http://127.0.0.1:PORT``, the endpoint's port over HTTP (``/json/version``
        for the CDP kinds; Firefox answers it 404, chromium-bidi serves WebDriver
        classic's ``POST /session`` there)."""
        return self._browser.http_url

    @property
    def version(self) -> str:
        """``Browser`` from ``/json/version``: ``Chrome/156.…``, ``node.js/v20.…``,
        ``Deno/2.9.8``, ``Bun/1.4.5`` (its ``User-Agent``: its ``Browser`` is ``Bun``),
        ``Lightpanda/1.0``; for the BiDi kinds the browser's own ``--version``:
        ``Firefox/153.7.0esr``, ``Chrome/156.…`` (chromium+bidi)."""
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
        """Seconds from the start until usable: endpoint up, the version read, and for
        ``chromium+playwright`` / ``chromium+puppeteer`` the client attached."""
        return self._started.started_in_s

    @property
    def phases(self) -> dict[str, float]:
        """Where the launch's time went, in seconds from its start: ``spawned`` (the
        program started in its fresh work dir), ``endpoint`` (its port known),
        ``usable`` (``started_in_s``: the version read, clients attached)."""
        started, process = self._started, self._browser
        return {"spawned": process.spawned_at - started.began,
                "endpoint": process.endpoint_at - started.began,
                "usable": started.started_in_s}

    def describe(self) -> dict[str, Any]:
        """What this backend is and how it was started (for matrices and traces)."""
        spec = self.spec
        info: dict[str, Any] = {
            "kind": self.kind, "what": spec.what, "protocol": self.protocol,
            "version": self.version, "executable": self.executable, "args": list(self.args),
            "url": self.url, "cdp_url": self.cdp_url, "started_in_s": round(self.started_in_s, 4),
        }
        if spec.runtime_only:
            info["runtime_only"] = True
        client = self._started.client
        if client is not None:
            info.update(client.described())
            if client.dismisses_dialogs:
                info["dismisses_dialogs"] = True
        browser = self._browser
        if isinstance(browser, ChromiumBidiProcess):
            info["chromium_bidi"] = {"version": browser.chromium_bidi_version,
                                     "browser_executable": browser.browser_executable,
                                     "browser_per": "connection (session.new)"}
        if spec.one_session_per_browser:
            info["one_session_per_browser"] = True
        if spec.browser_per is not None:
            info["browser_per"] = spec.browser_per
        if isinstance(browser, ChromedriverProcess):
            info["chromedriver"] = {"version": browser.chromedriver_version,
                                    "browser_executable": browser.browser_executable,
                                    "browser_per": "session (POST /session)"}
        if isinstance(browser, WebKitWebDriverProcess):
            info["webkit"] = {"display": browser.xvfb.display, "xvfb_pid": browser.xvfb.pid,
                              "browser_per": "session (POST /session)",
                              "one_session_at_a_time": True}
        if isinstance(browser, SeleniumProcess):
            info["selenium"] = {"version": browser.selenium_version,
                                "chromedriver": browser.chromedriver_version,
                                "session_id": browser.session_id,
                                "browser_pid": browser.browser_pid,
                                "unhandled_prompt_behavior": "dismiss and notify (default), "
                                                             "applied when a command meets one"}
        return info

    def close(self) -> None:
        """End the backend by its pid (the client in front first) and remove its temporary
        directory. Idempotent; blocks for the few ms the process takes to end."""
        self._started.close()

    async def aclose(self) -> None:
        """``close()`` for async code: the waiting happens off the caller's loop."""
        await in_own_thread(self.close, name=f"cdpnb-close-{self.kind}", daemon=False)

    def __repr__(self) -> str:
        # No URL here: a repr lands in logs and tracebacks; the kind and pid say enough.
        state = "running" if self.running else "ended"
        return f"<Backend {self.kind} {self.version or '?'} pid={self.pid} {state}>"


class WebDriverBiDiBackend(Backend):
    """``chromium+chromedriver+bidi``: ``Supervisor.start`` connects through
    ``connect_transport``, which makes the session over HTTP and opens its BiDi
    WebSocket (the supervisor adopts that session, and ends it over HTTP at stop)."""

    async def connect_transport(self, url: str, timeout: float) -> Transport:
        """Make a session on the WebDriver server at ``url`` with this backend's
        capabilities and ``webSocketUrl: true``, and open its BiDi WebSocket (a fresh
        Chromium for each: a reconnect gets a new browser)."""
        capabilities = self.webdriver_capabilities
        assert capabilities is not None  # (a chromedriver's, by construction)
        return await connect_webdriver_bidi(url, capabilities, timeout)


class WebDriverClassicBackend(Backend):
    """``webkit`` and ``chromium+chromedriver``: ``Supervisor.start`` connects through
    ``connect_transport``, which makes a WebDriver classic session with this backend's
    capabilities (chromedriver's needs the Chromium binary, cdpnb's flags and a fresh
    profile: a URL alone would not say them)."""

    async def connect_transport(self, url: str, timeout: float) -> Transport:
        from cdpnb.transport.classic import connect_classic

        return await connect_classic(url, timeout, self.webdriver_capabilities)


def _backend(started: _Started) -> Backend:
    """The Backend for what started: a WebDriver server's makes its session over HTTP
    when the supervisor connects (a classic one, or one with a BiDi WebSocket)."""
    spec = started.spec
    if not spec.webdriver_server:
        return Backend(started)
    if spec.protocol is CLASSIC:
        return WebDriverClassicBackend(started)
    return WebDriverBiDiBackend(started)


def _start(spec: BackendKind, executable: str | os.PathLike[str] | None,
           args: tuple[str, ...], timeout: float) -> _Started:
    """Start the backend and read what it is; blocking, so async callers use a thread."""
    began = time.monotonic()
    client: FrontClient | None = None
    process: LocalProcess | None = None
    try:
        if spec.client is not None:
            client = spec.client(executable, timeout)
        process = spec.start(executable, args, timeout)
        if spec.read_version is not None:
            process.version_info = spec.read_version(process)
        if spec.url_from_version:
            # Its own word for where to connect (Lightpanda's today: ws://127.0.0.1:PORT/).
            process.cdp_url = str(process.version_info.get("webSocketDebuggerUrl")
                                  or process.cdp_url)
        if client is not None:
            client.attach(process)
    except BaseException:
        if client is not None:
            client.close()
        if process is not None:
            process.close()
        raise
    return _Started(spec, process, time.monotonic() - began, client, began)


class launch:
    """Start a backend: ``async with cdpnb.launch("chromium") as backend:`` ends it when
    the block exits (also on error or cancellation); ``backend = await
    cdpnb.launch("chromium")`` keeps it until ``backend.close()`` (or ``await
    backend.aclose()``); ``with cdpnb.launch(...)`` and ``cdpnb.sync.launch(...)``
    block instead.

    ``kind`` is one of :data:`LAUNCHABLE`: ``"chromium"``, ``"headless-shell"``,
    ``"chromium+playwright"``, ``"node"``, ``"deno"``, ``"bun"``, ``"chromium+puppeteer"``,
    ``"lightpanda"``, ``"chromium+bidi"``, ``"firefox"``, ``"webkit"``,
    ``"chromium+chromedriver"``, ``"chromium+chromedriver+bidi"`` or
    ``"chromium+selenium"``. ``executable=`` overrides the binary: the browser's (else
    ``$CDPNB_CHROMIUM`` for the Chromium kinds, also those chromedriver starts,
    ``$CDPNB_FIREFOX``, ``$CDPNB_LIGHTPANDA``), the runtime's for ``node``, ``deno`` and
    ``bun`` (else ``$CDPNB_NODE``, ``$CDPNB_DENO``, ``$CDPNB_BUN``), WebKitWebDriver's for
    ``webkit`` (else ``$CDPNB_WEBKITWEBDRIVER``); chromedriver is ``$CDPNB_CHROMEDRIVER``
    or Debian's, and Xvfb ``$CDPNB_XVFB`` or Debian's. ``args`` adds command-line flags
    (Chromium's, also for the Chromiums chromium-bidi and chromedriver start;
    WebKitWebDriver's for ``webkit``).

    >>> import cdpnb.sync
    >>> with cdpnb.sync.launch("headless-shell") as backend:
    ...     backend.cdp_url.startswith("ws://127.0.0.1:"), backend.kind
    (True, 'headless-shell')
    >>> backend.running
    False
    """

    def __init__(
        self,
        kind: str = "chromium",
        *,
        executable: str | os.PathLike[str] | None = None,
        args: tuple[str, ...] | list[str] = (),
        timeout: float = 20.0,
    ) -> None:
        self.spec = backend_kind(kind)
        if isinstance(args, str) or not all(isinstance(a, str) for a in args):
            raise TypeError(f"args must be a list of flag strings, got {args!r}")
        self.kind = self.spec.name
        self.executable = executable
        self.args = tuple(args)
        self.timeout = timeout
        self.backend: Backend | None = None

    @property
    def cdp_url(self) -> str:
        """The started backend's ``cdp_url``; before it is started, a clear error."""
        if self.backend is None:
            raise BackendNotStarted(
                f"cdpnb.launch({self.kind!r}) has not started the browser yet: use "
                f"`backend = await cdpnb.launch({self.kind!r})` or "
                f"`async with cdpnb.launch({self.kind!r}) as backend:` and backend.cdp_url")
        return self.backend.cdp_url

    def start_blocking(self) -> Backend:
        self.backend = _backend(_start(self.spec, self.executable, self.args, self.timeout))
        return self.backend

    def close_blocking(self) -> None:
        if self.backend is not None:
            self.backend.close()

    async def start(self) -> Backend:
        """Start the backend without blocking the caller's loop, and return it."""
        # Not a daemon: at interpreter exit Python waits for a start to finish, and then
        # the atexit handlers end what it started; a cancelled start closes it itself.
        started = await in_own_thread(
            partial(_start, self.spec, self.executable, self.args, self.timeout),
            name=f"cdpnb-launch-{self.kind}", orphan=_Started.close, daemon=False)
        self.backend = _backend(started)
        return self.backend

    def __await__(self) -> Generator[Any, None, Backend]:
        return self.start().__await__()

    async def __aenter__(self) -> Backend:
        return await self.start()

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await in_own_thread(self.close_blocking, name=f"cdpnb-close-{self.kind}", daemon=False)

    def __enter__(self) -> Backend:
        return self.start_blocking()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close_blocking()

    def __repr__(self) -> str:
        state = "not started" if self.backend is None else repr(self.backend)
        return f"<launch {self.kind!r}: {state}>"
