"""What the measured facts (docs/architecture.md) predict each backend does, check by check.

A probe result that differs from this is a surprise worth a look (a new browser
version, a proxy that behaves differently), not a failure of cdpnb. Every kind
``cdpnb.launch`` starts has its row; a URL backend gets the row of the engine its
``/json/version`` (CDP) or its BiDi session says it is (:func:`engine_kind`), and an
engine none of these describe gets no expectations (its results are never surprises).

An expectation is a status (``ok`` / ``partial`` / ``fail``), two of them (``ok|partial``)
where both were measured on the same build for a reason no page can steer, or for a
check that answers with a word (``frames.site_isolation``) that word.

Where the outcome is decided by a race between two clients, the expectation admits
either outcome and :data:`RACES` says what races: the probe records who won and when
(``ProbeResult.races()``), and never expects one winner, since the winner depends on
the machine's load.
"""

from __future__ import annotations

import re
from fnmatch import fnmatch

from cdpnb.protocol import ProtocolSpec, protocol_spec
from cdpnb.protocol.specs import BIDI, CDP, CLASSIC, WIP

__all__ = ["EXPECTED", "RACES", "engine_kind", "expected_status", "race_between"]

#: The bridge over WebDriver BiDi (network.addIntercept + provideResponse) answers as
#: over CDP, but the https check cannot run there: accepting the probe's self-signed
#: certificate is session.new's ``acceptInsecureCerts``, which the supervisor does not
#: ask for (CDP's Security.setIgnoreCertificateErrors has no BiDi command).
_BIDI_BRIDGE: list[tuple[str, str]] = [
    ("bridge.https", "fail"),
]

#: What every Chromium with nothing in front that closes dialogs does (measured on
#: Debian Chromium 156, headless-shell 156 with --site-per-process, and Chromium with
#: puppeteer-core 25.16 attached: Puppeteer leaves dialogs alone).
_CHROMIUM: list[tuple[str, str]] = [
    ("frames.site_isolation", "yes"),
    ("finding.sandbox.native", "fail"),  # no allow-modals: the browser blocks it
    ("*", "ok"),
]

#: No Debugger domain over WebDriver BiDi (the check needs CDP or WIP).
_NO_DEBUGGER: list[tuple[str, str]] = [("latency.debugger_rtt", "fail")]

#: chromium-bidi (npm 17, or the copy inside chromedriver 156) over Chromium 156: as
#: Firefox, except that a dialog in a cross-site frame nested in a cross-site frame is
#: never reported (no browsingContext.userPromptOpened at all), so nobody can answer it
#: natively; and that the bridge's request from a cross-site (out-of-process) frame is
#: paused by the intercept only in some frames (11 of 36 freshly loaded ones here, with
#: no event at all for the others, a second after the frame loaded as at once): then it
#: fails, and the script falls back to the native dialog (seen and answered, so
#: partial), or in the sandbox without allow-modals to nothing (fail).
_CHROMIUM_BIDI: list[tuple[str, str]] = [
    ("frames.site_isolation", "unknown"),
    ("dialog.*.nested", "fail"),
    ("bridge.*.cross_site", "ok|partial"),
    ("finding.sandbox.bridge", "ok|fail"),
    *_BIDI_BRIDGE,
    *_NO_DEBUGGER,
    ("finding.sandbox.native", "fail"),
    ("*", "ok"),
]

#: What WebDriver classic can tell and do, on every engine measured (WebKit, Chromium).
#: A screenshot, fill and wait_for_selector work as over CDP and BiDi (on WebKit with the
#: driver's two measured work-arounds: see "webkit" below).
_CLASSIC: list[tuple[str, str]] = [
    ("frames.site_isolation", "unknown"),
    ("dialog.beforeunload.main", "fail"),
    ("dialog.*", "partial"),
    ("finding.sandbox.native", "fail"),
    ("bridge.*", "fail"),
    ("finding.*.bridge", "fail"),
    ("latency.debugger_rtt", "fail"),  # no Debugger domain over classic
    ("*", "ok"),
]

#: A JavaScript runtime's inspector (see "node" below).
_RUNTIME: list[tuple[str, str]] = [
    ("runtime.evaluate", "ok"),
    ("latency.command_rtt", "ok"),
    ("latency.debugger_rtt", "ok"),
    ("*", "fail"),  # no Page, Target or Fetch domain: no page to look at, fill or wait on
]

