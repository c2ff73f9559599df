"""A protocol is a value (issue 42): one ``ProtocolSpec`` per protocol, the list written
once, and no protocol name compared, keyed or matched outside the rooms that speak it.

The facts are held two ways: as a table (a change to one is deliberate), and by what the
code that asks them does with them (a replay's face, a relay's notes, the fold, a trace
header, the drivers)."""

from __future__ import annotations

import ast
import asyncio
import json
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from websockets.asyncio.client import connect

import cdpnb
from cdpnb import cli
from cdpnb.playback.server import NO_RECORDED_REPLY, ReplayServer
from cdpnb.probes.expected import engine_kind
from cdpnb.protocol import (
    PROTOCOL_SPECS,
    BiDiConnection,
    CDPConnection,
    Command,
    Note,
    Reply,
    protocol_spec,
    recorded_protocol,
)
from cdpnb.protocol.specs import BIDI, CDP, CLASSIC, WIP, ProtocolSpec
from cdpnb.proxy.faults import FaultRuleError, parse_faults
from cdpnb.proxy.relay import Record, Relay
from cdpnb.state import BrowserState, fold
from cdpnb.supervisor.supervisor import DRIVERS
from cdpnb.trace import Recorder, Trace
from cdpnb.transport.discovery import PROTOCOLS

PACKAGE = Path(cdpnb.__file__).resolve().parent
NAMES = ("cdp", "bidi", "wip", "classic")

#: Each protocol's facts, as the code before the specs branched on them.
FACTS: dict[str, dict[str, Any]] = {
    "cdp": dict(
        title="the Chrome DevTools Protocol", short="CDP", implied=True,
        bidi_messages=False, own_socket=True, session_command=None,
        json_endpoints={"version", "list"}, ws_path="", liveness="json-version",
        replay_path="/devtools/browser/cdpnb-replay", replay_json={"version", "list"},
        refuses_unknown_domains=False, browsing_contexts=False,
        dialog_seen_by="Page.javascriptDialogOpening",
        dialog_answer="Page.handleJavaScriptDialog", knows_dialog_frame=True,
        shows_beforeunload=True, dialog_bridge=True, user_gesture="evaluate",
        sees_commits=True, reports_site_isolation=True, round_trip="Runtime.evaluate",
        round_trip_named="Runtime.evaluate", debugger_domain=True,
        ignores_certificate_errors_live=True, clients_start_at_http=True,
        connection=CDPConnection, relayed_as="cdp", replayed_as="cdp"),
    "bidi": dict(
        title="WebDriver BiDi", short="WebDriver BiDi", implied=False,
        bidi_messages=True, own_socket=True, session_command="session.new",
        json_endpoints=set(), ws_path="/session", liveness="port",
        replay_path="/session/cdpnb-replay", replay_json=set(),
        refuses_unknown_domains=False, browsing_contexts=True,
        dialog_seen_by="browsingContext.userPromptOpened",
        dialog_answer="browsingContext.handleUserPrompt", knows_dialog_frame=True,
        shows_beforeunload=True, dialog_bridge=True, user_gesture="pointer-actions",
        sees_commits=True, reports_site_isolation=False, round_trip="script.evaluate",
        round_trip_named="script.evaluate", debugger_domain=False,
        ignores_certificate_errors_live=False, clients_start_at_http=False,
        connection=BiDiConnection, relayed_as="bidi", replayed_as="bidi"),
    "wip": dict(
        title="the WebKit Inspector Protocol", short="WIP", implied=False,
        bidi_messages=False, own_socket=True, session_command=None,
        json_endpoints={"version"}, ws_path="", liveness="json-version",
        replay_path="/cdpnb-replay", replay_json={"version"},
        refuses_unknown_domains=True, browsing_contexts=False,
        dialog_seen_by=None, dialog_answer=None, knows_dialog_frame=True,
        shows_beforeunload=True, dialog_bridge=True, user_gesture="evaluate",
        sees_commits=False, reports_site_isolation=True, round_trip="Runtime.evaluate",
        round_trip_named="Runtime.evaluate", debugger_domain=True,
        ignores_certificate_errors_live=True, clients_start_at_http=True,
        connection=CDPConnection, relayed_as="cdp", replayed_as="wip"),
    "classic": dict(
        title="WebDriver classic", short="WebDriver classic", implied=False,
        bidi_messages=False, own_socket=False, session_command=None,
        json_endpoints=set(), ws_path="", liveness="webdriver-status",
        replay_path="/devtools/browser/cdpnb-replay", replay_json=set(),
        refuses_unknown_domains=False, browsing_contexts=False,
        dialog_seen_by="message from GET /alert/text", dialog_answer="classic.answerAlert",
        knows_dialog_frame=False, shows_beforeunload=False, dialog_bridge=False,
        user_gesture="element-click", sees_commits=False, reports_site_isolation=False,
        round_trip="classic.executeScript", round_trip_named="execute/sync",
        debugger_domain=False, ignores_certificate_errors_live=False,
        clients_start_at_http=True, connection=CDPConnection, relayed_as=None,
        replayed_as="cdp"),
}


