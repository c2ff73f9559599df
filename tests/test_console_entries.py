"""The browser's own console messages: CDP's ``Log.entryAdded`` (and what WebDriver BiDi
gives for the same page) in ``console_errors`` and ``trace.console()``.

The reducer on hand-written messages; ``Log.enable`` in the attach, proven exact with
scripted peers (sent with the other enables, a refusal never fails the attach); then a
page served here that embeds a cross-site frame answered ``X-Frame-Options: deny``, an
image its CSP blocks and one that is not there, on every path, on Lightpanda and on
Node.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import cdpnb
from cdpnb.errors import CommandTimeout
from cdpnb.notebook.supervisor_view import _console_html
from cdpnb.playback.server import NO_RECORDED_REPLY
from cdpnb.probes.server import ScenarioServer
from cdpnb.protocol import Command, Event, Note
from cdpnb.state import BrowserState, ConsoleEntry, fold, fold_all
from cdpnb.state.changes import ConsoleError, Malformed
from cdpnb.state.console import MAX_TEXT, bidi_entry_kind, log_entry
from cdpnb.state.snapshot import snapshot_of
from cdpnb.testing import HOLD, ScriptedBrowser, ScriptedCommand, ScriptedError
from cdpnb.trace import Recorder, Trace
from tests.conftest import settle

PS, CS = "PAGE-SESSION", "CHILD-SESSION"
T0 = 1_800_000_000.0

#: What Chromium 156 sent for an X-Frame-Options refusal (measured, on the frame's session).
XFO_ENTRY = {"source": "other", "level": "error",
             "text": "Refused to display 'http://localhost:1/' in a frame because it set "
                     "'X-Frame-Options' to 'deny'.",
             "timestamp": 1795663720952.123, "url": "chrome-error://chromewebdata/",
             "lineNumber": 0}
#: A failed load as Chromium 156 sent it (on the page's session).
NOT_FOUND_ENTRY = {"source": "network", "level": "error",
                   "text": "Failed to load resource: the server responded with a status of "
                           "404 (Not Found)",
                   "timestamp": 1795663720858.3, "url": "http://127.0.0.1:1/missing.png",
                   "networkRequestId": "25955.2"}


def log_event(entry: Any, session: str | None = PS, wall: float = T0) -> Event:
    return Event("Log.entryAdded", {"entry": entry}, session, wall)


def page_state() -> BrowserState:
    return fold_all([Note("cdpnb.connected", {"url": "ws://127.0.0.1:1/devtools/browser/x"}),
                     Note("cdpnb.pageTarget", {"target_id": "T", "session_id": PS})])


# -- the reducer -------------------------------------------------------------------------


def test_a_browser_error_is_a_console_error_of_kind_browser_with_its_source() -> None:
    state = page_state()
    folded = fold(state, log_event(XFO_ENTRY, CS, T0 + 1))
    [entry] = folded.state.console_errors
    assert entry == ConsoleEntry(kind="browser", level="error", text=XFO_ENTRY["text"],
                                 url="chrome-error://chromewebdata/", line=0, column=None,
                                 session_id=CS, at=T0 + 1, source="other")
    assert folded.changes == (ConsoleError(entry),)
    assert folded.state.console_errors_total == 1
    loaded = fold(folded.state, log_event(NOT_FOUND_ENTRY)).state
    assert [(e.source, e.url, e.line) for e in loaded.console_errors] == [
        ("other", "chrome-error://chromewebdata/", 0),
        ("network", "http://127.0.0.1:1/missing.png", None)]


def test_browser_errors_share_the_ring_buffer_with_console_calls_and_exceptions() -> None:
    state = page_state()
    messages = [
        Event("Runtime.consoleAPICalled", {"type": "error", "args": [{"type": "string",
                                                                       "value": "page"}]}, PS),
        log_event(NOT_FOUND_ENTRY),
        Event("Runtime.exceptionThrown", {"exceptionDetails": {"text": "Uncaught"}}, PS),
    ]
    state = fold_all(messages, state)
    assert [e.kind for e in state.console_errors] == ["console", "browser", "exception"]
    assert [e.source for e in state.console_errors] == [None, "network", None]
    state = fold_all([log_event({**NOT_FOUND_ENTRY, "text": f"e{i}"}) for i in range(60)], state)
    assert len(state.console_errors) == 50 and state.console_errors_total == 63
    assert state.console_errors[-1].text == "e59"


@pytest.mark.parametrize("level", ["warning", "info", "verbose"])
def test_only_the_browsers_errors_are_kept_like_console_calls(level: str) -> None:
    state = page_state()
    folded = fold(state, log_event({**XFO_ENTRY, "level": level}))
    assert folded.state is state and folded.changes == ()


def test_where_a_browser_error_happened_comes_from_its_stack_when_it_names_no_url() -> None:
    entry = {"source": "violation", "level": "error", "text": "blocked",
             "stackTrace": {"callFrames": [{"url": "http://a/x.js", "lineNumber": 7,
                                            "columnNumber": 2}]}}
    [e] = fold(page_state(), log_event(entry)).state.console_errors
    assert (e.url, e.line, e.source) == ("http://a/x.js", 7, "violation")
    assert log_entry({"entry": {"level": "error"}}) == ("error", "", "", "", None)
    [bare] = fold(page_state(), log_event({"level": "error"})).state.console_errors
    assert (bare.source, bare.text, bare.url) == (None, "", "")


def test_a_huge_browser_message_is_cut_in_the_state_and_kept_whole_in_the_trace() -> None:
    huge = {**NOT_FOUND_ENTRY, "text": "x" * 100_000}
    [e] = fold(page_state(), log_event(huge)).state.console_errors
    assert len(e.text) == MAX_TEXT
    trace = Trace({"cdpnb_trace": 1, "started_mono": 0.0}, [log_event(huge)])
    assert trace.console()["text"][0] == "x" * 100_000


@pytest.mark.parametrize("params", [
    {}, {"entry": "a string"}, {"entry": {"text": "no level"}},
    {"entry": {"level": 3, "text": "x"}}, {"entry": {"level": "error", "source": ["s"]}},
    {"entry": {"level": "error", "text": {"not": "text"}}},
])
def test_a_malformed_log_entry_is_counted_and_changes_nothing_else(params: dict[str, Any]) -> None:
    state = page_state()
    folded = fold(state, Event("Log.entryAdded", params, PS, T0))
    assert folded.state.console_errors == ()
    assert folded.state.counters["malformed:Log.entryAdded"] == 1
    assert [type(c) for c in folded.changes] == [Malformed]


# -- WebDriver BiDi: which javascript entry is the browser's ------------------------------

#: Measured on Firefox 153 ESR and chromium-bidi 17 (Chromium 156); see bidi_entry_kind.
BIDI_ENTRIES = [
    ("firefox: X-Frame-Options refusal", {
        "type": "javascript", "level": "error",
        "text": "The loading of “http://localhost:1/deny” in a frame is denied by "
                "“X-Frame-Options“ directive set to “deny“."}, "browser"),
    ("firefox: CSP violation", {
        "type": "javascript", "level": "error",
        "text": "Content-Security-Policy: The page’s settings blocked the loading of a "
                "resource (img-src) at http://localhost:1/child.png because it violates the "
                "following directive: “img-src 'self'”"}, "browser"),
    ("firefox: throw, with a stack", {
        "type": "javascript", "level": "error", "text": "Error: boom",
        "stackTrace": {"callFrames": [{"url": "http://a/", "lineNumber": 2}]}}, "exception"),
    ("firefox: a syntax error has no stack", {
        "type": "javascript", "level": "error",
        "text": "SyntaxError: expected expression, got ';'"}, "exception"),
    ("firefox: unhandled rejection, no stack", {
        "type": "javascript", "level": "error", "text": "Error: rej"}, "exception"),
    ("firefox: unhandled rejection of a string", {
        "type": "javascript", "level": "error", "text": "uncaught exception: srej"},
     "exception"),
    ("an error named like a browser message, thrown: its stack says exception", {
        "type": "javascript", "level": "error", "text": "Content-Security-Policy: fake",
        "stackTrace": {"callFrames": [{"url": "http://a/", "lineNumber": 9}]}}, "exception"),
    ("chromium-bidi: syntax error", {
        "type": "javascript", "level": "error", "text": "SyntaxError: Unexpected token ';'"},
     "exception"),
    ("console.error", {"type": "console", "method": "error", "level": "error", "text": "x"},
     "console"),
    ("a type BiDi may add", {"type": "network", "level": "error", "text": "x"}, "browser"),
]


@pytest.mark.parametrize(("params", "kind"), [(p, k) for _, p, k in BIDI_ENTRIES],
                         ids=[name for name, _, _ in BIDI_ENTRIES])
def test_a_bidi_javascript_entry_without_stack_or_error_name_is_the_browsers(
        params: dict[str, Any], kind: str) -> None:
    assert bidi_entry_kind(params) == kind
    state = fold_all([
        Note("cdpnb.connected", {"url": "ws://127.0.0.1:1/session", "protocol": "bidi"}),
        Note("cdpnb.bidiSession", {"session_id": "s", "popups": True}),
        Note("cdpnb.pageTarget", {"target_id": "TOP", "session_id": "TOP"}),
        Event("browsingContext.contextCreated", {
            "context": "TOP", "parent": None, "url": "about:blank", "children": None,
            "userContext": "default", "clientWindow": "w"}, None, T0),
    ])
    entry = Event("log.entryAdded", {**params, "source": {"realm": "r", "context": "TOP"}},
                  None, T0 + 1)
    [e] = fold(state, entry).state.console_errors
    assert (e.kind, e.source, e.session_id) == (kind, None, "TOP")
    trace = Trace({"cdpnb_trace": 1, "started_mono": 0.0}, [entry])
    assert trace.console()["kind"].tolist() == [kind]


# -- escaped wherever it is shown -----------------------------------------------------------

HOSTILE = '<img src=x onerror="alert(1)"></td></table><script>alert(2)</script>'
ESCAPED = "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;"


def test_a_hostile_browser_message_is_text_in_every_view() -> None:
    entry = {"source": HOSTILE, "level": "error", "text": HOSTILE, "url": HOSTILE}
    state = fold(page_state(), log_event(entry)).state
    snapshot = snapshot_of(state)
    for html in (snapshot._repr_html_(), _console_html(state)):
        assert "<img" not in html and "<script" not in html
        assert ESCAPED in html
    assert json.loads(json.dumps(snapshot.to_dict()))["console_errors"][0]["text"] == HOSTILE
    assert "<img" not in repr(snapshot)


# -- the trace table ------------------------------------------------------------------------


def nullable(column: pd.Series) -> list[Any]:
    """A column's values, None where it has none (a categorical gives NaN)."""
    return [None if pd.isna(v) else v for v in column]


