"""The four protocols cdpnb speaks, each a value: its name and its facts.

Code above this layer asks a protocol's spec what it needs to know (does it report
site isolation, how is a dialog answered, how does a replay face its clients) instead
of comparing its name; a fifth protocol is one more spec here (and its driver and
reducers). The list is written once, in :data:`PROTOCOL_SPECS`.

Traces and notes keep the name on disk (``"protocol": "bidi"``): ``spec.name`` is what
is written, :func:`recorded_protocol` what reads it back. Sans-I/O: no sockets here, only
the sans-I/O connection class each protocol's messages are parsed by.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from cdpnb.protocol.bidi import BiDiConnection
from cdpnb.protocol.connection import CDPConnection

__all__ = ["BIDI", "CDP", "CLASSIC", "PROTOCOL_SPECS", "WIP", "JsonEndpoint", "Liveness",
           "ProtocolName", "ProtocolSpec", "ReplayFace", "UserGesture", "protocol_spec",
           "recorded_protocol"]

#: A protocol's name as the public API, traces and notes spell it.
ProtocolName = Literal["cdp", "bidi", "wip", "classic"]
#: The DevTools HTTP endpoints an endpoint answers: ``/json/version`` (its browser and
#: WebSocket) and ``/json/list`` (its targets).
JsonEndpoint = Literal["version", "list"]
#: How a launched backend is seen to be alive: ``GET /json/version`` answers, a WebDriver
#: server's ``GET /status`` answers, or its port takes a connection.
Liveness = Literal["json-version", "webdriver-status", "port"]
#: How a page is given a user activation: ``evaluate`` with ``userGesture``, a click
#: made of pointer actions (``input.performActions``), or an element click.
UserGesture = Literal["evaluate", "pointer-actions", "element-click"]

_NO_JSON: frozenset[JsonEndpoint] = frozenset()
_ALL_JSON: frozenset[JsonEndpoint] = frozenset({"version", "list"})


@dataclass(frozen=True, slots=True)
class ReplayFace:
    """How a replay endpoint (``cdpnb.playback``) faces the clients of a recording."""

    #: The WebSocket path it serves: one that says a recording plays there (as fast as
    #: it is asked to, so the timings a client sees are not the browser's).
    path: str
    #: The ``/json`` endpoints it answers (none: 404, as Firefox's BiDi endpoint does).
    json: frozenset[JsonEndpoint]
    #: A command of a domain the recording never used is refused as the recorded
    #: inspector refuses it (WebKit: "'session' domain was not found"), so a client
    #: finds it speaks this protocol.
    refuses_unknown_domains: bool = False


@dataclass(frozen=True, slots=True)
class ProtocolSpec:
    """One protocol: what cdpnb calls it and the facts its code branches on."""

    #: What traces, notes, ``Supervisor.protocol`` and ``Backend.protocol`` say.
    name: ProtocolName
    #: Its name in a sentence ("speaks the Chrome DevTools Protocol").
    title: str
    #: Its name before a noun ("CDP connection to ...").
    short: str

    # -- its wire ---------------------------------------------------------------------
    #: Messages are WebDriver BiDi's (``{"type": "success", "id", "result"}``, errors
    #: by name); else CDP's (``{"id", "result" | "error", "sessionId"}``: WIP's are, and
    #: cdpnb frames WebDriver classic's exchanges so).
    bidi_messages: bool
    #: Spoken over a WebSocket of its own. WebDriver classic is HTTP: the proxy has no
    #: socket of its to relay, and a replay serves its recording in CDP's framing.
    own_socket: bool
    #: How a replay of its recording faces a client.
    replay: ReplayFace
    #: A record that names no protocol (a trace header, a ``cdpnb.connected`` note)
    #: spoke this one: it is left out when written.
    implied: bool = False
    #: The command that makes a session on the socket (WebDriver BiDi's
    #: ``session.new``); a recording without it had its session made over HTTP
    #: (chromedriver), and its replay carries the recorded session. None: no sessions.
    session_command: str | None = None
    #: The ``/json`` endpoints a live endpoint answers (Bun 1.4.5: ``/json/version``
    #: only; a WebDriver server and Firefox's BiDi endpoint: none).
    json_endpoints: frozenset[JsonEndpoint] = _NO_JSON
    #: Where its WebSocket is on an endpoint whose URL names no path ("" : where
    #: ``/json/version`` says).
    ws_path: str = ""
    #: How a launched backend of this protocol is seen to be alive.
    liveness: Liveness = "json-version"

    # -- pages, frames, dialogs -----------------------------------------------------------
    #: Pages and frames are browsing contexts, named on the wire by their context id: a
    #: frame's page is found up its context tree, a dialog is answered by its context,
    #: and there are no target sessions to detach (WebDriver BiDi). Else a frame
    #: belongs to its page's session (CDP's sessions; the window handle cdpnb makes
    #: WebDriver classic's session), and a dialog is answered on that session.
    browsing_contexts: bool = False
    #: What tells cdpnb a native dialog opened (an event, or WebDriver classic's poll);
    #: None: no dialogs (Bun's WIP is a runtime: no pages).
    dialog_seen_by: str | None = None
    #: The command that answers a native dialog (cdpnb's own for WebDriver classic).
    dialog_answer: str | None = None
    #: The protocol names the frame a dialog opened in (WebDriver classic names none).
    knows_dialog_frame: bool = True
    #: A page's beforeunload dialog is shown (WebDriver classic never shows one: the
    #: browser accepts it itself; measured WebKitWebDriver 2.50, chromedriver 156).
    shows_beforeunload: bool = True
    #: cdpnb can answer dialogs through its in-page bridge (not over WebDriver classic).
    dialog_bridge: bool = True
    #: How a page is given a user activation (measured: Firefox ESR 153 asks
    #: beforeunload only after real input, so BiDi gets a click).
    user_gesture: UserGesture = "evaluate"
    #: The state learns when a page commits a new document (``PageInfo.last_commit``:
    #: CDP's ``Page.frameNavigated``, WebDriver BiDi's ``browsingContext.
    #: navigationCommitted``), so a navigation tells the old document's dialogs from the
    #: new one's and keeps clear of those the old one opens as it is left (measured on
    #: Chromium 156: such a dialog holds ``Page.navigate`` for good). WebDriver classic
    #: announces no page loads, nor does Bun's WIP (a runtime: no pages).
    sees_commits: bool = False

    # -- what the probes measure --------------------------------------------------------
    #: It says which frames run out of process (CDP's OOPIF targets; WIP is asked as CDP
    #: is). WebDriver BiDi and classic do not.
    reports_site_isolation: bool = True
    #: The raw command a latency check times (as sent through ``sup.cdp`` / ``bidi`` /
    #: ``classic``), and how its result names it.
    round_trip: str = "Runtime.evaluate"
    round_trip_named: str = "Runtime.evaluate"
    #: It has a ``Debugger`` domain (CDP's, WebKit's).
    debugger_domain: bool = True
    #: A live session can be told to accept any certificate (a self-signed https page):
    #: CDP's ``Security.setIgnoreCertificateErrors`` (WIP is asked as CDP is; Bun has no
    #: pages to load one in). WebDriver BiDi and classic have no command for it: only a
    #: new session's ``acceptInsecureCerts`` capability, which the supervisor does not
    #: ask for.
    ignores_certificate_errors_live: bool = True

    @property
    def connection(self) -> type[CDPConnection] | type[BiDiConnection]:
        """The sans-I/O connection its messages are parsed by (WIP and WebDriver classic
        are framed as CDP)."""
        return BiDiConnection if self.bidi_messages else CDPConnection

    @property
    def clients_start_at_http(self) -> bool:
        """A client is given the endpoint's HTTP address, not its WebSocket: it finds the
        socket at ``/json/version`` (CDP, Bun's WIP), or it speaks HTTP (WebDriver
        classic). A WebDriver BiDi client is given the WebSocket: its endpoint answers
        no ``/json`` to find it by (Firefox's answers 404)."""
        return not self.own_socket or "version" in self.json_endpoints

    @property
    def relayed_as(self) -> ProtocolSpec | None:
        """The protocol the proxy relays its socket as (WIP's is framed as CDP, and the
        relay folds CDP's words); None: no socket to relay (WebDriver classic)."""
        if not self.own_socket:
            return None
        return BIDI if self.bidi_messages else CDP

    @property
    def replayed_as(self) -> ProtocolSpec:
        """The protocol ``cdpnb.proxy(replay=...)`` serves its recording as: its own, or,
        with no socket of its own (WebDriver classic), its framing's (CDP's)."""
        return self if self.own_socket else (BIDI if self.bidi_messages else CDP)

    def __repr__(self) -> str:
        return f"<ProtocolSpec {self.name}: {self.title}>"


#: Where a CDP recording is replayed.
_CDP_REPLAY_PATH = "/devtools/browser/cdpnb-replay"

CDP = ProtocolSpec(
    name="cdp", title="the Chrome DevTools Protocol", short="CDP",
    bidi_messages=False, own_socket=True, implied=True, json_endpoints=_ALL_JSON,
    replay=ReplayFace(_CDP_REPLAY_PATH, _ALL_JSON),
    dialog_seen_by="Page.javascriptDialogOpening",
    dialog_answer="Page.handleJavaScriptDialog", sees_commits=True)

BIDI = ProtocolSpec(
    name="bidi", title="WebDriver BiDi", short="WebDriver BiDi",
    bidi_messages=True, own_socket=True, session_command="session.new",
    ws_path="/session", liveness="port",
    # (BiDi endpoints live under /session.)
    replay=ReplayFace("/session/cdpnb-replay", _NO_JSON),
    browsing_contexts=True,
    dialog_seen_by="browsingContext.userPromptOpened",
    dialog_answer="browsingContext.handleUserPrompt",
    user_gesture="pointer-actions", sees_commits=True, reports_site_isolation=False,
    round_trip="script.evaluate", round_trip_named="script.evaluate",
    debugger_domain=False, ignores_certificate_errors_live=False)

WIP = ProtocolSpec(
    name="wip", title="the WebKit Inspector Protocol", short="WIP",
    bidi_messages=False, own_socket=True, json_endpoints=frozenset({"version"}),
    # A path that says nothing of the protocol, as Bun's own, so a client asks (see
    # ``cdpnb.transport.discovery``); /json/version and no list, as Bun 1.4.5 answers.
    replay=ReplayFace("/cdpnb-replay", frozenset({"version"}),
                      refuses_unknown_domains=True))

CLASSIC = ProtocolSpec(
    name="classic", title="WebDriver classic", short="WebDriver classic",
    bidi_messages=False, own_socket=False, liveness="webdriver-status",
    # Its messages have CDP's shape: a replay serves them on CDP's path, with no /json
    # (the replay's connector says the socket speaks classic).
    replay=ReplayFace(_CDP_REPLAY_PATH, _NO_JSON),
    dialog_seen_by="message from GET /alert/text", dialog_answer="classic.answerAlert",
    knows_dialog_frame=False, shows_beforeunload=False, dialog_bridge=False,
    user_gesture="element-click", reports_site_isolation=False,
    round_trip="classic.executeScript", round_trip_named="execute/sync",
    debugger_domain=False, ignores_certificate_errors_live=False)

#: Every protocol cdpnb speaks, in the order it names them.
PROTOCOL_SPECS: tuple[ProtocolSpec, ...] = (CDP, BIDI, WIP, CLASSIC)
_BY_NAME: dict[str, ProtocolSpec] = {spec.name: spec for spec in PROTOCOL_SPECS}
#: What a record that names no protocol spoke.
_IMPLIED = next(spec for spec in PROTOCOL_SPECS if spec.implied)


def protocol_spec(name: str | ProtocolSpec) -> ProtocolSpec:
    """The protocol called ``name`` (a spec is its own); ValueError naming the known
    ones for any other."""
    if isinstance(name, ProtocolSpec):
        return name
    spec = _BY_NAME.get(name) if isinstance(name, str) else None
    if spec is None:
        known = ", ".join(repr(spec.name) for spec in PROTOCOL_SPECS)
        raise ValueError(f"unknown protocol {name!r}: cdpnb speaks {known}")
    return spec


def recorded_protocol(said: object) -> ProtocolSpec:
    """The protocol a record says it spoke (a trace header's or a ``cdpnb.connected``
    note's ``protocol``): the one of that name, else the implied one (CDP), which such
    records leave out."""
    return _BY_NAME.get(said, _IMPLIED) if isinstance(said, str) else _IMPLIED