#: backend kind -> [(check name pattern, expected status or answer)], first match wins.
EXPECTED: dict[str, list[tuple[str, str]]] = {
    "chromium": _CHROMIUM,
    "headless-shell": _CHROMIUM,
    "chromium+puppeteer": _CHROMIUM,
    "chromium+playwright": [
        # Playwright (no dialog handler) dismisses every native dialog, 3-5 ms after it
        # opens on a quiet machine; the probe answers 50 ms after it saw it. On a busy
        # machine Playwright can be the slower one (seen at load ~16: the probe answered
        # main-frame alerts first). A race: see RACES.
        ("dialog.*", "partial|ok"),
        ("latency.dialog_closed", "fail|ok"),
        *_CHROMIUM,
    ],
    # The runtimes: one target and no pages (node 20, Deno 2.9.8: Page.*, Target.* and
    # Fetch.* answer -32601 "'Page.enable' wasn't found"; Bun 1.4.5 over WIP: "'Page'
    # domain was not found"), so every frame, dialog and bridge check fails with "no
    # Page domain", and the dialog latencies with it. Script runs, and the Debugger
    # domain is there (node and Deno write a scriptParsed event before each evaluate's
    # reply with it on; Bun does not).
    "node": _RUNTIME,
    "deno": _RUNTIME,
    "bun": _RUNTIME,
    # Lightpanda 1.0.2: every frame in the page's session, dialogs that never block
    # (page JS gets undefined / false / null at once), no beforeunload dialog at all,
    # neither sandbox nor connect-src enforced; the bridge works everywhere. It renders
    # nothing: Page.captureScreenshot answers a 1920×1080 PNG all white whatever the
    # page; fill and wait_for_selector work (an element it adds has a box, so visible).
    "lightpanda": [
        ("frames.site_isolation", "no"),
        ("page.screenshot", "fail"),
        ("dialog.beforeunload.main", "fail"),
        ("dialog.*", "partial"),
        ("finding.sandbox.native", "partial"),
        ("finding.csp.bridge", "partial"),
        ("latency.dialog_closed", "fail"),
        ("*", "ok"),
    ],
    # Firefox ESR 153 over WebDriver BiDi: every dialog in every frame answered
    # natively, beforeunload after real input; the sandbox blocks prompt().
    "firefox": [
        ("frames.site_isolation", "unknown"),
        *_BIDI_BRIDGE,
        *_NO_DEBUGGER,
        ("finding.sandbox.native", "fail"),
        ("*", "ok"),
    ],
    # chromium-bidi 17 over Chromium 156 (_CHROMIUM_BIDI says what differs from Firefox).
    "chromium+bidi": _CHROMIUM_BIDI,
    # chromedriver 156's own BiDi mapper (chromium-bidi inside chromedriver), on a
    # session made over HTTP with webSocketUrl: measured the same as chromium+bidi, the
    # nested cross-site prompt never reported and the intercept missing some freshly
    # loaded out-of-process frames' bridge requests (bridge.alert.cross_site partial and
    # finding.sandbox.bridge fail in one run, the other cross-site bridge cells ok).
    "chromium+chromedriver+bidi": _CHROMIUM_BIDI,
    # A Selenium webdriver.Chrome session beside the supervisor: Selenium's
    # "dismiss and notify" acts only when a command of its own meets a dialog, and the
    # probe's Selenium sends none, so every cell is plain Chromium's (measured: all as
    # chromium, the bridge over https included).
    "chromium+selenium": _CHROMIUM,
    # WebDriver classic (WebKitWebDriver 2.50.6 with MiniBrowser; chromedriver 156 over
    # Chromium 156), sessions with unhandledPromptBehavior "ignore": every dialog in every
    # frame is seen by polling GET /alert/text and answered, but classic names no frame
    # for it (partial: "seen, frame unknown"); beforeunload is never shown (the browser
    # accepts it itself); no request interception, so no bridge; classic does not say
    # which frames run out of process.
    # WebKit alone, measured on WebKitWebDriver 2.50.6 and handled by the driver (both
    # cells ok since): a field in a cross-site frame takes the focus only after a W3C
    # Element Click (its element.focus() leaves document.activeElement on <body>), so
    # fill clicks such a field once (cdpnb.drivers.classic.actions); and
    # GET /screenshot does not wait for a fresh window's first paint (all white in 10 of
    # 10 right after its first navigation), so a window's first screenshot waits two
    # animation frames (34 of 34 right; cdpnb.drivers.cdp.screenshots).
    "webkit": _CLASSIC,
    "chromium+chromedriver": _CLASSIC,
}


