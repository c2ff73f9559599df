"""WebDriver BiDi without a browser: the sans-I/O connection, the reducers, endpoint
detection and the replay of a BiDi recording, on messages shaped as Firefox sends them
(taken from a recording of Firefox ESR 153)."""

from __future__ import annotations

import base64
import json
from types import SimpleNamespace
from typing import Any

import pytest

import cdpnb
from cdpnb.drivers.bidi.bridge import BiDiDialogBridge, foreign_request
from cdpnb.protocol import BiDiConnection, Command, ErrorReply, Event, Fault, Note, Reply
from cdpnb.state import BrowserState, fold, fold_all
from cdpnb.state.changes import DialogClosed, DialogOpened, FrameRemoved, PageClosed
from cdpnb.transport.discovery import protocol_of_reply, protocol_of_url

TOP, CHILD, CROSS, NESTED = "top-ctx", "17179869185", "17179869187", "19327352833"
WALL = 1_800_000_000.0


def ev(method: str, params: dict[str, Any], at: float = 0.0) -> Event:
    return Event(method, params, None, WALL + at, at)


def created(context: str, parent: str | None, url: str = "about:blank",
            opener: str | None = None) -> Event:
    return ev("browsingContext.contextCreated", {
        "context": context, "parent": parent, "url": url, "children": None,
        "originalOpener": opener, "userContext": "default", "clientWindow": "w"})


def page_state() -> BrowserState:
    """The supervisor's tab with a same-site frame, a cross-site frame and a frame
    nested in that one, as the start sequence folds it."""
    messages = [
        Note("cdpnb.connected", {"url": "ws://127.0.0.1:1/session", "protocol": "bidi"}),
        Note("cdpnb.bidiSession", {"session_id": "s", "popups": True}),
        Note("cdpnb.pageTarget", {"target_id": TOP, "session_id": TOP}),
        created(TOP, None),
        ev("browsingContext.navigationCommitted", {"context": TOP, "url": "http://a.test/top"}),
        created(CHILD, TOP, "about:blank"),
        ev("browsingContext.navigationCommitted", {"context": CHILD, "url": "http://a.test/x"}),
        created(CROSS, TOP),
        ev("browsingContext.navigationCommitted", {"context": CROSS, "url": "http://b.test/y"}),
        created(NESTED, CROSS, "http://a.test/z"),
        ev("script.realmCreated", {"realm": "r-cross", "origin": "http://b.test",
                                   "context": CROSS, "type": "window"}),
    ]
    return fold_all(messages)


# -- the sans-I/O connection --------------------------------------------------------------


def test_commands_have_no_sessions_and_replies_match_by_id() -> None:
    conn = BiDiConnection()
    cmd, text = conn.command("browsingContext.navigate", {"context": TOP, "url": "x"})
    assert json.loads(text) == {"id": 1, "method": "browsingContext.navigate",
                                "params": {"context": TOP, "url": "x"}}
    with pytest.raises(ValueError, match="no sessions on the wire"):
        conn.command("script.evaluate", {}, "some-session")
    reply = conn.receive('{"type":"success","id":1,"result":{"navigation":"n"}}')
    assert isinstance(reply, Reply)
    assert (reply.method, reply.result, reply.params) == (cmd.method, {"navigation": "n"},
                                                          cmd.params)
    assert conn.pending == 0


def test_errors_keep_their_bidi_name_and_map_unknown_command_to_method_not_found() -> None:
    conn = BiDiConnection()
    conn.command("browsingContext.handleUserPrompt", {"context": TOP})
    conn.command("nope.nothing", {})
    alert = conn.receive('{"type":"error","id":1,"error":"no such alert","message":"",'
                         '"stacktrace":"..."}')
    assert isinstance(alert, ErrorReply)
    assert (alert.code, alert.message, alert.data) == (-32000, "no such alert",
                                                       {"error": "no such alert"})
    missing = conn.receive('{"type":"error","id":2,"error":"unknown command",'
                           '"message":"nope.nothing"}')
    assert isinstance(missing, ErrorReply)
    assert (missing.code, missing.message) == (-32601, "unknown command: nope.nothing")
    state = fold(BrowserState(), missing).state
    assert "nope.nothing" in state.unsupported  # a capability the endpoint lacks
    assert "[-32000] no such alert" in str(cdpnb.protocol.error_of(alert))


