"""The 14 kinds ``cdpnb.launch`` starts, each a value: its protocol, how it starts, how it
is found on this machine, how its version is read, and what else it is.

Code that needs a fact of a kind asks its spec (``backend_kind(name).runtime_only``)
instead of comparing its name; a new kind is one more row of :data:`BACKEND_KINDS`
(and the process class that starts it). The kinds' names, the old sets of names
(``BIDI_KINDS`` ...) and ``LAUNCHABLE`` are read off the table.

>>> backend_kind("firefox").protocol.name, backend_kind("bun").runtime_only
('bidi', True)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

from cdpnb.backends import bidi_mapper, bun, puppeteer_attach, selenium_attach
from cdpnb.backends.bidi_mapper import ChromiumBidiProcess
from cdpnb.backends.bun import BunProcess, find_bun
from cdpnb.backends.chromium import KINDS as CHROMIUM_BINARIES
from cdpnb.backends.chromium import BrowserProcess, find_executable
from cdpnb.backends.clients import FrontClient, PlaywrightInFront, PuppeteerInFront
from cdpnb.backends.deno import INSTALL_HINT as DENO_INSTALL_HINT
from cdpnb.backends.deno import DenoProcess, find_deno
from cdpnb.backends.firefox import FirefoxProcess, find_firefox
from cdpnb.backends.lightpanda import INSTALL_HINT as LIGHTPANDA_INSTALL_HINT
from cdpnb.backends.lightpanda import LightpandaProcess, find_lightpanda
from cdpnb.backends.needs import Need, NpmPackages, Program, PythonPackage
from cdpnb.backends.node import NodeProcess, find_node
from cdpnb.backends.playwright_attach import INSTALL_HINT as PLAYWRIGHT_INSTALL_HINT
from cdpnb.backends.process import Executable, LocalProcess
from cdpnb.backends.selenium_attach import SeleniumProcess
from cdpnb.backends.webdriver_servers import (
    ChromedriverProcess,
    WebKitWebDriverProcess,
    find_chromedriver,
    find_webkitwebdriver,
)
from cdpnb.backends.xvfb import find_xvfb
from cdpnb.protocol.specs import BIDI, CDP, CLASSIC, WIP, ProtocolSpec
from cdpnb.transport import get_json

__all__ = ["BACKEND_KINDS", "BIDI_KINDS", "CLASSIC_KINDS", "LAUNCHABLE", "RUNTIME_KINDS",
           "WEBDRIVER_SERVER_KINDS", "WIP_KINDS", "BackendKind", "Starter", "VersionReader",
           "backend_available", "backend_kind", "json_version", "kind_protocol"]

#: How a kind's program starts: ``(executable, extra_args, timeout)`` to the running
#: process (blocking), in a fresh work dir, on loopback, ended by its own pid.
Starter = Callable[[Executable, tuple[str, ...], float], LocalProcess]
#: How a started kind's version is read: its ``version_info``.
VersionReader = Callable[[LocalProcess], dict[str, Any]]


def json_version(process: LocalProcess) -> dict[str, Any]:
    """What the endpoint's ``/json/version`` says (the DevTools kinds)."""
    info: dict[str, Any] = get_json(process.http_url + "/json/version")
    return info


def _bun_version(process: LocalProcess) -> dict[str, Any]:
    return bun.named_version(json_version(process))


@dataclass(frozen=True, slots=True)
class BackendKind:
    """One kind of backend ``cdpnb.launch`` starts, and the facts its code branches on."""

    #: What ``cdpnb.launch``, ``Backend.kind`` and the CLI's ``--backends`` call it.
    name: str
    #: What its endpoint (``Backend.url``) speaks.
    protocol: ProtocolSpec
    #: What it is, in a sentence (``Backend.describe()["what"]``).
    what: str
    #: How it starts.
    start: Starter
    #: What it needs on this machine, checked in this order (``backend_available``).
    needs: tuple[Need, ...]
    #: How its version is read once it is up; None: its start reads it (the browser's
    #: ``--version`` while it starts: a BiDi or WebDriver endpoint has no
    #: ``/json/version``, and Selenium's browser is read through the session).
    read_version: VersionReader | None = json_version
    #: Its endpoint's own word (``webSocketDebuggerUrl`` in ``/json/version``) says where
    #: to connect, rather than the URL the start made up (Lightpanda).
    url_from_version: bool = False
    #: A client attached in front of the browser with no dialog handler, made before
    #: the browser starts (Playwright, Puppeteer).
    client: Callable[[Executable, float], FrontClient] | None = None
    #: A JavaScript runtime: one target, no pages, frames or dialogs.
    runtime_only: bool = False
    #: ``url`` is a WebDriver server on which a client makes its session
    #: (``Backend.webdriver_capabilities``), over HTTP; the supervisor makes it there.
    webdriver_server: bool = False
    #: The browser holds one session only (Firefox's WebDriver BiDi: it is the client's).
    one_session_per_browser: bool = False
    #: What gets a browser of its own, where the kind says it in ``describe()`` itself
    #: (Lightpanda: each connection); chromium-bidi and the WebDriver servers say it in
    #: their own part of it.
    browser_per: str | None = None

    def missing(self) -> str | None:
        """None when it can be launched here, else why not, e.g. ``"not installed:
        apt-get install nodejs"``: the first of its needs that is missing."""
        return next((reason for reason in (need.missing() for need in self.needs)
                     if reason is not None), None)

    def __repr__(self) -> str:
        return f"<BackendKind {self.name}: {self.protocol.name}>"