def facts_of(spec: ProtocolSpec) -> dict[str, Any]:
    relayed = spec.relayed_as
    return dict(
        title=spec.title, short=spec.short, implied=spec.implied,
        bidi_messages=spec.bidi_messages, own_socket=spec.own_socket,
        session_command=spec.session_command, json_endpoints=set(spec.json_endpoints),
        ws_path=spec.ws_path, liveness=spec.liveness, replay_path=spec.replay.path,
        replay_json=set(spec.replay.json),
        refuses_unknown_domains=spec.replay.refuses_unknown_domains,
        browsing_contexts=spec.browsing_contexts,
        dialog_seen_by=spec.dialog_seen_by,
        dialog_answer=spec.dialog_answer, knows_dialog_frame=spec.knows_dialog_frame,
        shows_beforeunload=spec.shows_beforeunload, dialog_bridge=spec.dialog_bridge,
        user_gesture=spec.user_gesture, sees_commits=spec.sees_commits,
        reports_site_isolation=spec.reports_site_isolation,
        round_trip=spec.round_trip, round_trip_named=spec.round_trip_named,
        debugger_domain=spec.debugger_domain,
        ignores_certificate_errors_live=spec.ignores_certificate_errors_live,
        clients_start_at_http=spec.clients_start_at_http, connection=spec.connection,
        relayed_as=relayed.name if relayed is not None else None,
        replayed_as=spec.replayed_as.name)


# -- the specs -------------------------------------------------------------------------


def test_the_list_is_written_once_in_order() -> None:
    assert tuple(spec.name for spec in PROTOCOL_SPECS) == NAMES
    assert PROTOCOL_SPECS == (CDP, BIDI, WIP, CLASSIC)
    # The names other rooms list are read from it.
    assert PROTOCOLS == NAMES
    assert [spec for spec in PROTOCOL_SPECS if spec.implied] == [CDP]


@pytest.mark.parametrize("name", NAMES)
def test_every_spec_holds_its_facts(name: str) -> None:
    spec = protocol_spec(name)
    assert spec.name == name
    assert facts_of(spec) == FACTS[name]
    # A value: frozen, hashable, equal to itself only.
    with pytest.raises(AttributeError):
        spec.name = "bidi"  # type: ignore[misc]
    assert len({hash(s) for s in PROTOCOL_SPECS}) == len(PROTOCOL_SPECS)
    assert repr(spec) == f"<ProtocolSpec {name}: {spec.title}>"


