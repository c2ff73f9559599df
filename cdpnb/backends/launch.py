"""``cdpnb.launch(kind)``: start a backend, for a ``with`` block or until ``close()``."""

from __future__ import annotations

import importlib.util
import os
import time
from collections.abc import Callable, Generator
from dataclasses import dataclass
from functools import partial
from types import TracebackType
from typing import Any

from cdpnb.backends import bidi_mapper, npm, puppeteer_attach
from cdpnb.backends.bidi_mapper import ChromiumBidiProcess
from cdpnb.backends.bun import INSTALL_HINT as BUN_INSTALL_HINT
from cdpnb.backends.bun import BunProcess, find_bun
from cdpnb.backends.chromium import KINDS, BrowserProcess, chromium_version, find_executable
from cdpnb.backends.deno import INSTALL_HINT as DENO_INSTALL_HINT
from cdpnb.backends.deno import DenoProcess, find_deno
from cdpnb.backends.firefox import FirefoxProcess, find_firefox
from cdpnb.backends.lightpanda import INSTALL_HINT as LIGHTPANDA_INSTALL_HINT
from cdpnb.backends.lightpanda import LightpandaProcess, find_lightpanda
from cdpnb.backends.node import NodeProcess, find_node
from cdpnb.backends.playwright_attach import INSTALL_HINT, PlaywrightAttachment
from cdpnb.backends.process import LocalProcess
from cdpnb.backends.puppeteer_attach import PuppeteerProcess
from cdpnb.backends.selenium_attach import INSTALL_HINT as SELENIUM_INSTALL_HINT
from cdpnb.backends.selenium_attach import SeleniumProcess
from cdpnb.backends.webdriver_servers import (
    ChromedriverProcess,
    WebKitWebDriverProcess,
    find_chromedriver,
    find_webkitwebdriver,
)
from cdpnb.backends.xvfb import find_xvfb
from cdpnb.errors import BackendNotStarted, BrowserNotFound
from cdpnb.runtime.closing import Closing
from cdpnb.runtime.threads import in_own_thread
from cdpnb.transport import Transport, get_json
from cdpnb.transport.webdriver_bidi import connect_webdriver_bidi

__all__ = ["BIDI_KINDS", "CLASSIC_KINDS", "LAUNCHABLE", "RUNTIME_KINDS", "WEBDRIVER_SERVER_KINDS",
           "WIP_KINDS", "Backend", "backend_available", "kind_protocol", "launch"]

#: Every kind ``launch`` can start, in the order a probe would try them.
LAUNCHABLE = ("chromium", "headless-shell", "chromium+playwright", "node", "deno", "bun",
              "chromium+puppeteer", "lightpanda", "chromium+bidi", "firefox", "webkit",
              "chromium+chromedriver", "chromium+chromedriver+bidi", "chromium+selenium")

#: The kinds whose endpoint speaks WebDriver BiDi.
BIDI_KINDS = frozenset({"chromium+bidi", "firefox", "chromium+chromedriver+bidi"})
#: The kinds whose endpoint is a WebDriver server spoken to in WebDriver classic (HTTP).
CLASSIC_KINDS = frozenset({"webkit", "chromium+chromedriver"})
#: The kinds whose ``url`` is a WebDriver server (``http://127.0.0.1:PORT``) on which a
#: client makes its session (``Backend.webdriver_capabilities``).
WEBDRIVER_SERVER_KINDS = CLASSIC_KINDS | {"chromium+chromedriver+bidi"}
#: The kinds whose endpoint speaks the WebKit Inspector Protocol (cdpnb.protocol.wip).
WIP_KINDS = frozenset({"bun"})
#: JavaScript runtimes: one target, no pages, frames or dialogs (``describe()`` says
#: ``runtime_only``).
RUNTIME_KINDS = frozenset({"node", "deno", "bun"})


def kind_protocol(kind: str) -> str:
    """What a launched ``kind``'s endpoint speaks: ``"cdp"``, ``"bidi"``, ``"wip"`` or
    ``"classic"``; every kind in none of the sets speaks CDP."""
    if kind in BIDI_KINDS:
        return "bidi"
    if kind in CLASSIC_KINDS:
        return "classic"
    return "wip" if kind in WIP_KINDS else "cdp"