@pytest.mark.parametrize("frame, kind", [
    ("[]", "not-an-object"), ('{"type":"event","params":{}}', "no-method"),
    ('{"type":"event","method":"m","params":[]}', "bad-params"),
    ('{"id":1,"result":{}}', "no-type"), ('{"type":"success","id":7,"result":{}}',
                                          "unknown-id"),
    ('{"type":"error","error":"invalid argument","message":"bad JSON"}', "error-without-id"),
    ("{not json", "malformed-json"), ('{"type":"success","id":true}', "bad-id"),
])
def test_bad_frames_are_faults_never_exceptions(frame: str, kind: str) -> None:
    fault = BiDiConnection().receive(frame)
    assert isinstance(fault, Fault) and fault.kind == kind


def test_a_late_reply_to_an_abandoned_command_is_still_matched() -> None:
    conn = BiDiConnection()
    cmd, _ = conn.command("script.evaluate", {"expression": "1"})
    conn.abandon(cmd.id)
    late = conn.receive('{"type":"success","id":1,"result":{}}')
    assert isinstance(late, Reply)


# -- endpoint detection ---------------------------------------------------------------------


def test_the_url_or_one_reply_says_which_protocol_an_endpoint_speaks() -> None:
    assert protocol_of_url("ws://127.0.0.1:9/devtools/browser/abc") == "cdp"
    assert protocol_of_url("ws://127.0.0.1:9/session") == "bidi"
    assert protocol_of_url("ws://127.0.0.1:9/") is None
    assert protocol_of_reply(b'{"type":"success","id":0,"result":{"ready":true}}') == "bidi"
    assert protocol_of_reply(b'{"id":0,"error":{"code":-32601,"message":"nope"}}') == "cdp"
    # node 20 and Deno 2.9.8 / Bun 1.4.5 (WebKit's dispatcher): CDP / WIP.
    assert protocol_of_reply(b'{"id":0,"error":{"code":-32601,'
                             b'"message":"\'session.status\' wasn\'t found"}}') == "cdp"
    assert protocol_of_reply(b'{"error":{"code":-32601,"message":"\'session\' domain was '
                             b'not found","data":[]},"id":0}') == "wip"
    assert protocol_of_reply(b'{"hello":"world"}') is None
    assert protocol_of_reply(None) is None


async def test_an_endpoint_that_speaks_neither_is_named_with_what_was_tried() -> None:
    import socket

    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    with pytest.raises(cdpnb.EndpointError, match="neither CDP .* nor WebDriver BiDi"):
        await cdpnb.Supervisor.start(f"http://127.0.0.1:{port}", connect_timeout_s=1)


# -- the reducers -----------------------------------------------------------------------------


def test_contexts_become_pages_and_frames_with_parents_and_origins() -> None:
    state = page_state()
    assert state.protocol == "bidi"
    assert state.page_target_id == state.page_session_id == TOP
    assert set(state.frames) == {TOP, CHILD, CROSS, NESTED}
    assert state.frames[NESTED].parent_frame_id == CROSS
    assert {f.session_id for f in state.frames.values()} == {TOP}
    assert not any(f.is_oopif for f in state.frames.values())  # BiDi does not say
    assert state.frames[CROSS].origin == "http://b.test"
    assert state.contexts[(TOP, CROSS)] == "r-cross"
    tree = cdpnb.state.snapshot.build_frame_tree(state)
    assert tree.top is not None and tree.top.frame_id == TOP
    assert [c.frame_id for c in tree.children] == [CHILD, CROSS, NESTED]


def test_contexts_of_other_tabs_are_ignored_and_popups_of_ours_are_pages() -> None:
    state = page_state()
    other = fold(state, created("other-tab", None, "http://elsewhere.test/")).state
    assert other is state
    folded = fold(state, created("popup", None, "about:blank", opener=CROSS))
    assert [type(c).__name__ for c in folded.changes] == ["PageOpened", "FrameAdded"]
    popup = folded.state.pages["popup"]
    assert (popup.opener_target_id, popup.opener_frame_id) == (TOP, CROSS)
    no_popups = fold(page_state(), Note("cdpnb.bidiSession", {"popups": False})).state
    assert "popup" not in fold(no_popups, created("popup", None, opener=CROSS)).state.pages


def prompt(context: str, kind: str = "prompt", at: float = 1.0) -> Event:
    return ev("browsingContext.userPromptOpened", {
        "context": context, "handler": "ignore", "message": "m", "type": kind,
        "defaultValue": "d"}, at)


def closed(context: str, accepted: bool, text: str | None = None, at: float = 1.05) -> Event:
    params: dict[str, Any] = {"context": context, "accepted": accepted, "type": "prompt"}
    if text is not None:
        params["userText"] = text
    return ev("browsingContext.userPromptClosed", params, at)