def test_lookup_takes_a_name_or_a_spec_and_names_the_known_ones() -> None:
    assert protocol_spec("bidi") is BIDI
    assert protocol_spec(CLASSIC) is CLASSIC
    for unknown in ("webdriver", "CDP", "", None, 3):
        with pytest.raises(ValueError, match="unknown protocol") as caught:
            protocol_spec(unknown)  # type: ignore[arg-type]
        message = str(caught.value)
        assert repr(unknown) in message
        assert all(repr(name) in message for name in NAMES), message


def test_a_record_that_names_none_or_an_unknown_one_spoke_cdp() -> None:
    assert [recorded_protocol(name) for name in NAMES] == list(PROTOCOL_SPECS)
    for said in (None, "", "webdriver", 7, {"protocol": "bidi"}):
        assert recorded_protocol(said) is CDP


# -- what the code that asks them does --------------------------------------------------


@pytest.mark.parametrize("name", NAMES)
def test_the_connected_note_folds_the_protocol_it_names(name: str) -> None:
    params: dict[str, Any] = {"url": "ws://127.0.0.1:1/x", "generation": 1}
    if not protocol_spec(name).implied:
        params["protocol"] = name
    state, _ = fold(BrowserState(), Note("cdpnb.connected", params, None, 0.0, 0.0))
    assert state.protocol == name


@pytest.mark.parametrize("name", NAMES)
def test_a_trace_header_keeps_the_name_and_reads_back_the_spec(name: str,
                                                               tmp_path: Path) -> None:
    path = tmp_path / f"{name}.jsonl"
    recorder = Recorder(path)
    recorder.set_protocol(name)
    recorder.close()
    header = json.loads(path.read_text().splitlines()[0])
    assert header["protocol"] == name  # on disk: the name, as before
    trace = Trace.load(path)
    assert trace.protocol == name and trace.protocol_spec is protocol_spec(name)


def test_the_drivers_are_one_per_spec_and_agree_on_the_bridge() -> None:
    assert set(DRIVERS) == set(NAMES)
    for spec in PROTOCOL_SPECS:
        assert DRIVERS[spec.name].name == spec.name
        assert DRIVERS[spec.name].has_bridge == spec.dialog_bridge, spec.name
        # Whether the state sees a commit is the spec's to say, not a driver's (WIP's
        # driver, a CDP driver, once inherited CDP's word for it).
        assert not hasattr(DRIVERS[spec.name], "sees_commits"), spec.name


@pytest.mark.parametrize("spec", PROTOCOL_SPECS, ids=NAMES)
def test_each_connection_parses_its_own_framing(spec: ProtocolSpec) -> None:
    conn = spec.connection()
    command, _ = conn.command("Browser.getVersion", {}, None)
    reply = ({"type": "success", "id": command.id, "result": {"ok": 1}} if spec.bidi_messages
             else {"id": command.id, "result": {"ok": 1}})
    got = conn.receive(json.dumps(reply).encode(), wall=0.0, mono=0.0)
    assert isinstance(got, Reply) and got.result == {"ok": 1}


def test_the_relay_speaks_the_protocols_relayed_as_themselves() -> None:
    notes: list[Record] = []
    for spec in PROTOCOL_SPECS:
        if spec.relayed_as is not spec:
            with pytest.raises(ValueError, match="relays CDP and WebDriver BiDi, not"):
                Relay(spec.name)
            continue
        notes.clear()
        relay = Relay(spec, sink=lambda message, wire: notes.append(message))
        assert relay.protocol == spec.name and relay.protocol_spec is spec
        relay.start("ws://127.0.0.1:1/x", 0.0, 0.0)
        connected = notes[0]
        assert isinstance(connected, Note) and connected.method == "cdpnb.connected"
        # The implied protocol is left out of the note, as out of a trace header.
        assert connected.params.get("protocol") == (None if spec.implied else spec.name)
    with pytest.raises(FaultRuleError, match="WebDriver BiDi has no sessions to detach"):
        Relay(BIDI, faults=parse_faults(["detach:A.b"]))


def _get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