_WHAT = {
    "chromium": "Debian Chromium, headless, DevTools on loopback",
    "headless-shell": "Debian chromium-headless-shell, DevTools on loopback",
    "chromium+playwright": "Debian Chromium with Playwright attached via connect_over_cdp and "
                           "no dialog handler: Playwright auto-dismisses every native JS dialog "
                           "on every page, also pages other clients create",
    "node": "node --inspect: runtime-only, one target and no browser endpoint "
            "(Runtime/Debugger/Profiler; Page.*, Target.*, Fetch.* answer -32601)",
    "deno": "deno run --inspect (PyPI deno): runtime-only V8 inspector like node's, one "
            "target and no browser endpoint (Page.*, Target.*, Fetch.* answer -32601)",
    "bun": "bun --inspect (npm bun): runtime-only, speaks the WebKit Inspector Protocol, "
           "not CDP (cdpnb adapts evaluate); no /json/list, no Page/Target domains",
    "chromium+puppeteer": "Debian Chromium with npm puppeteer-core attached via "
                          "puppeteer.connect({browserURL}) and no dialog handler: it leaves "
                          "native JS dialogs open for whoever answers them",
    "lightpanda": "Lightpanda (PyPI lightpanda) serving CDP on loopback, iframes loaded, "
                  "telemetry off: one browser per connection, no site isolation, dialogs "
                  "that never block",
    "chromium+bidi": "chromium-bidi's WebDriver BiDi server (the mapper Puppeteer uses) over "
                     "Debian Chromium, on loopback: a Chromium per connection's session.new; "
                     "its default session dismisses every dialog",
    "firefox": "Debian Firefox ESR, headless, fresh offline profile: WebDriver BiDi only "
               "(one BiDi session per browser), on loopback",
    "webkit": "WebKitGTK's WebKitWebDriver (Debian webkit2gtk-driver) on loopback, under an "
              "Xvfb of cdpnb's: WebDriver classic only, a MiniBrowser per session, one "
              "session at a time",
    "chromium+chromedriver": "Debian chromedriver over Debian Chromium, on loopback: "
                             "WebDriver classic, a Chromium per session",
    "chromium+chromedriver+bidi": "Debian chromedriver over Debian Chromium, on loopback: a "
                                  "session made over HTTP with webSocketUrl, then WebDriver "
                                  "BiDi through chromedriver's own mapper",
    "chromium+selenium": "Debian Chromium driven by a Selenium webdriver.Chrome session "
                         "(Debian chromedriver, no Selenium Manager), supervised over CDP "
                         "beside it: Selenium dismisses a dialog only when a command of its "
                         "own meets one",
}