def write_trace(path: Path) -> None:
    recorder = Recorder(path, backend={"kind": "test"})
    events = [
        Event("Runtime.consoleAPICalled", {"type": "error", "args": [{"type": "string",
                                                                       "value": "page"}]}, PS),
        log_event({**NOT_FOUND_ENTRY, "level": "warning", "text": "a warning"}),
        log_event(XFO_ENTRY, CS),
        log_event({"no": "entry"}),  # malformed: no row (the state counts it)
        Event("log.entryAdded", {"type": "javascript", "level": "error",
                                 "text": "The loading of “x” in a frame is denied",
                                 "source": {"context": "TOP"}}),
    ]
    for i, event in enumerate(events):
        recorder(Event(event.method, event.params, event.session_id, T0 + i, 100.0 + i))
    recorder.close()


def test_the_console_table_has_the_browsers_messages_at_every_level(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    write_trace(path)
    loaded = Trace.load(path)
    assert loaded._columns is not None  # the columnar path
    frame = loaded.console()
    assert frame["kind"].tolist() == ["console", "browser", "browser", "browser"]
    assert frame["level"].tolist() == ["error", "warning", "error", "error"]
    assert nullable(frame["source"]) == [None, "network", "other", None]
    assert isinstance(frame["source"].dtype, pd.CategoricalDtype)
    assert frame["text"][2] == XFO_ENTRY["text"]
    assert frame["url"].tolist()[1:3] == ["http://127.0.0.1:1/missing.png",
                                          "chrome-error://chromewebdata/"]
    assert frame["line"].tolist()[1:3] == [pd.NA, 0]
    assert frame["session_id"].tolist()[2] == CS
    # The same table from message objects and back from Parquet.
    objects = Trace(loaded.header, list(loaded.records), loaded.footer)
    pd.testing.assert_frame_equal(objects.console(), frame, check_exact=True)
    back = Trace.from_parquet(loaded.to_parquet(tmp_path / "t.parquet"))
    pd.testing.assert_frame_equal(back.console(), frame, check_exact=True)
    # The live fold and the replayed one agree (one entry: warnings are not kept).
    assert [e.text for e in loaded.final_state().console_errors] == [
        "page", XFO_ENTRY["text"]]


# -- Log.enable in the attach (scripted peers) ---------------------------------------------


async def _start(browser: ScriptedBrowser) -> cdpnb.Supervisor:
    return await cdpnb.Supervisor.start(browser, reconnect_attempts=0)


async def test_log_enable_goes_out_with_the_other_enables_of_the_page() -> None:
    browser = ScriptedBrowser()
    held: list[ScriptedCommand] = []

    @browser.on("Runtime.enable")
    def hold(command: ScriptedCommand) -> Any:
        held.append(command)
        return HOLD

    starting = asyncio.ensure_future(_start(browser))
    # Runtime.enable unanswered, Log.enable is out already: no round trip of its own.
    log = await browser.wait_for_command("Log.enable")
    assert log.session_id == browser.page_session_id == held[0].session_id
    assert not starting.done()
    await browser.reply(held[0], {})
    sup = await starting
    try:
        assert "Log.enable" not in sup.unsupported
        await browser.emit("Log.entryAdded", {"entry": NOT_FOUND_ENTRY},
                           browser.page_session_id)
        assert [(e.kind, e.source) for e in sup.state.console_errors] == [("browser", "network")]
    finally:
        await sup.stop()


@pytest.mark.parametrize(("code", "message"), [
    (-32601, "'Log.enable' wasn't found"),  # an endpoint without the Log domain
    (NO_RECORDED_REPLY, "cdpnb replay: the recording has no (further) reply for Log.enable"),
])
async def test_a_refused_log_enable_never_fails_the_attach(code: int, message: str) -> None:
    browser = ScriptedBrowser()

    @browser.on("Log.enable")
    def refuse(command: ScriptedCommand) -> Any:
        raise ScriptedError(code, message)

    sup = await _start(browser)
    try:
        assert sup.connected and sup.page_session_id == browser.page_session_id
        assert sup.stats()["log-enable-refused"] == 1
        assert ("Log.enable" in sup.unsupported) is (code == -32601)
        # The page's children are set up and released all the same.
        await browser.emit("Target.attachedToTarget", {
            "sessionId": CS, "waitingForDebugger": True,
            "targetInfo": {"targetId": "OOPIF", "type": "iframe", "url": "about:blank"}},
            browser.page_session_id)
        release = await browser.wait_for_command("Runtime.runIfWaitingForDebugger")
        assert release.session_id == CS
        await settle(sup, lambda _: sup.stats().get("children-set-up", 0) == 1)
        assert {c.session_id for c in browser.commands("Log.enable")} == {
            browser.page_session_id, CS}
        assert sup.stats()["log-enable-refused"] == 2
    finally:
        await sup.stop()


async def test_log_enable_on_the_page_attached_directly_and_on_a_popup() -> None:
    browser = ScriptedBrowser()

    @browser.on("Target.setAutoAttach")
    def page_level_only(command: ScriptedCommand) -> Any:
        if command.session_id is None:  # no browser-level auto-attach: _attach's path
            raise ScriptedError(-32000, "Not allowed")
        return {}

    sup = await _start(browser)
    try:
        [first] = browser.commands("Log.enable")
        assert first.session_id == browser.page_session_id
        assert browser.commands("Target.attachToTarget")  # attached, not claimed
    finally:
        await sup.stop()
    popups = ScriptedBrowser()
    sup = await _start(popups)
    try:
        await popups.emit("Target.attachedToTarget", {
            "sessionId": "SESSION-POP", "waitingForDebugger": True,
            "targetInfo": {"targetId": "POP", "type": "page", "url": "",
                           "openerId": popups.page_target_id,
                           "openerFrameId": popups.page_frame_id}})
        await popups.wait_for_command("Runtime.runIfWaitingForDebugger")
        assert {c.session_id for c in popups.commands("Log.enable")} == {
            popups.page_session_id, "SESSION-POP"}
    finally:
        await sup.stop()


async def test_a_log_enable_that_times_out_fails_the_attach_like_its_siblings() -> None:
    # Only refusals are forgiven: a session that answers nothing is a broken session.
    browser = ScriptedBrowser()
    browser.on("Log.enable", lambda command: HOLD)
    with pytest.raises(CommandTimeout, match="Log.enable on session SESSION-TARGET-1 got no "
                                             "reply within 0.5 s"):
        await cdpnb.Supervisor.start(browser, reconnect_attempts=0, command_timeout_s=0.5)


# -- real browsers --------------------------------------------------------------------------

DENY = "<!doctype html><title>denied</title><p>never shown in a frame</p>"
FRAMER = """<!doctype html><title>framer</title><body>
<iframe id=denied src="{B}/console-xfo-deny"></iframe>
<img id=blocked src="{B}/console-blocked.png">
<img id=missing src="{A}/console-missing.png">
<script>console.error('page says <b>no</b>')</script>
</body>"""


@pytest.fixture(scope="module")
def console_site() -> Iterator[ScenarioServer]:
    with ScenarioServer() as server:
        server.add("/console-xfo-deny", DENY, {"X-Frame-Options": "deny"})
        server.add("/console-framer", FRAMER, {"Content-Security-Policy": "img-src 'self'"})
        yield server


def expected_browser_messages(kind: str, site: ScenarioServer) -> set[tuple[str | None, str]]:
    """(source, text) of the browser's own errors for /console-framer, as measured."""
    b = site.site_b
    if kind in ("chromium", "headless-shell"):
        # Chromium 156: the refusal on the refused frame's own (OOPIF) session; the CSP
        # violation and the 404 on the page's.
        return {
            ("other", f"Refused to display '{b}/' in a frame because it set "
                      "'X-Frame-Options' to 'deny'."),
            ("security", f"Loading the image '{b}/console-blocked.png' violates the following "
                         "Content Security Policy directive: \"img-src 'self'\". The action "
                         "has been blocked."),
            ("network", "Failed to load resource: the server responded with a status of 404 "
                        "(Not Found)"),
        }
    if kind == "firefox":
        # Firefox 153 ESR: both as BiDi "javascript" entries with no stack (no source);
        # nothing for the image that is not there.
        return {
            (None, f"The loading of “{b}/console-xfo-deny” in a frame is denied by "
                   "“X-Frame-Options“ directive set to “deny“."),
            (None, "Content-Security-Policy: The page’s settings blocked the loading of a "
                   f"resource (img-src) at {b}/console-blocked.png because it violates the "
                   "following directive: “img-src 'self'”"),
        }
    # chromium-bidi 17 turns Runtime's console calls and exceptions into log.entryAdded
    # and never enables CDP's Log domain: none of the browser's messages reach BiDi.
    assert kind == "chromium+bidi", kind
    return set()


def _browser_errors(entries: Any) -> set[tuple[str | None, str]]:
    # Headful Chromium also asks for /favicon.ico (404 here, as on any site without one).
    return {(e.source, e.text) for e in entries
            if e.kind == "browser" and not e.url.endswith("/favicon.ico")}


async def test_the_browsers_refusal_of_a_framed_page_is_a_console_error_live_and_traced(
        every_path: cdpnb.Backend, console_site: ScenarioServer, tmp_path: Path) -> None:
    expected = expected_browser_messages(every_path.kind, console_site)
    path = tmp_path / "t.jsonl"
    async with await cdpnb.Supervisor.start(every_path, record=path) as sup:
        await sup.navigate(console_site.url("/console-framer"))
        await settle(sup, lambda s: expected <= _browser_errors(s.console_errors)
                     and any(e.kind == "console" for e in s.console_errors))
        # What has not come by now is not coming (the refusal took 0.1 s on Chromium).
        await asyncio.sleep(1.0)
        errors = sup.snapshot().console_errors
        assert _browser_errors(errors) == expected
        # The page's own console.error once: not again through the Log domain.
        assert [(e.kind, e.text) for e in errors if e.kind != "browser"] == [
            ("console", "page says <b>no</b>")]
        if every_path.protocol == "cdp":
            [refusal] = [e for e in errors if e.source == "other"]
            assert (refusal.level, refusal.url) == ("error", "chrome-error://chromewebdata/")
            assert refusal.session_id is not None
            assert sup.state.sessions[refusal.session_id].type == "iframe"
            [missing] = [e for e in errors if e.source == "network"
                         and not e.url.endswith("/favicon.ico")]
            assert missing.url == console_site.url("/console-missing.png")
            assert missing.session_id == sup.page_session_id
    table = Trace.load(path).console()
    browser = table[table["kind"] == "browser"]
    browser = browser[~browser["url"].str.endswith("/favicon.ico")]
    assert set(zip(nullable(browser["source"]), browser["text"], strict=True)) == expected
    assert set(browser["level"]) <= {"error"}
    assert table.loc[table["kind"] == "console", "text"].tolist() == ["page says <b>no</b>"]


@pytest.fixture(scope="module")
def lightpanda() -> Iterator[cdpnb.Backend]:
    with cdpnb.launch("lightpanda") as backend:
        yield backend


async def test_lightpanda_takes_log_enable_and_reports_none_of_its_own(
        lightpanda: cdpnb.Backend, console_site: ScenarioServer, tmp_path: Path) -> None:
    path = tmp_path / "lp.jsonl"
    async with await cdpnb.Supervisor.start(lightpanda, record=path) as sup:
        await sup.navigate(console_site.url("/console-framer"))
        await settle(sup, lambda s: any(e.kind == "console" for e in s.console_errors))
        await asyncio.sleep(1.0)
        assert "Log.enable" not in sup.unsupported and sup.stats().get("log-enable-refused") is None
        # Lightpanda 1.0 answers Log.enable ({}) and sends no Log.entryAdded: it enforces
        # neither X-Frame-Options nor the CSP, and reports no failed load.
        assert [(e.kind, e.text) for e in sup.snapshot().console_errors] == [
            ("console", "page says <b>no</b>")]
    commands = Trace.load(path).commands()
    assert commands.loc[commands["method"] == "Log.enable", "ok"].tolist() == [True]


@pytest.mark.browser
async def test_node_is_attached_directly_and_never_asked_for_log(tmp_path: Path) -> None:
    path = tmp_path / "node.jsonl"
    async with cdpnb.launch("node") as backend, \
            await cdpnb.Supervisor.start(backend, record=path) as sup:
        await sup.evaluate("console.error('from node')")
        await settle(sup, lambda s: len(s.console_errors) == 1)
        assert sup.state.console_errors[0].kind == "console"
    trace = Trace.load(path)
    assert not any(isinstance(r, Command) and r.method == "Log.enable" for r in trace.records)