@pytest.mark.parametrize("spec", PROTOCOL_SPECS, ids=NAMES)
async def test_a_replay_faces_its_clients_as_its_spec_says(spec: ProtocolSpec) -> None:
    method = "session.status" if spec.bidi_messages else "Browser.getVersion"
    recording = (Command(1, method, {}), Reply(1, method, {"product": "X/1"}))
    server = await ReplayServer(recording, protocol=spec.name).start()
    try:
        assert server.protocol_spec is spec
        assert server.cdp_url == f"ws://127.0.0.1:{server.port}{spec.replay.path}"
        status, body = await asyncio.to_thread(_get, f"{server.http_url}/json/version")
        if "version" in spec.replay.json:
            assert status == 200 and json.loads(body)["webSocketDebuggerUrl"] == server.cdp_url
        else:
            assert status == 404 and f"a WebDriver {spec.name} replay has no /json" in body
        status, _ = await asyncio.to_thread(_get, f"{server.http_url}/json/list")
        assert (status == 200) == ("list" in spec.replay.json)
        async with connect(server.cdp_url) as ws:
            await ws.send(json.dumps({"id": 5, "method": method, "params": {}}))
            reply = json.loads(await ws.recv())
            assert reply["id"] == 5 and reply["result"] == {"product": "X/1"}
            assert (reply.get("type") == "success") == spec.bidi_messages
            await ws.send(json.dumps({"id": 6, "method": "Nowhere.found", "params": {}}))
            refused = json.loads(await ws.recv())
        if spec.bidi_messages:
            assert refused["type"] == "error" and refused["error"] == "unknown error"
        elif spec.replay.refuses_unknown_domains:
            assert refused["error"] == {"code": -32601,
                                        "message": "'Nowhere' domain was not found"}
        else:
            assert refused["error"]["code"] == NO_RECORDED_REPLY
    finally:
        await server.close()


def test_a_replay_refuses_an_unknown_protocol_naming_the_known_ones() -> None:
    with pytest.raises(ValueError, match="protocol must be 'cdp', 'bidi', 'wip' or "
                                         "'classic', got 'webdriver'"):
        ReplayServer((), protocol="webdriver")


# -- no protocol literal outside its rooms ----------------------------------------------

#: Where a protocol's name may be compared, keyed or matched: the protocols' own room
#: (their specs and codecs), the per-protocol reducers and the drivers.
ROOMS = ("protocol/", "state/bidi.py", "state/classic.py", "drivers/cdp/",
         "drivers/wip/", "drivers/bidi/", "drivers/classic/")
#: Files not moved to the specs yet, each with why; an entry whose file no longer holds
#: a literal fails, so the list only shrinks. (Empty: the probes, their expectations and
#: the proxy's CLI ask the specs too.)
ALLOWED: dict[str, str] = {}


def protocol_literals(source: str) -> list[int]:
    """The lines where a protocol's name is a string constant compared (``==``,
    ``in``, either side, in a tuple/list/set compared), a dict key, or a match case."""
    names = {"cdp", "bidi", "classic", "wip"}

    def named(node: ast.AST | None) -> bool:
        if isinstance(node, ast.Constant):
            return node.value in names
        if isinstance(node, ast.Tuple | ast.List | ast.Set):
            return any(named(element) for element in node.elts)
        return False

    lines: list[int] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare):
            operands: list[ast.AST | None] = [node.left, *node.comparators]
        elif isinstance(node, ast.Dict):
            operands = list(node.keys)
        elif isinstance(node, ast.MatchValue):
            operands = [node.value]
        else:
            continue
        lines.extend(getattr(o, "lineno", node.lineno) for o in operands if named(o))
    return lines


def test_the_literal_counter_finds_every_form() -> None:
    source = '''
if p == "cdp" or "bidi" != p or p in ("wip", "x") or p not in {"classic"}:
    pass
d = {"cdp": 1, "other": 2}
match p:
    case "wip" | "nothing":
        pass
s = "cdp"  # (a constant not compared: not counted)
f(protocol="bidi")  # (an argument: not counted)
'''
    assert sorted(protocol_literals(source)) == [2, 2, 2, 2, 4, 6]