def test_a_prompt_in_a_nested_frame_belongs_to_its_page_and_our_answer_closes_it() -> None:
    state = page_state()
    folded = fold(state, prompt(NESTED))
    assert isinstance(folded.changes[0], DialogOpened)
    dialog = folded.state.pending_dialogs[0]
    assert (dialog.frame_id, dialog.page_session_id, dialog.url) == (NESTED, TOP,
                                                                     "http://a.test/z")
    state = fold(folded.state, Note("cdpnb.dialogAnswering", {
        "dialog_id": dialog.id, "accept": True, "prompt_text": "hi"})).state
    folded = fold(state, closed(NESTED, True, "hi"))
    record = folded.changes[0]
    assert isinstance(record, DialogClosed)
    assert (record.record.closed_by, record.record.prompt_text) == ("agent", "hi")


def test_a_close_nobody_of_ours_asked_for_is_remote() -> None:
    state = fold(page_state(), prompt(CHILD)).state
    record = fold(state, closed(CHILD, False, at=1.002)).state.recent_dialogs[-1]
    assert (record.closed_by, record.reason) == ("remote", None)
    assert fold(state, closed(CHILD, False)).state.counters.get("fast-remote-dismissals") == 1


def test_navigation_of_the_tab_and_removal_of_the_frame_close_prompts_as_the_browser() -> None:
    state = fold(page_state(), prompt(TOP)).state
    state = fold(state, ev("browsingContext.navigationStarted",
                           {"context": TOP, "navigation": "n", "url": "http://a.test/next"})).state
    assert state.pending_dialogs[0].unanswerable == "navigation"
    # Measured: Firefox closes it itself with accepted: true.
    record = fold(state, closed(TOP, True)).state.recent_dialogs[-1]
    assert (record.closed_by, record.reason) == ("browser", "navigation")

    state = fold(page_state(), prompt(NESTED)).state
    folded = fold(state, ev("browsingContext.contextDestroyed", {"context": CROSS}))
    assert {c.frame.frame_id for c in folded.changes if isinstance(c, FrameRemoved)} == {
        CROSS, NESTED}
    record = folded.state.recent_dialogs[-1]
    assert (record.closed_by, record.reason) == ("browser", "frame_removed")
    assert (TOP, CROSS) not in folded.state.contexts
    # ... and the userPromptClosed Firefox sends after it changes nothing.
    assert fold(folded.state, closed(NESTED, True)).state is folded.state


def test_a_beforeunload_prompt_survives_the_navigation_it_holds_up() -> None:
    state = fold(page_state(), prompt(TOP, "beforeunload")).state
    state = fold(state, ev("browsingContext.navigationStarted",
                           {"context": TOP, "navigation": "n"})).state
    assert state.pending_dialogs[0].answerable


def test_the_tab_closed_ends_the_page_and_its_prompts() -> None:
    state = fold(page_state(), prompt(CROSS)).state
    folded = fold(state, ev("browsingContext.contextDestroyed", {"context": TOP}))
    assert any(isinstance(c, PageClosed) for c in folded.changes)
    assert folded.state.frames == {} and folded.state.pages == {}
    assert folded.state.page_gone is not None
    assert folded.state.recent_dialogs[-1].reason == "page_closed"


def test_a_prompt_the_session_answers_itself_is_the_browsers_close() -> None:
    state = page_state()
    opened = ev("browsingContext.userPromptOpened", {
        "context": TOP, "handler": "dismiss", "message": "m", "type": "alert"})
    state = fold(state, opened).state
    assert state.pending_dialogs[0].unanswerable == "prompt_handler"
    record = fold(state, closed(TOP, False)).state.recent_dialogs[-1]
    assert (record.closed_by, record.reason) == ("browser", "prompt_handler")


@pytest.mark.parametrize("bad", [
    {"context": 7, "type": "alert"}, {"context": TOP, "type": "nope"},
    {"context": TOP, "type": "alert", "handler": "maybe"},
])
def test_malformed_prompts_are_counted_never_folded(bad: dict[str, Any]) -> None:
    state = page_state()
    folded = fold(state, ev("browsingContext.userPromptOpened", bad))
    assert folded.state.pending_dialogs == ()
    assert folded.state.counters["malformed:browsingContext.userPromptOpened"] == 1


def test_known_contexts_stay_and_contexts_under_unknown_parents_are_not_ours() -> None:
    state = page_state()
    tree = Reply(9, "browsingContext.getTree", {"contexts": [
        {"context": CROSS, "parent": NESTED, "url": "x", "children": []}]})
    assert fold(state, tree).state.frames == state.frames  # known already: untouched
    cyclic = created("new", "new")
    folded = fold(state, cyclic)
    assert "new" not in folded.state.frames