def _chromium_binary(binary: str) -> Program:
    """A Chromium binary of Debian's (``chromium`` or ``headless-shell``)."""
    return Program(partial(find_executable, binary), "CDPNB_CHROMIUM",
                   f"apt-get install {CHROMIUM_BINARIES[binary].package}")


_CHROMIUM = _chromium_binary("chromium")
_NODE = Program(find_node, "CDPNB_NODE", "apt-get install nodejs")
_CHROMEDRIVER = Program(find_chromedriver, "CDPNB_CHROMEDRIVER", "apt-get install chromium-driver")

#: Every kind ``launch`` can start, in the order a probe would try them.
BACKEND_KINDS: tuple[BackendKind, ...] = (
    BackendKind(
        "chromium", CDP, "Debian Chromium, headless, DevTools on loopback",
        partial(BrowserProcess.start, "chromium"), (_CHROMIUM,)),
    BackendKind(
        "headless-shell", CDP, "Debian chromium-headless-shell, DevTools on loopback",
        partial(BrowserProcess.start, "headless-shell"), (_chromium_binary("headless-shell"),)),
    BackendKind(
        "chromium+playwright", CDP,
        "Debian Chromium with Playwright attached via connect_over_cdp and no dialog "
        "handler: Playwright auto-dismisses every native JS dialog on every page, also "
        "pages other clients create",
        partial(BrowserProcess.start, "chromium"),
        (_CHROMIUM, PythonPackage("playwright", PLAYWRIGHT_INSTALL_HINT)),
        client=PlaywrightInFront),
    BackendKind(
        "node", CDP,
        "node --inspect: runtime-only, one target and no browser endpoint "
        "(Runtime/Debugger/Profiler; Page.*, Target.*, Fetch.* answer -32601)",
        NodeProcess.start, (_NODE,), runtime_only=True),
    BackendKind(
        "deno", CDP,
        "deno run --inspect (PyPI deno): runtime-only V8 inspector like node's, one "
        "target and no browser endpoint (Page.*, Target.*, Fetch.* answer -32601)",
        DenoProcess.start, (Program(find_deno, "CDPNB_DENO", DENO_INSTALL_HINT),),
        runtime_only=True),
    BackendKind(
        "bun", WIP,
        "bun --inspect (npm bun): runtime-only, speaks the WebKit Inspector Protocol, "
        "not CDP (cdpnb adapts evaluate); no /json/list, no Page/Target domains",
        BunProcess.start, (Program(find_bun, "CDPNB_BUN", f"{bun.INSTALL_HINT} (bun)"),),
        read_version=_bun_version, runtime_only=True),
    BackendKind(
        "chromium+puppeteer", CDP,
        "Debian Chromium with npm puppeteer-core attached via "
        "puppeteer.connect({browserURL}) and no dialog handler: it leaves native JS "
        "dialogs open for whoever answers them",
        partial(BrowserProcess.start, "chromium"),
        (_CHROMIUM, _NODE, NpmPackages(puppeteer_attach.PACKAGES)), client=PuppeteerInFront),
    BackendKind(
        "lightpanda", CDP,
        "Lightpanda (PyPI lightpanda) serving CDP on loopback, iframes loaded, "
        "telemetry off: one browser per connection, no site isolation, dialogs that "
        "never block",
        LightpandaProcess.start,
        (Program(find_lightpanda, "CDPNB_LIGHTPANDA", LIGHTPANDA_INSTALL_HINT),),
        url_from_version=True, browser_per="connection"),
    BackendKind(
        "chromium+bidi", BIDI,
        "chromium-bidi's WebDriver BiDi server (the mapper Puppeteer uses) over Debian "
        "Chromium, on loopback: a Chromium per connection's session.new; its default "
        "session dismisses every dialog",
        ChromiumBidiProcess.start, (_CHROMIUM, _NODE, NpmPackages(bidi_mapper.PACKAGES)),
        read_version=None),
    BackendKind(
        "firefox", BIDI,
        "Debian Firefox ESR, headless, fresh offline profile: WebDriver BiDi only (one "
        "BiDi session per browser), on loopback",
        FirefoxProcess.start,
        (Program(find_firefox, "CDPNB_FIREFOX", "apt-get install firefox-esr"),),
        read_version=None, one_session_per_browser=True),
    BackendKind(
        "webkit", CLASSIC,
        "WebKitGTK's WebKitWebDriver (Debian webkit2gtk-driver) on loopback, under an "
        "Xvfb of cdpnb's: WebDriver classic only, a MiniBrowser per session, one session "
        "at a time",
        WebKitWebDriverProcess.start,
        (Program(find_webkitwebdriver, "CDPNB_WEBKITWEBDRIVER",
                 "apt-get install webkit2gtk-driver"),
         Program(find_xvfb, "CDPNB_XVFB", "apt-get install xvfb")),
        read_version=None, webdriver_server=True),
    BackendKind(
        "chromium+chromedriver", CLASSIC,
        "Debian chromedriver over Debian Chromium, on loopback: WebDriver classic, a "
        "Chromium per session",
        partial(ChromedriverProcess.start, kind="chromium+chromedriver", protocol=CLASSIC.name),
        (_CHROMIUM, _CHROMEDRIVER), read_version=None, webdriver_server=True),
    BackendKind(
        "chromium+chromedriver+bidi", BIDI,
        "Debian chromedriver over Debian Chromium, on loopback: a session made over HTTP "
        "with webSocketUrl, then WebDriver BiDi through chromedriver's own mapper",
        partial(ChromedriverProcess.start, kind="chromium+chromedriver+bidi",
                protocol=BIDI.name),
        (_CHROMIUM, _CHROMEDRIVER), read_version=None, webdriver_server=True),
    BackendKind(
        "chromium+selenium", CDP,
        "Debian Chromium driven by a Selenium webdriver.Chrome session (Debian "
        "chromedriver, no Selenium Manager), supervised over CDP beside it: Selenium "
        "dismisses a dialog only when a command of its own meets one",
        SeleniumProcess.start,
        (_CHROMIUM, _CHROMEDRIVER,
         PythonPackage("selenium", selenium_attach.INSTALL_HINT)),
        read_version=None),
)
_BY_NAME = {kind.name: kind for kind in BACKEND_KINDS}