@dataclass
class _Started:
    """What one launch started: the process, and Playwright when it rides along."""

    kind: str
    process: LocalProcess
    started_in_s: float
    attachment: PlaywrightAttachment | None = None
    puppeteer: PuppeteerProcess | None = None
    #: ``time.monotonic()`` when the launch began.
    began: float = 0.0

    def close(self) -> None:
        # The client in front lets go first, so it sees an orderly disconnect, not a
        # dead browser.
        try:
            if self.puppeteer is not None:
                self.puppeteer.close()
        finally:
            try:
                if self.attachment is not None:
                    self.attachment.close()
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
    def protocol(self) -> str:
        """``"cdp"``, ``"bidi"`` (WebDriver BiDi), ``"wip"`` (the WebKit Inspector
        Protocol: ``bun``) or ``"classic"`` (WebDriver classic, over HTTP): what ``url``
        speaks."""
        return kind_protocol(self.kind)

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
        info: dict[str, Any] = {
            "kind": self.kind, "what": _WHAT[self.kind], "protocol": self.protocol,
            "version": self.version, "executable": self.executable, "args": list(self.args),
            "url": self.url, "cdp_url": self.cdp_url, "started_in_s": round(self.started_in_s, 4),
        }
        if self.kind in RUNTIME_KINDS:
            info["runtime_only"] = True
        attachment = self._started.attachment
        if attachment is not None:
            info["playwright"] = {"version": attachment.version,
                                  "attached_via": "chromium.connect_over_cdp",
                                  "dialog_handler": None}
        puppeteer = self._started.puppeteer
        if puppeteer is not None:
            info["puppeteer"] = {"version": puppeteer.puppeteer_version,
                                 "attached_via": "puppeteer.connect({browserURL})",
                                 "dialog_handler": None, "pid": puppeteer.pid}
        browser = self._browser
        if isinstance(browser, ChromiumBidiProcess):
            info["chromium_bidi"] = {"version": browser.chromium_bidi_version,
                                     "browser_executable": browser.browser_executable,
                                     "browser_per": "connection (session.new)"}
        if self.kind == "firefox":
            info["one_session_per_browser"] = True
        if self.kind == "lightpanda":
            info["browser_per"] = "connection"
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
        """End the backend by its pid (Playwright first) and remove its temporary
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
    if started.kind == "chromium+chromedriver+bidi":
        return WebDriverBiDiBackend(started)
    if started.kind in CLASSIC_KINDS:
        return WebDriverClassicBackend(started)
    return Backend(started)


def backend_available(kind: str) -> str | None:
    """None when ``kind`` can be launched here, else why not, e.g.
    ``"not installed: apt-get install nodejs"``. Unknown kinds raise ValueError."""
    _check_kind(kind)
    if kind == "webkit":
        return _missing(find_webkitwebdriver, "CDPNB_WEBKITWEBDRIVER",
                        "apt-get install webkit2gtk-driver") \
            or _missing(find_xvfb, "CDPNB_XVFB", "apt-get install xvfb")
    if kind == "node":
        return _missing(find_node, "CDPNB_NODE", "apt-get install nodejs")
    if kind == "deno":
        return _missing(find_deno, "CDPNB_DENO", DENO_INSTALL_HINT)
    if kind == "bun":
        return _missing(find_bun, "CDPNB_BUN", f"{BUN_INSTALL_HINT} (bun)")
    if kind == "firefox":
        return _missing(find_firefox, "CDPNB_FIREFOX", "apt-get install firefox-esr")
    if kind == "lightpanda":
        return _missing(find_lightpanda, "CDPNB_LIGHTPANDA", LIGHTPANDA_INSTALL_HINT)
    browser = kind if kind in KINDS else "chromium"
    reason = _missing(partial(find_executable, browser), "CDPNB_CHROMIUM",
                      f"apt-get install {KINDS[browser].package}")
    if reason is None and kind == "chromium+playwright" and \
            importlib.util.find_spec("playwright") is None:
        reason = f"not installed: {INSTALL_HINT}"
    if reason is None and ("chromedriver" in kind or kind == "chromium+selenium"):
        reason = _missing(find_chromedriver, "CDPNB_CHROMEDRIVER",
                          "apt-get install chromium-driver")
    if reason is None and kind == "chromium+selenium" and \
            importlib.util.find_spec("selenium") is None:
        reason = f"not installed: {SELENIUM_INSTALL_HINT}"
    packages = _NPM_PACKAGES.get(kind)
    if reason is None and packages is not None:
        reason = _missing(find_node, "CDPNB_NODE", "apt-get install nodejs")
        absent = npm.missing(packages)
        if reason is None and absent:
            reason = f"not installed: {npm.INSTALL_HINT} ({', '.join(absent)})"
    return reason


#: The npm packages (package.json) each node-backed kind runs.
_NPM_PACKAGES = {"chromium+puppeteer": puppeteer_attach.PACKAGES,
                 "chromium+bidi": bidi_mapper.PACKAGES}


def _bun_version(info: dict[str, Any]) -> dict[str, Any]:
    """Bun 1.4.5's ``/json/version`` names no version in ``Browser`` (``"Bun"``); its
    ``User-Agent`` (``Bun/1.4.5``) does, so that is the ``Browser`` cdpnb shows. What
    Bun said is kept as ``Browser (served)``."""
    agent = info.get("User-Agent")
    if not isinstance(agent, str) or not agent.startswith("Bun/"):
        return info
    return {**info, "Browser": agent, "Browser (served)": info.get("Browser")}


def _missing(find: Callable[[], str], env_var: str, install: str) -> str | None:
    try:
        find()
    except BrowserNotFound as exc:
        # A wrong override is a different problem from a missing package: say which.
        return str(exc) if os.environ.get(env_var) else f"not installed: {install}"
    return None


def _check_kind(kind: str) -> None:
    if kind not in LAUNCHABLE:
        raise ValueError(f"unknown backend kind {kind!r}; choose one of {', '.join(LAUNCHABLE)}")


def _start(kind: str, executable: str | os.PathLike[str] | None, args: tuple[str, ...],
           timeout: float) -> _Started:
    """Start the backend and read what it is; blocking, so async callers use a thread."""
    began = time.monotonic()
    attachment = None
    process: LocalProcess | None = None
    puppeteer = None
    try:
        if kind == "node":
            process = NodeProcess.start(executable, args, timeout)
        elif kind == "deno":
            process = DenoProcess.start(executable, args, timeout)
        elif kind == "bun":
            process = BunProcess.start(executable, args, timeout)
        elif kind == "firefox":
            # (its version read while it starts: FirefoxProcess.start)
            process = FirefoxProcess.start(executable, args, timeout)
        elif kind == "chromium+bidi":
            bidi = ChromiumBidiProcess.start(executable, args, timeout)
            process = bidi
            # No session.new either: each one launches a Chromium of its own.
            bidi.version_info = {"Browser": chromium_version(bidi.browser_executable),
                                 "chromium-bidi": bidi.chromium_bidi_version,
                                 "Protocol": "WebDriver BiDi", "webSocketUrl": bidi.cdp_url}
        elif kind == "lightpanda":
            process = LightpandaProcess.start(executable, args, timeout)
        elif kind == "webkit":
            process = WebKitWebDriverProcess.start(executable, args, timeout)
        elif kind in ("chromium+chromedriver", "chromium+chromedriver+bidi"):
            process = ChromedriverProcess.start(
                executable, args, timeout, kind=kind,
                protocol="bidi" if kind in BIDI_KINDS else "classic")
        elif kind == "chromium+selenium":
            process = SeleniumProcess.start(executable, args, timeout)
        elif kind == "chromium+puppeteer":
            # Missing npm packages or node fail before a browser is started.
            npm.require(puppeteer_attach.PACKAGES)
            find_node()
            process = BrowserProcess.start("chromium", executable, args, timeout)
        elif kind == "chromium+playwright":
            find_executable("chromium", executable)  # a missing browser fails before the driver
            # Playwright's driver boots while Chromium starts: ~0.6 s each on their own.
            attachment = PlaywrightAttachment(timeout)
            process = BrowserProcess.start("chromium", executable, args, timeout)
        else:
            process = BrowserProcess.start(kind, executable, args, timeout)
        if kind not in BIDI_KINDS | WEBDRIVER_SERVER_KINDS | {"chromium+selenium"}:
            process.version_info = get_json(process.http_url + "/json/version")
        if kind == "bun":
            process.version_info = _bun_version(process.version_info)
        if kind == "lightpanda":
            # Its own word for where to connect (today ws://127.0.0.1:PORT/).
            process.cdp_url = str(process.version_info.get("webSocketDebuggerUrl")
                                  or process.cdp_url)
        if attachment is not None:
            attachment.connect(process.http_url)
        if kind == "chromium+puppeteer":
            puppeteer = PuppeteerProcess.attach(process.http_url, process.port, timeout)
    except BaseException:
        if puppeteer is not None:
            puppeteer.close()
        if attachment is not None:
            attachment.close()
        if process is not None:
            process.close()
        raise
    return _Started(kind, process, time.monotonic() - began, attachment, puppeteer, began)


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
        _check_kind(kind)
        if isinstance(args, str) or not all(isinstance(a, str) for a in args):
            raise TypeError(f"args must be a list of flag strings, got {args!r}")
        self.kind = kind
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
        self.backend = _backend(_start(self.kind, self.executable, self.args, self.timeout))
        return self.backend

    def close_blocking(self) -> None:
        if self.backend is not None:
            self.backend.close()

    async def start(self) -> Backend:
        """Start the backend without blocking the caller's loop, and return it."""
        # Not a daemon: at interpreter exit Python waits for a start to finish, and then
        # the atexit handlers end what it started; a cancelled start closes it itself.
        started = await in_own_thread(
            partial(_start, self.kind, self.executable, self.args, self.timeout),
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