def test_console_errors_and_exceptions_of_supervised_frames() -> None:
    state = page_state()
    entry = ev("log.entryAdded", {"type": "javascript", "level": "error",
                                  "text": "Error: boom", "source": {"realm": "r",
                                                                    "context": CROSS},
                                  "stackTrace": {"callFrames": [{"url": "http://b.test/y",
                                                                 "lineNumber": 3}]}})
    state = fold(state, entry).state
    assert (state.console_errors[-1].kind, state.console_errors[-1].line) == ("exception", 3)
    other = ev("log.entryAdded", {"type": "console", "level": "error", "text": "x",
                                  "source": {"context": "other-tab"}})
    assert fold(state, other).state is state


def test_a_command_is_folded_as_a_bidi_command_in_the_trace_format() -> None:
    from cdpnb.trace.format import LineDecoder

    decoder = LineDecoder()
    line = {"seq": 1, "t": 1.0, "wall": WALL, "dir": "send",
            "msg": {"id": 3, "method": "browsingContext.close", "params": {"context": TOP}}}
    assert isinstance(decoder.decode(line, "line 2"), Command)
    error = {"seq": 2, "t": 1.1, "wall": WALL, "dir": "recv",
             "msg": {"type": "error", "id": 3, "error": "no such frame", "message": "gone"}}
    reply = decoder.decode(error, "line 3")
    assert isinstance(reply, ErrorReply)
    assert (reply.method, reply.code, reply.message) == ("browsingContext.close", -32000,
                                                         "no such frame: gone")
    event = {"seq": 3, "t": 1.2, "wall": WALL, "dir": "recv",
             "msg": {"type": "event", "method": "log.entryAdded", "params": {}}}
    assert isinstance(decoder.decode(event, "line 4"), Event)


def loading(method: str, navigation: str, url: str, at: float) -> Event:
    return ev(f"browsingContext.{method}", {"context": TOP, "navigation": navigation,
                                            "url": url, "timestamp": 0}, at)


#: The three orders Firefox ESR 153 reported, navigating away from a document whose
#: onload loops on alert() (its alert open): the left document's load comes under the
#: new navigation's id before the commit, between the commit and the new document's
#: domContentLoaded, or after the new document's own load.
STRAY_ORDERS = {
    "before the commit": ["load-old", "navigationCommitted", "domContentLoaded"],
    "before domContentLoaded": ["navigationCommitted", "load-old", "domContentLoaded"],
    "after the own load": ["navigationCommitted", "domContentLoaded", "load", "load-old"],
}


@pytest.mark.parametrize("order", STRAY_ORDERS)
def test_a_load_that_is_not_the_new_documents_own_is_a_stray_load(order: str) -> None:
    state = page_state()
    for at, step in enumerate(STRAY_ORDERS[order], start=10):
        method, url = ("load", "http://a.test/loop") if step == "load-old" else \
            (step, "http://a.test/other")
        state = fold(state, loading(method, "nav-2", url, at)).state
    assert state.pages[TOP].stray_load_at == WALL + 10 + STRAY_ORDERS[order].index("load-old")
    # (the stray load's URL is the left document's: the frame keeps the new one's)
    assert state.frames[TOP].url == state.pages[TOP].url == "http://a.test/other"


def test_a_document_that_loads_in_order_has_no_stray_load() -> None:
    state = page_state()
    for at, method in enumerate(["navigationCommitted", "domContentLoaded", "load"]):
        state = fold(state, loading(method, "nav-2", "http://a.test/other", at)).state
    # a load of an iframe, and a load without a navigation id, say nothing of the page's
    state = fold(state, ev("browsingContext.load", {"context": CHILD, "navigation": "n-9",
                                                    "url": "http://a.test/x"})).state
    state = fold(state, ev("browsingContext.load", {"context": TOP, "navigation": None,
                                                    "url": "http://a.test/other"})).state
    page = state.pages[TOP]
    assert page.stray_load_at is None
    assert page.committed_navigation == page.content_loaded_navigation == \
        page.loaded_navigation == "nav-2"