#: backend kind -> [(check name pattern, what races)]: the cells whose outcome is decided
#: by which of two clients acts first. Their expectations admit either outcome.
RACES: dict[str, list[tuple[str, str]]] = {
    "chromium+playwright": [
        ("dialog.*", "Playwright's auto-dismissal (3-5 ms on a quiet machine) against the "
                     "probe's answer (50 ms after the dialog was seen)"),
        ("latency.dialog_closed", "Playwright's auto-dismissal against the probe's answer, "
                                  "for each of the 10 timed alerts"),
    ],
    "chromium+bidi": [
        ("bridge.*.cross_site", "chromium-bidi's intercept against the bridge request of a "
                                "freshly loaded out-of-process frame (paused in some frames, "
                                "not in others)"),
        ("finding.sandbox.bridge", "chromium-bidi's intercept against the bridge request of "
                                   "the sandboxed cross-site frame"),
    ],
    "chromium+chromedriver+bidi": [
        ("bridge.*.cross_site", "chromedriver's BiDi mapper's intercept against the bridge "
                                "request of a freshly loaded out-of-process frame (paused "
                                "in some frames, not in others)"),
        ("finding.sandbox.bridge", "chromedriver's BiDi mapper's intercept against the bridge "
                                   "request of the sandboxed cross-site frame"),
    ],
}


def race_between(kind: str | None, check: str) -> str | None:
    """What races in ``check`` on ``kind`` (a sentence), or None where nothing does.

    >>> race_between("chromium+playwright", "dialog.alert.main") is not None
    True
    >>> race_between("chromium", "dialog.alert.main") is None
    True
    """
    for pattern, what in RACES.get(kind or "", []):
        if fnmatch(check, pattern):
            return what
    return None


def expected_status(kind: str | None, check: str) -> str | None:
    """The status (or answer) the facts predict for ``check`` on ``kind``, or None if
    unknown."""
    for pattern, status in EXPECTED.get(kind or "", []):
        if fnmatch(check, pattern):
            return status
    return None


#: A runtime's inspector says what it is, whatever protocol it is reached by (a
#: pattern matched at the start of what the endpoint says it is, and its kind).
_RUNTIMES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"Lightpanda/"), "lightpanda"),
    (re.compile(r"node\.js/"), "node"),
    (re.compile(r"Deno/"), "deno"),
)
#: Then, by the protocol it speaks: (pattern, kind), first match wins.
_ENGINES: dict[ProtocolSpec, tuple[tuple[re.Pattern[str], str], ...]] = {
    # /json/version's Browser: headless-shell says HeadlessChrome/, Chromium Chrome/.
    CDP: ((re.compile(r"HeadlessChrome/"), "headless-shell"),
          (re.compile(r"Chrome/"), "chromium")),
    # Bun 1.4.5's /json/version says "Bun" (its User-Agent "Bun/1.4.5").
    WIP: ((re.compile(r"Bun(/|\Z)"), "bun"),),
    # WebDriver classic's session says browserName/browserVersion (chromedriver 156:
    # "chrome/156…", WebKitWebDriver 2.50: "MiniBrowser/…").
    CLASSIC: ((re.compile(r"MiniBrowser/"), "webkit"),
              (re.compile(r"(?i:chrome)/"), "chromium+chromedriver")),
    # Over BiDi, Chrome (headless or not) is chromium-bidi's.
    BIDI: ((re.compile(r"Firefox/"), "firefox"),
           (re.compile(r"(Headless)?Chrome/"), "chromium+bidi")),
}


def engine_kind(protocol: str | ProtocolSpec, browser: str) -> str | None:
    """Whose expectations fit an endpoint that says it is ``browser``: the ``Browser``
    of its ``/json/version`` (CDP) or its BiDi session's ``browserName/Version``.

    ``Chrome/…`` over CDP is plain ``chromium`` (a client in front of it, such as
    Playwright, is not visible from the endpoint: its dismissals are then surprises),
    ``HeadlessChrome/…`` ``headless-shell``; over BiDi, Chrome is ``chromium+bidi``.
    None for an engine the facts do not cover (ValueError for a protocol cdpnb does
    not speak).

    >>> engine_kind("bidi", "Firefox/153.7.0"), engine_kind("cdp", "Lightpanda/1.0")
    ('firefox', 'lightpanda')
    >>> engine_kind("cdp", "Deno/2.9.8"), engine_kind("wip", "Bun")
    ('deno', 'bun')
    >>> engine_kind("cdp", "Chrome/156.0.8078.79"), engine_kind("cdp", "WebKit/1") is None
    ('chromium', True)
    """
    said = (*_RUNTIMES, *_ENGINES.get(protocol_spec(protocol), ()))
    return next((kind for pattern, kind in said if pattern.match(browser)), None)