def test_no_protocol_literal_outside_its_rooms() -> None:
    found: dict[str, list[int]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        where = path.relative_to(PACKAGE).as_posix()
        if where.startswith(ROOMS):
            continue
        lines = protocol_literals(path.read_text(encoding="utf-8"))
        if lines:
            found[where] = sorted(lines)
    outside = {where: lines for where, lines in found.items() if where not in ALLOWED}
    assert not outside, f"protocol names compared/keyed outside their rooms: {outside}"
    stale = sorted(set(ALLOWED) - set(found))
    assert not stale, f"allowed but holding no protocol literal any more: {stale}"


BUN_RECORDING = Path(__file__).resolve().parent.parent / "datasets/probes/bun.native.jsonl.gz"


async def test_a_wip_replay_is_found_from_its_http_address_as_bun_is() -> None:
    """Bun 1.4.5 answers /json/version (and no list): a replay of a Bun recording does
    too, so ``Supervisor.start("http://…")`` finds it and speaks WIP (it answered 404)."""
    async with cdpnb.replay(BUN_RECORDING) as backend:
        sup = await cdpnb.Supervisor.start(backend.http_url)
        async with sup:
            assert sup.protocol == "wip" and sup.connected


#: What an endpoint says it is, over each protocol, and whose expectations it gets.
ENGINES = [
    (CDP, "Chrome/156.0.8078.79", "chromium"), (CDP, "HeadlessChrome/156.0", "headless-shell"),
    (CDP, "Lightpanda/1.0", "lightpanda"), (CDP, "node.js/v20.19.2", "node"),
    (CDP, "Deno/2.9.8", "deno"), (CDP, "WebKit/1", None), (CDP, "Firefox/153.7.0", None),
    (BIDI, "Firefox/153.7.0esr", "firefox"), (BIDI, "Chrome/156.0", "chromium+bidi"),
    (BIDI, "HeadlessChrome/156.0", "chromium+bidi"), (BIDI, "MiniBrowser/2.50", None),
    (WIP, "Bun", "bun"), (WIP, "Bun/1.4.5", "bun"), (WIP, "Bunny/1", None),
    (WIP, "Chrome/156.0", None), (WIP, "Deno/2.9.8", "deno"),
    (CLASSIC, "MiniBrowser/2.50.6", "webkit"), (CLASSIC, "chrome/156.0", "chromium+chromedriver"),
    (CLASSIC, "Chrome/156.0", "chromium+chromedriver"), (CLASSIC, "Firefox/153.7.0", None),
]


@pytest.mark.parametrize(("spec", "browser", "kind"), ENGINES)
def test_an_endpoint_is_the_kind_it_says_over_its_protocol(spec: ProtocolSpec, browser: str,
                                                          kind: str | None) -> None:
    assert engine_kind(spec, browser) == engine_kind(spec.name, browser) == kind


@pytest.mark.parametrize(("kind", "first"), [("chromium", "http"), ("firefox", "ws"),
                                             ("bun", "http"), ("webkit", "http")])
def test_the_proxy_cli_prints_first_where_a_client_starts(
        kind: str, first: str, capsys: pytest.CaptureFixture[str]) -> None:
    """A CDP or WIP client discovers the socket from the HTTP address (a classic trace is
    replayed as CDP); a WebDriver BiDi client is given the WebSocket."""
    path = BUN_RECORDING.parent / f"{kind}.native.jsonl.gz"
    assert cli.main(["proxy", "--replay", str(path), "--duration", "0.2", "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert protocol_spec(info["protocol"]) is Trace.load(path).protocol_spec.replayed_as
    assert info["url"].startswith(f"{first}://127.0.0.1:")
    assert (info["url"] == info["ws_url"]) == (first == "ws")