@pytest.mark.parametrize("engine", ["Firefox/153.7.0esr", "Chrome/156.0.8078.79"])
def test_a_navigation_cdpnb_sends_leaves_firefoxs_prompts_to_firefox(engine: str) -> None:
    """Firefox may close the left document's alert before any news of the navigation
    (no navigationStarted): cdpnb's note that it navigates says so first. Chromium keeps
    a page's prompt open for the navigation to wait on: the note changes nothing."""
    state = fold(page_state(), Note("cdpnb.bidiSession", {"browser": engine})).state
    state = fold(state, prompt(TOP, "alert")).state
    noted = fold(state, Note("cdpnb.pageNavigating", {"session_id": TOP}, TOP))
    closing = fold(noted.state, closed(TOP, True, at=2.0))
    record = closing.state.recent_dialogs[-1]
    if engine.startswith("Firefox/"):
        assert noted.state.pending_dialogs[0].unanswerable == "navigation"
        assert (record.closed_by, record.reason) == ("browser", "navigation")
    else:
        assert noted.state is state and noted.changes == ()
        assert record.closed_by == "remote"


def test_a_page_cdpnb_replaces_takes_its_prompts_along_as_the_replacement() -> None:
    state = fold(page_state(), prompt(CROSS)).state
    state = fold(state, Note("cdpnb.pageReplacing", {"session_id": TOP, "reason": "stuck"})).state
    folded = fold(state, ev("browsingContext.contextDestroyed", {"context": TOP}))
    closed_page = next(c for c in folded.changes if isinstance(c, PageClosed))
    assert closed_page.reason == "replaced"
    record = folded.state.recent_dialogs[-1]
    assert (record.closed_by, record.reason) == ("cdpnb", "page_replaced")
    assert folded.state.page_gone is None  # replaced, not lost


# -- the bridge's session-wide intercept ------------------------------------------------------


def bridge_request(context: str, key: str, *, blocked: bool = True) -> Event:
    call = json.dumps({"key": key, "type": "prompt", "message": "m", "defaultPrompt": ""})
    header = base64.b64encode(call.encode()).decode()
    return ev("network.beforeRequestSent", {
        "context": context, "isBlocked": blocked, "request": {
            "request": f"req-{context}", "url": "http://cdpnb-bridge.invalid/dialog",
            "method": "POST", "headers": [
                {"name": "X-Cdpnb-Bridge", "value": {"type": "string", "value": header}}]}})


def test_a_bridge_call_from_a_tab_nobody_supervises_is_refused_and_not_recorded() -> None:
    state = fold(page_state(), created("other-tab", None, "http://elsewhere.test/")).state
    notes: list[tuple[str, dict[str, Any], str | None]] = []

    def spawn(coro: Any, name: str = "") -> None:
        coro.close()

    core = SimpleNamespace(state=state, spawn=spawn,
                           note=lambda method, params, session=None: notes.append(
                               (method, params, session)))
    bridge = BiDiDialogBridge(core, key="the-key")  # type: ignore[arg-type]
    # From a frame of the supervised tab, with the key: a dialog of that page.
    bridge(bridge_request(NESTED, "the-key"), ())
    # From another tab, with the key all the same: refused, never a dialog of ours.
    bridge(bridge_request("other-tab", "the-key"), ())
    assert [(m, p.get("frameId"), s) for m, p, s in notes] == [
        ("cdpnb.bridgeDialogOpening", NESTED, TOP),
        ("cdpnb.bridgeRequestRefused", "other-tab", None)]
    assert "no supervised page holds" in notes[1][1]["reason"]
    # Another tab's own requests, unpaused, are neither the trace's nor the state's.
    assert foreign_request(bridge_request("other-tab", "x", blocked=False), state)
    assert not foreign_request(bridge_request("other-tab", "x", blocked=True), state)
    assert not foreign_request(bridge_request(CROSS, "x", blocked=False), state)
    assert not foreign_request(created("other-tab-2", None), state)


def test_a_page_whose_first_document_commits_unannounced_learns_its_url_from_load() -> None:
    """chromium-bidi 17 sends no navigationCommitted for a noopener popup's first
    document; its URL comes with domContentLoaded and load."""
    state = page_state()
    popup = "POPUP"
    state = fold(state, created(popup, None, "about:blank", opener=TOP)).state
    assert state.pages[popup].opener_target_id == TOP  # supervised: opened by our page
    assert state.pages[popup].url in ("", "about:blank")
    loaded = fold(state, ev("browsingContext.domContentLoaded", {
        "context": popup, "navigation": "n", "timestamp": 1, "url": "http://a.test/p"})).state
    assert loaded.frames[popup].url == loaded.pages[popup].url == "http://a.test/p"
    again = fold(loaded, ev("browsingContext.load", {
        "context": popup, "navigation": "n", "timestamp": 2, "url": "http://a.test/p"}))
    # nothing new of its frames: no change (the page notes the navigation as loaded)
    assert again.changes == () and again.state.frames == loaded.frames
    assert again.state.pages[popup].loaded_navigation == "n"