#: Every kind ``launch`` can start, by name, in the order a probe would try them.
LAUNCHABLE: tuple[str, ...] = tuple(_BY_NAME)

# The sets of names code asked before the kinds were values (kept for it): each is one
# fact of the table.
#: The kinds whose endpoint speaks WebDriver BiDi.
BIDI_KINDS = frozenset(k.name for k in BACKEND_KINDS if k.protocol is BIDI)
#: The kinds whose endpoint is a WebDriver server spoken to in WebDriver classic (HTTP).
CLASSIC_KINDS = frozenset(k.name for k in BACKEND_KINDS if k.protocol is CLASSIC)
#: The kinds whose ``url`` is a WebDriver server (``http://127.0.0.1:PORT``) on which a
#: client makes its session (``Backend.webdriver_capabilities``).
WEBDRIVER_SERVER_KINDS = frozenset(k.name for k in BACKEND_KINDS if k.webdriver_server)
#: The kinds whose endpoint speaks the WebKit Inspector Protocol (cdpnb.protocol.wip).
WIP_KINDS = frozenset(k.name for k in BACKEND_KINDS if k.protocol is WIP)
#: JavaScript runtimes: one target, no pages, frames or dialogs (``describe()`` says
#: ``runtime_only``).
RUNTIME_KINDS = frozenset(k.name for k in BACKEND_KINDS if k.runtime_only)


def backend_kind(name: str | BackendKind) -> BackendKind:
    """The kind called ``name`` (a kind is its own); ValueError naming the kinds for
    any other."""
    if isinstance(name, BackendKind):
        return name
    kind = _BY_NAME.get(name) if isinstance(name, str) else None
    if kind is None:
        raise ValueError(f"unknown backend kind {name!r}; choose one of {', '.join(LAUNCHABLE)}")
    return kind


def backend_available(kind: str) -> str | None:
    """None when ``kind`` can be launched here, else why not, e.g.
    ``"not installed: apt-get install nodejs"``. Unknown kinds raise ValueError."""
    return backend_kind(kind).missing()


def kind_protocol(kind: str) -> str:
    """What a launched ``kind``'s endpoint speaks: ``"cdp"``, ``"bidi"``, ``"wip"`` or
    ``"classic"`` (its spec's ``protocol.name``); a name that is no kind speaks CDP."""
    spec = _BY_NAME.get(kind)
    return (CDP if spec is None else spec.protocol).name
