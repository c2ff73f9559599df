"""Pure reducer tests: hand-built message sequences modelled on measured Chromium 156."""

from __future__ import annotations

import copy
import json
import math
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cdpnb.protocol import CDPConnection, Command, ErrorReply, Event, Message, Note, Reply
from cdpnb.state import (
    BrowserState,
    FrameTree,
    build_frame_tree,
    fold,
    fold_all,
    snapshot_of,
)
from cdpnb.state.counting import OCCURRENCES
from cdpnb.state.reducer import EVENT_RULES, NOTE_RULES, REPLY_RULES

T0 = 1_700_000_000.0
PS = "PS"
CS = "CS"
MAIN = "MAIN"
SRC = "SRC"
OOP = "OOP"
PAGE_URL = "http://127.0.0.1:1/"
PAGE_ORIGIN = "http://127.0.0.1:1"
CHILD_URL = "http://localhost:1/child"
CHILD_ORIGIN = "http://localhost:1"


# -- message builders ----------------------------------------------------------------------


def ev(method: str, params: dict[str, Any], sid: str | None = PS, wall: float = T0) -> Event:
    return Event(method, params, sid, wall)


def note(method: str, params: dict[str, Any], wall: float = T0) -> Note:
    return Note(method, params, None, wall)


def frame(fid: str, url: str, origin: str, parent: str | None = None) -> dict[str, Any]:
    f: dict[str, Any] = {"id": fid, "loaderId": "L-" + fid, "url": url, "securityOrigin": origin,
                         "mimeType": "text/html"}
    if parent is not None:
        f["parentId"] = parent
    return f


def frame_tree_reply(wall: float = T0) -> Reply:
    return Reply(
        7,
        "Page.getFrameTree",
        {"frameTree": {
            "frame": frame(MAIN, PAGE_URL, PAGE_ORIGIN),
            "childFrames": [{"frame": frame(SRC, "about:srcdoc", "://", MAIN)}],
        }},
        PS,
        {},
        wall,
    )


def attached(child_sid: str, target_id: str, parent_sid: str | None, wall: float = T0,
             kind: str = "iframe") -> Event:
    return ev("Target.attachedToTarget", {
        "sessionId": child_sid,
        "targetInfo": {"targetId": target_id, "type": kind, "title": "", "url": "",
                       "attached": True, "canAccessOpener": False},
        "waitingForDebugger": True,
    }, parent_sid, wall)


def detached(child_sid: str, parent_sid: str | None = PS, wall: float = T0) -> Event:
    return ev("Target.detachedFromTarget", {"sessionId": child_sid}, parent_sid, wall)


def bidi_page_setup() -> list[Message]:
    return [
        note("cdpnb.connected", {"protocol": "bidi"}, T0),
        note("cdpnb.pageTarget", {"target_id": MAIN, "session_id": MAIN}, T0 + 0.01),
        Reply(1, "browsingContext.getTree", {"contexts": [{
            "context": MAIN, "parent": None, "url": PAGE_URL, "children": [
                {"context": SRC, "url": "about:srcdoc", "children": []},
                {"context": OOP, "url": CHILD_URL, "children": []}]}]}, None, {}, T0 + 0.02),
    ]


def page_setup() -> list[Message]:
    return [
        note("cdpnb.connected", {}, T0),
        note("cdpnb.pageTarget", {"target_id": MAIN, "session_id": PS}, T0 + 0.01),
        frame_tree_reply(T0 + 0.02),
    ]


def oopif_steps() -> list[Message]:
    return [
        ev("Page.frameAttached", {"frameId": OOP, "parentFrameId": MAIN}, PS, T0 + 1.0),
        attached(CS, OOP, PS, T0 + 1.01),
        ev("Page.frameNavigated",
           {"frame": frame(OOP, CHILD_URL, CHILD_ORIGIN, MAIN), "type": "Navigation"},
           CS, T0 + 1.02),
        ev("Page.frameDetached", {"frameId": OOP, "reason": "swap"}, PS, T0 + 1.03),
    ]


def page_state() -> BrowserState:
    return fold_all(page_setup())


def oopif_state() -> BrowserState:
    return fold_all([*page_setup(), *oopif_steps()])


def dialog_opening(kind: str = "alert", message: str = "Hello", frame_id: str = MAIN,
                   wall: float = T0 + 5, default_prompt: str = "",
                   has_browser_handler: bool = True, sid: str = PS) -> Event:
    return ev("Page.javascriptDialogOpening", {
        "url": PAGE_URL,
        "frameId": frame_id,
        "message": message,
        "type": kind,
        "hasBrowserHandler": has_browser_handler,
        "defaultPrompt": default_prompt,
    }, sid, wall)


def dialog_closed(result: bool, user_input: str = "", frame_id: str = MAIN,
                  wall: float = T0 + 6, sid: str = PS) -> Event:
    return ev("Page.javascriptDialogClosed",
              {"frameId": frame_id, "result": result, "userInput": user_input}, sid, wall)


def answering(dialog_id: str, accept: bool, prompt_text: str | None = None,
              closed_by: str = "agent", wall: float = T0 + 5.5) -> Note:
    return note("cdpnb.dialogAnswering", {"dialog_id": dialog_id, "accept": accept,
                                          "prompt_text": prompt_text, "closed_by": closed_by},
                wall)


def answered(dialog_id: str, ok: bool, wall: float = T0 + 6.5) -> Note:
    params: dict[str, Any] = {"dialog_id": dialog_id, "ok": ok}
    if not ok:
        params["error"] = "No dialog is showing"
    return note("cdpnb.dialogAnswered", params, wall)


def handle_reply(accept: bool, wall: float = T0 + 6.2) -> Reply:
    return Reply(40, "Page.handleJavaScriptDialog", {}, PS, {"accept": accept}, wall)


def context_created(ctx_id: int, frame_id: str, sid: str | None, default: bool = True) -> Event:
    return ev("Runtime.executionContextCreated", {"context": {
        "id": ctx_id, "origin": "", "name": "", "uniqueId": f"u{ctx_id}",
        "auxData": {"isDefault": default, "type": "default" if default else "isolated",
                    "frameId": frame_id},
    }}, sid)


def console_error(text: str, level: str = "error", wall: float = T0) -> Event:
    return ev("Runtime.consoleAPICalled", {
        "type": level,
        "args": [{"type": "string", "value": text}],
        "executionContextId": 1,
        "timestamp": 1.0,
        "stackTrace": {"callFrames": [{"functionName": "", "scriptId": "3", "url": PAGE_URL,
                                       "lineNumber": 4, "columnNumber": 12}]},
    }, PS, wall)


# -- page target and frame tree ------------------------------------------------------------


def test_page_target_note_registers_page_session() -> None:
    state = fold_all(page_setup()[:2])
    assert state.connected is True
    assert state.page_target_id == MAIN
    assert state.page_session_id == PS
    assert state.sessions[PS].target_id == MAIN
    assert state.sessions[PS].type == "page"
    assert state.sessions[PS].parent_session_id is None


def test_frame_tree_reply_lists_main_and_srcdoc_with_parent_origin() -> None:
    state = page_state()
    assert set(state.frames) == {MAIN, SRC}
    main, src = state.frames[MAIN], state.frames[SRC]
    assert (main.url, main.origin, main.parent_frame_id, main.session_id, main.is_oopif) == (
        PAGE_URL, PAGE_ORIGIN, None, PS, False)
    assert (src.url, src.origin, src.parent_frame_id, src.session_id, src.is_oopif) == (
        "about:srcdoc", PAGE_ORIGIN, MAIN, PS, False)


def test_frame_tree_reply_on_other_method_or_error_is_ignored() -> None:
    state = page_state()
    assert fold(state, Reply(8, "Page.getResourceTree", {"frameTree": {}}, PS)).state is state
    assert fold(state, ErrorReply(9, "Page.getFrameTree", -32000, "nope", None, PS)).state is state


def test_oopif_is_stitched_into_the_page_frame_table() -> None:
    state = page_state()
    steps = oopif_steps()

    state = fold(state, steps[0]).state  # PS frameAttached
    assert state.frames[OOP].parent_frame_id == MAIN
    assert state.frames[OOP].session_id == PS
    assert state.frames[OOP].is_oopif is False

    state = fold(state, steps[1]).state  # PS attachedToTarget (waiting for debugger)
    assert state.sessions[CS].target_id == OOP
    assert state.sessions[CS].type == "iframe"
    assert state.sessions[CS].parent_session_id == PS
    assert state.sessions[CS].waiting_for_debugger is True
    assert state.frames[OOP].is_oopif is True
    assert state.frames[OOP].session_id == CS
    assert state.frames[OOP].parent_frame_id == MAIN

    state = fold(state, steps[2]).state  # CS frameNavigated
    oop = state.frames[OOP]
    assert (oop.url, oop.origin, oop.parent_frame_id, oop.session_id, oop.is_oopif) == (
        CHILD_URL, CHILD_ORIGIN, MAIN, CS, True)

    before_swap = state
    state = fold(state, steps[3]).state  # PS frameDetached reason swap: NOT a removal
    assert state == before_swap
    assert state.frames[OOP].is_oopif is True
    assert state.frames[OOP].session_id == CS
    assert state.frames[OOP].parent_frame_id == MAIN
    assert set(state.frames) == {MAIN, SRC, OOP}


def test_an_oopif_attached_before_the_page_tree_learns_its_parent_from_it() -> None:
    """After a reconnect the OOPIF's session can attach (auto-attach) before the page's
    frame tree reply lands; the attach does not say where the frame sits, the page's
    tree does (seen once in a full-suite run: the OOPIF missing from the frame tree)."""
    connected = [note("cdpnb.connected", {}, T0),
                 note("cdpnb.pageTarget", {"target_id": MAIN, "session_id": PS}, T0 + 0.01)]
    tree = Reply(7, "Page.getFrameTree", {"frameTree": {
        "frame": frame(MAIN, PAGE_URL, PAGE_ORIGIN),
        "childFrames": [{"frame": frame(SRC, "about:srcdoc", "://", MAIN)},
                        {"frame": {**frame(OOP, CHILD_URL, CHILD_ORIGIN, MAIN),
                                   "name": "ads"}}]}},
                 PS, {}, T0 + 0.03)
    state = fold_all([*connected, attached(CS, OOP, PS, T0 + 0.02), tree])
    oop = state.frames[OOP]
    assert (oop.parent_frame_id, oop.session_id, oop.is_oopif, oop.name) == (
        MAIN, CS, True, "ads")
    found = snapshot_of(state).frame_tree.find(OOP)
    assert found is not None and found.parent_frame_id == MAIN
    # The other order gives the same table.
    assert fold_all([*connected, tree, attached(CS, OOP, PS, T0 + 0.04)]).frames == \
        state.frames


def test_oopif_appears_in_snapshot_frame_tree() -> None:
    tree = snapshot_of(oopif_state()).frame_tree
    assert tree.top is not None
    assert (tree.top.frame_id, tree.top.url, tree.top.origin) == (MAIN, PAGE_URL, PAGE_ORIGIN)
    src, oop = tree.find(SRC), tree.find(OOP)
    assert src is not None and oop is not None
    assert (src.url, src.is_oopif, src.parent_frame_id, src.session_id) == (
        "about:srcdoc", False, MAIN, None)
    assert (oop.url, oop.is_oopif, oop.parent_frame_id, oop.session_id) == (
        CHILD_URL, True, MAIN, CS)
    assert tree.truncated is False
    assert len(tree) == 3


def test_parent_session_frame_navigated_does_not_steal_an_oopif() -> None:
    state = oopif_state()
    # the parent session still names the frame a child session renders
    after = fold(state, ev("Page.frameNavigated",
                           {"frame": frame(OOP, "about:blank", "://", MAIN)}, PS, T0 + 2)).state
    assert after.frames[OOP] == state.frames[OOP]


def test_late_frame_attached_for_known_frame_changes_nothing() -> None:
    state = oopif_state()
    again = ev("Page.frameAttached", {"frameId": OOP, "parentFrameId": MAIN}, PS, T0 + 2)
    assert fold(state, again).state is state


def test_oopif_removal_frame_detached_then_target_detached() -> None:
    state = fold_all([
        ev("Page.frameDetached", {"frameId": OOP, "reason": "remove"}, PS, T0 + 3),
        detached(CS, PS, T0 + 3.01),
    ], oopif_state())
    assert OOP not in state.frames
    assert CS not in state.sessions
    assert set(state.frames) == {MAIN, SRC}
    assert build_frame_tree(state).find(OOP) is None


def test_oopif_removal_frame_detached_alone_removes_frame() -> None:
    state = fold(oopif_state(),
                 ev("Page.frameDetached", {"frameId": OOP, "reason": "remove"}, PS, T0 + 3)).state
    assert OOP not in state.frames


def test_oopif_swap_back_to_parent_process() -> None:
    state = fold_all([
        detached(CS, PS, T0 + 3),
        ev("Page.frameAttached", {"frameId": OOP, "parentFrameId": MAIN}, PS, T0 + 3.01),
        ev("Page.frameNavigated",
           {"frame": frame(OOP, "http://127.0.0.1:1/back", PAGE_ORIGIN, MAIN)}, PS, T0 + 3.02),
    ], oopif_state())
    assert CS not in state.sessions
    oop = state.frames[OOP]
    assert (oop.is_oopif, oop.session_id, oop.parent_frame_id, oop.url, oop.origin) == (
        False, PS, MAIN, "http://127.0.0.1:1/back", PAGE_ORIGIN)
    node = build_frame_tree(state).find(OOP)
    assert node is not None
    assert node.is_oopif is False
    assert node.session_id is None


def test_main_frame_navigation_prunes_all_child_frames() -> None:
    state = fold_all([
        ev("Page.frameAttached", {"frameId": "GRAND", "parentFrameId": SRC}, PS, T0 + 2),
        context_created(1, MAIN, PS),
        context_created(2, SRC, PS),
        context_created(3, OOP, CS),
        context_created(4, "GRAND", PS),
    ], oopif_state())
    assert set(state.frames) == {MAIN, SRC, OOP, "GRAND"}
    state = fold(state, ev("Page.frameNavigated",
                           {"frame": frame(MAIN, "http://127.0.0.1:1/next", PAGE_ORIGIN),
                            "type": "Navigation"}, PS, T0 + 4)).state
    assert set(state.frames) == {MAIN}
    assert state.frames[MAIN].url == "http://127.0.0.1:1/next"
    assert state.frames[MAIN].parent_frame_id is None
    assert set(state.contexts) == {(PS, MAIN)}
    tree = build_frame_tree(state)
    assert tree.top is not None and tree.top.frame_id == MAIN
    assert tree.children == ()


def test_child_frame_navigation_prunes_only_its_own_subtree() -> None:
    state = fold_all([
        ev("Page.frameAttached", {"frameId": "GRAND", "parentFrameId": SRC}, PS, T0 + 2),
        ev("Page.frameNavigated", {"frame": frame(SRC, "http://127.0.0.1:1/s", PAGE_ORIGIN, MAIN)},
           PS, T0 + 3),
    ], oopif_state())
    assert set(state.frames) == {MAIN, SRC, OOP}
    assert state.frames[SRC].url == "http://127.0.0.1:1/s"


def test_navigated_within_document_updates_url_only() -> None:
    state = fold(oopif_state(), ev("Page.navigatedWithinDocument",
                                   {"frameId": OOP, "url": CHILD_URL + "#x"}, CS, T0 + 2)).state
    assert state.frames[OOP].url == CHILD_URL + "#x"
    assert state.frames[OOP].is_oopif is True
    assert state.frames[OOP].origin == CHILD_ORIGIN


def test_target_info_changed_updates_session_url() -> None:
    state = fold(oopif_state(), ev("Target.targetInfoChanged", {"targetInfo": {
        "targetId": OOP, "type": "iframe", "url": CHILD_URL, "title": "", "attached": True}},
        PS, T0 + 2)).state
    assert state.sessions[CS].url == CHILD_URL


# -- nested OOPIF chain and frame tree caps -----------------------------------------------------


def nested_chain(levels: int) -> BrowserState:
    """MAIN -> F1 (C1) -> F2 (C2) -> ...: each attach arrives on the parent level's session."""
    msgs: list[Message] = list(page_setup())
    parent_frame, parent_sid = MAIN, PS
    wall = T0 + 1
    for level in range(1, levels + 1):
        fid, sid = f"F{level}", f"C{level}"
        origin = f"http://h{level}.test:1"
        msgs += [
            ev("Page.frameAttached", {"frameId": fid, "parentFrameId": parent_frame},
               parent_sid, wall),
            attached(sid, fid, parent_sid, wall + 0.001),
            ev("Page.frameNavigated", {"frame": frame(fid, origin + "/", origin, parent_frame)},
               sid, wall + 0.002),
            # an in-process child inside each OOPIF
            ev("Page.frameAttached", {"frameId": f"{fid}-in", "parentFrameId": fid},
               sid, wall + 0.003),
            ev("Page.frameNavigated",
               {"frame": frame(f"{fid}-in", "about:srcdoc", "://", fid)}, sid, wall + 0.004),
        ]
        parent_frame, parent_sid = fid, sid
        wall += 0.01
    return fold_all(msgs)


def test_nested_chain_sessions_and_frames() -> None:
    state = nested_chain(4)
    for level in range(1, 5):
        f = state.frames[f"F{level}"]
        assert f.is_oopif is True
        assert f.session_id == f"C{level}"
        assert f.parent_frame_id == (MAIN if level == 1 else f"F{level - 1}")
        s = state.sessions[f"C{level}"]
        assert s.parent_session_id == (PS if level == 1 else f"C{level - 1}")
        inner = state.frames[f"F{level}-in"]
        assert inner.is_oopif is False
        assert inner.session_id == f"C{level}"
        assert inner.origin == f"http://h{level}.test:1"


def test_frame_tree_caps_oopif_depth_at_two() -> None:
    state = nested_chain(4)
    tree = build_frame_tree(state)
    assert tree.truncated is True
    ids = [c.frame_id for c in tree.children]
    assert ids == [SRC, "F1", "F1-in", "F2", "F2-in"]
    depths = {c.frame_id: (c.depth, c.oopif_depth) for c in tree.children}
    assert depths == {SRC: (1, 0), "F1": (1, 1), "F1-in": (2, 1), "F2": (2, 2), "F2-in": (3, 2)}
    assert tree.find("F3") is None
    assert tree.find("F3-in") is None
    # the snapshot uses the same caps
    snap = snapshot_of(state)
    assert snap.frame_tree == tree
    assert snap.to_dict()["frame_tree"]["truncated"] is True


def test_full_frame_tree_on_request() -> None:
    state = nested_chain(4)
    tree = build_frame_tree(state, None, None)
    assert tree.truncated is False
    ids = [c.frame_id for c in tree.children]
    assert ids == [SRC] + [x for lvl in range(1, 5) for x in (f"F{lvl}", f"F{lvl}-in")]
    f4 = tree.find("F4")
    assert f4 is not None
    assert (f4.depth, f4.oopif_depth, f4.session_id, f4.parent_frame_id) == (4, 4, "C4", "F3")


def test_frame_tree_of_two_levels_is_not_truncated() -> None:
    tree = build_frame_tree(nested_chain(2))
    assert tree.truncated is False
    assert len(tree.children) == 5


def test_frame_tree_caps_entries_at_thirty() -> None:
    msgs = [ev("Page.frameAttached", {"frameId": f"K{i:02d}", "parentFrameId": MAIN}, PS)
            for i in range(40)]
    state = fold_all(msgs, page_state())
    tree = build_frame_tree(state)
    assert tree.truncated is True
    assert len(tree.children) == 30
    assert tree.top is not None and tree.top.frame_id == MAIN
    full = build_frame_tree(state, None, None)
    assert full.truncated is False
    assert len(full.children) == 41
    assert {c.frame_id for c in full.children} == {SRC} | {f"K{i:02d}" for i in range(40)}
    # the capped tree is a prefix of the full depth-first order
    assert tree.children == full.children[:30]


def test_frame_tree_exactly_thirty_children_is_not_truncated() -> None:
    msgs = [ev("Page.frameAttached", {"frameId": f"K{i:02d}", "parentFrameId": MAIN}, PS)
            for i in range(29)]
    tree = build_frame_tree(fold_all(msgs, page_state()))
    assert len(tree.children) == 30
    assert tree.truncated is False


def test_detaching_a_mid_chain_session_drops_nested_children() -> None:
    state = nested_chain(4)
    state = fold(state, detached("C1", PS, T0 + 9)).state
    assert set(state.sessions) == {PS}
    # F1's iframe element is still in MAIN: it stays, back in the page's process
    assert state.frames["F1"].is_oopif is False
    assert state.frames["F1"].session_id == PS
    for gone in ("F1-in", "F2", "F2-in", "F3", "F3-in", "F4", "F4-in"):
        assert gone not in state.frames
    assert set(state.frames) == {MAIN, SRC, "F1"}


def test_empty_state_frame_tree() -> None:
    assert build_frame_tree(BrowserState()) == FrameTree()
    d = snapshot_of(BrowserState()).to_dict()
    assert d["frame_tree"] == {"top": None, "children": [], "truncated": False}
    assert d["connected"] is False


# -- snapshot layout ---------------------------------------------------------------------


def test_snapshot_to_dict_has_design_layout() -> None:
    state = fold_all([
        dialog_opening("confirm", "Sure?", wall=T0 + 5),
        dialog_opening("alert", "Hello", frame_id=OOP, wall=T0 + 6),
        console_error("boom", wall=T0 + 7),
    ], oopif_state())
    state = fold_all([answering("d-1", True, wall=T0 + 8), dialog_closed(True, wall=T0 + 8.1)],
                     state)
    d = snapshot_of(state).to_dict()
    json.dumps(d)  # JSON-able
    assert {"pending_dialogs", "recent_dialogs", "frame_tree", "console_errors", "connected",
            "page_target_id"} <= set(d)
    assert d["connected"] is True
    assert d["page_target_id"] == MAIN

    [pending] = d["pending_dialogs"]
    assert {"id", "type", "message", "default_prompt", "frame_id", "opened_at"} <= set(pending)
    assert "answering" not in pending
    assert (pending["id"], pending["type"], pending["message"], pending["frame_id"],
            pending["opened_at"]) == ("d-2", "alert", "Hello", OOP, T0 + 6)

    [recent] = d["recent_dialogs"]
    assert {"id", "type", "message", "opened_at", "closed_at", "closed_by"} <= set(recent)
    assert (recent["id"], recent["closed_by"], recent["closed_at"]) == ("d-1", "agent", T0 + 8.1)

    ft = d["frame_tree"]
    assert set(ft) >= {"top", "children", "truncated"}
    assert ft["truncated"] is False
    assert {"frame_id", "url", "origin"} <= set(ft["top"])
    assert ft["top"]["frame_id"] == MAIN
    children = {c["frame_id"]: c for c in ft["children"]}
    assert {"frame_id", "url", "is_oopif", "parent_frame_id", "session_id"} <= set(children[OOP])
    assert children[OOP]["session_id"] == CS
    assert children[OOP]["is_oopif"] is True
    assert children[SRC]["is_oopif"] is False
    assert children[SRC]["url"] == "about:srcdoc"

    [err] = d["console_errors"]
    assert err["text"] == "boom"


def test_snapshot_to_dict_does_not_mutate_the_snapshot() -> None:
    state = fold_all([dialog_opening(), answering("d-1", True)], page_state())
    snap = snapshot_of(state)
    snap.to_dict()
    assert snap.pending_dialogs[0].answering is not None


# -- dialogs -------------------------------------------------------------------------------


def test_dialog_opening_makes_pending_dialog() -> None:
    state = fold(page_state(), dialog_opening("prompt", "Name?", default_prompt="anon",
                                              has_browser_handler=False, wall=T0 + 5)).state
    [d] = state.pending_dialogs
    assert (d.id, d.type, d.message, d.default_prompt, d.frame_id, d.session_id, d.url,
            d.opened_at, d.has_browser_handler, d.via, d.answering) == (
        "d-1", "prompt", "Name?", "anon", MAIN, PS, PAGE_URL, T0 + 5, False, "native", None)
    assert state.recent_dialogs == ()


def test_dialog_in_oopif_arrives_on_page_session_with_its_frame_id() -> None:
    state = fold(oopif_state(), dialog_opening("alert", "from child", frame_id=OOP)).state
    [d] = state.pending_dialogs
    assert d.frame_id == OOP
    assert d.session_id == PS


@pytest.mark.parametrize("closed_by", ["agent", "auto_policy", "watchdog"])
def test_close_event_before_reply_is_attributed_to_answerer(closed_by: str) -> None:
    state = fold_all([
        dialog_opening("confirm", "Sure?", wall=T0 + 5),
        answering("d-1", True, closed_by=closed_by, wall=T0 + 5.5),
        dialog_closed(True, wall=T0 + 6),          # Chromium: closed BEFORE the reply
        handle_reply(True, wall=T0 + 6.2),
        answered("d-1", True, wall=T0 + 6.5),
    ], page_state())
    assert state.pending_dialogs == ()
    [r] = state.recent_dialogs
    assert (r.id, r.type, r.message, r.closed_by, r.accepted, r.opened_at, r.closed_at) == (
        "d-1", "confirm", "Sure?", closed_by, True, T0 + 5, T0 + 6)
    assert r.prompt_text is None
    assert state.dialogs_closed_total == 1


def test_close_without_answer_intent_is_remote() -> None:
    state = fold_all([dialog_opening("alert"), dialog_closed(True, wall=T0 + 9)], page_state())
    assert state.pending_dialogs == ()
    [r] = state.recent_dialogs
    assert r.closed_by == "remote"
    assert r.closed_at == T0 + 9
    assert r.accepted is True


def test_answered_ok_closes_dialog_when_no_event_did() -> None:
    state = fold_all([
        dialog_opening("confirm"),
        answering("d-1", False, closed_by="auto_policy"),
        handle_reply(False, wall=T0 + 6.2),
        answered("d-1", True, wall=T0 + 6.5),
    ], page_state())
    assert state.pending_dialogs == ()
    [r] = state.recent_dialogs
    assert (r.closed_by, r.accepted, r.closed_at) == ("auto_policy", False, T0 + 6.5)


def test_answered_not_ok_clears_intent_and_dialog_stays_pending() -> None:
    state = fold_all([
        dialog_opening("alert"),
        answering("d-1", True),
        answered("d-1", False),
    ], page_state())
    [d] = state.pending_dialogs
    assert d.id == "d-1"
    assert d.answering is None
    assert state.recent_dialogs == ()
    # a later close, with no answer of ours on its way, is someone else's
    state = fold(state, dialog_closed(True, wall=T0 + 20)).state
    [r] = state.recent_dialogs
    assert r.closed_by == "remote"


def test_answering_sets_intent_on_the_pending_dialog() -> None:
    state = fold_all([dialog_opening("prompt"), answering("d-1", True, "hi", "watchdog")],
                     page_state())
    [d] = state.pending_dialogs
    assert d.answering is not None
    assert (d.answering.accept, d.answering.prompt_text, d.answering.closed_by) == (
        True, "hi", "watchdog")


def test_notes_for_unknown_dialog_ids_change_nothing() -> None:
    state = fold(page_state(), dialog_opening()).state
    assert fold(state, answering("d-9", True)).state is state
    assert fold(state, answered("d-9", True)).state is state
    # answered for a dialog we never said we were answering
    assert fold(state, answered("d-1", True)).state is state


def test_close_event_with_no_pending_dialog_changes_nothing() -> None:
    state = page_state()
    assert fold(state, dialog_closed(True)).state is state


def test_prompt_accept_text_is_recorded() -> None:
    state = fold_all([
        dialog_opening("prompt", "Name?", default_prompt="anon"),
        answering("d-1", True, "hi"),
        dialog_closed(True, "hi"),
        handle_reply(True),
        answered("d-1", True),
    ], page_state())
    [r] = state.recent_dialogs
    assert (r.type, r.accepted, r.prompt_text, r.default_prompt, r.closed_by) == (
        "prompt", True, "hi", "anon", "agent")


def test_prompt_accept_without_text_records_empty_string() -> None:
    via_event = fold_all([dialog_opening("prompt"), answering("d-1", True, None),
                          dialog_closed(True, ""), answered("d-1", True)], page_state())
    via_note = fold_all([dialog_opening("prompt"), answering("d-1", True, None),
                         answered("d-1", True)], page_state())
    assert via_event.recent_dialogs[0].prompt_text == ""
    assert via_note.recent_dialogs[0].prompt_text == ""


def test_dismissed_prompt_has_no_prompt_text() -> None:
    via_event = fold_all([dialog_opening("prompt"), answering("d-1", False, "ignored"),
                          dialog_closed(False, ""), answered("d-1", True)], page_state())
    via_note = fold_all([dialog_opening("prompt"), answering("d-1", False, "ignored"),
                         answered("d-1", True)], page_state())
    for state in (via_event, via_note):
        [r] = state.recent_dialogs
        assert r.accepted is False
        assert r.prompt_text is None


def test_remote_prompt_accept_keeps_user_input() -> None:
    state = fold_all([dialog_opening("prompt"), dialog_closed(True, "typed")], page_state())
    [r] = state.recent_dialogs
    assert (r.closed_by, r.prompt_text) == ("remote", "typed")


def test_alert_never_has_prompt_text() -> None:
    state = fold_all([dialog_opening("alert"), answering("d-1", True, "x"),
                      dialog_closed(True, "x")], page_state())
    assert state.recent_dialogs[0].prompt_text is None


def test_close_event_matches_dialog_by_frame_id() -> None:
    state = fold_all([
        dialog_opening("alert", "one", frame_id=MAIN, wall=T0 + 1),
        dialog_opening("alert", "two", frame_id=OOP, wall=T0 + 2),
        dialog_closed(True, frame_id=OOP, wall=T0 + 3),
    ], oopif_state())
    assert [d.id for d in state.pending_dialogs] == ["d-1"]
    assert [r.id for r in state.recent_dialogs] == ["d-2"]


def test_recent_dialogs_capped_at_twenty_and_ids_keep_counting() -> None:
    msgs: list[Message] = []
    for i in range(25):
        msgs += [dialog_opening("alert", f"m{i}", wall=T0 + i),
                 dialog_closed(True, wall=T0 + i + 0.5)]
    state = fold_all(msgs, page_state())
    assert len(state.recent_dialogs) == 20
    assert [r.id for r in state.recent_dialogs] == [f"d-{i}" for i in range(6, 26)]
    assert state.recent_dialogs[-1].message == "m24"
    assert state.dialogs_closed_total == 25
    assert state.dialog_seq == 25
    state = fold(state, dialog_opening("alert", "next", wall=T0 + 100)).state
    assert state.pending_dialogs[0].id == "d-26"


def test_bridge_dialog_note_is_a_pending_dialog_via_bridge() -> None:
    state = fold(page_state(), Note("cdpnb.bridgeDialogOpening", {
        "type": "confirm", "message": "bridged", "frameId": MAIN, "requestId": "R1",
        "defaultPrompt": ""}, PS, T0 + 1)).state
    [d] = state.pending_dialogs
    assert (d.id, d.via, d.type, d.message) == ("d-1", "bridge", "confirm", "bridged")
    assert (d.request_id, d.url, d.page_session_id) == ("R1", PAGE_URL, PS)  # url: the frame's
    # a native close event is not about a bridged dialog
    assert fold(state, dialog_closed(True)).state is state


# -- console -------------------------------------------------------------------------------


def test_console_error_is_recorded_and_log_is_not() -> None:
    state = page_state()
    assert fold(state, console_error("just info", level="log")).state is state
    assert fold(state, console_error("careful", level="warning")).state is state
    state = fold(state, console_error("boom", wall=T0 + 3)).state
    [e] = state.console_errors
    assert (e.kind, e.level, e.text, e.url, e.line, e.column, e.session_id, e.at) == (
        "console", "error", "boom", PAGE_URL, 4, 12, PS, T0 + 3)
    assert state.console_errors_total == 1


def test_console_error_text_joins_arguments() -> None:
    state = fold(page_state(), ev("Runtime.consoleAPICalled", {
        "type": "error",
        "args": [{"type": "string", "value": "count"}, {"type": "number", "value": 3},
                 {"type": "object", "description": "Error: x"},
                 {"type": "number", "unserializableValue": "NaN"}],
        "executionContextId": 1, "timestamp": 1.0,
    })).state
    assert state.console_errors[0].text == "count 3 Error: x NaN"


def test_exception_thrown_is_recorded() -> None:
    state = fold(page_state(), ev("Runtime.exceptionThrown", {
        "timestamp": 1.0,
        "exceptionDetails": {
            "exceptionId": 1, "text": "Uncaught", "lineNumber": 2, "columnNumber": 5,
            "url": PAGE_URL,
            "exception": {"type": "object", "subtype": "error", "className": "TypeError",
                          "description": "TypeError: x is not a function"},
        },
    }, CS, T0 + 4)).state
    [e] = state.console_errors
    assert (e.kind, e.level, e.text, e.url, e.line, e.column, e.session_id, e.at) == (
        "exception", "error", "TypeError: x is not a function", PAGE_URL, 2, 5, CS, T0 + 4)


def test_console_errors_capped_at_fifty_oldest_dropped() -> None:
    msgs = [console_error(f"e{i}", wall=T0 + i) for i in range(60)]
    state = fold_all(msgs, page_state())
    assert len(state.console_errors) == 50
    assert [e.text for e in state.console_errors] == [f"e{i}" for i in range(10, 60)]
    assert state.console_errors_total == 60


def test_console_text_is_bounded() -> None:
    state = fold(page_state(), console_error("x" * 100_000)).state
    assert 0 < len(state.console_errors[0].text) <= 2000


# -- execution contexts ----------------------------------------------------------------------


def test_default_contexts_are_keyed_by_session_and_frame() -> None:
    state = fold_all([
        context_created(1, MAIN, PS),
        context_created(2, SRC, PS),
        context_created(1, OOP, CS),           # same id, other session
        context_created(5, MAIN, PS, default=False),  # isolated world: not a default
    ], oopif_state())
    assert state.contexts == {(PS, MAIN): 1, (PS, SRC): 2, (CS, OOP): 1}


def test_context_destroyed_matches_session_and_id() -> None:
    state = fold_all([context_created(1, MAIN, PS), context_created(1, OOP, CS)], oopif_state())
    after = fold(state, ev("Runtime.executionContextDestroyed",
                           {"executionContextId": 1, "executionContextUniqueId": "u1"}, CS)).state
    assert after.contexts == {(PS, MAIN): 1}
    after2 = fold(state, ev("Runtime.executionContextDestroyed", {"executionContextId": 1},
                            PS)).state
    assert after2.contexts == {(CS, OOP): 1}
    unknown = ev("Runtime.executionContextDestroyed", {"executionContextId": 99}, PS)
    assert fold(state, unknown).state is state


def test_context_recreated_replaces_the_old_id() -> None:
    state = fold_all([context_created(1, MAIN, PS), context_created(3, MAIN, PS)], page_state())
    assert state.contexts == {(PS, MAIN): 3}


def test_contexts_cleared_only_for_its_session() -> None:
    state = fold_all([context_created(1, MAIN, PS), context_created(1, OOP, CS)], oopif_state())
    after = fold(state, ev("Runtime.executionContextsCleared", {}, PS)).state
    assert after.contexts == {(CS, OOP): 1}


# -- connection notes ------------------------------------------------------------------------


def busy_state() -> BrowserState:
    return fold_all([
        dialog_opening("alert", "old", wall=T0 + 1),
        dialog_closed(True, wall=T0 + 2),
        console_error("old error", wall=T0 + 3),
        context_created(1, MAIN, PS),
        dialog_opening("confirm", "still open", wall=T0 + 4),
    ], oopif_state())


def test_disconnected_closes_pending_dialogs_as_given_up_by_cdpnb() -> None:
    state = fold(busy_state(), note("cdpnb.disconnected", {"reason": "eof"}, T0 + 10)).state
    assert state.connected is False
    assert state.pending_dialogs == ()
    assert [r.id for r in state.recent_dialogs] == ["d-1", "d-2"]
    last = state.recent_dialogs[-1]
    assert (last.closed_by, last.reason, last.closed_at, last.accepted, last.message) == (
        "cdpnb", "disconnected", T0 + 10, None, "still open")
    assert state.dialogs_closed_total == 2


def test_disconnected_closes_even_a_dialog_we_were_answering_unanswered() -> None:
    state = fold_all([answering("d-2", True), note("cdpnb.disconnected", {}, T0 + 10)],
                     busy_state())
    last = state.recent_dialogs[-1]
    assert (last.closed_by, last.reason, last.accepted) == ("cdpnb", "disconnected", None)


def test_connected_starts_fresh_live_state_but_keeps_history() -> None:
    old = fold(busy_state(), note("cdpnb.disconnected", {}, T0 + 10)).state
    old = fold(old, ev("Page.frameDetached", {}, PS)).state  # leaves a malformed counter
    state = fold(old, note("cdpnb.connected", {}, T0 + 11)).state
    assert state.connected is True
    assert state.sessions == {}
    assert state.frames == {}
    assert state.contexts == {}
    assert state.pending_dialogs == ()
    assert state.page_target_id is None
    assert state.page_session_id is None
    assert state.recent_dialogs == old.recent_dialogs
    assert state.console_errors == old.console_errors
    assert state.dialog_seq == 2
    assert state.console_errors_total == 1
    assert state.counters == old.counters
    # ids keep counting on the new connection
    state = fold_all([*page_setup()[1:], dialog_opening(wall=T0 + 12)], state)
    assert state.pending_dialogs[0].id == "d-3"


def test_connected_without_disconnect_closes_leftover_dialogs_unanswered() -> None:
    state = fold(busy_state(), note("cdpnb.connected", {}, T0 + 11)).state
    assert state.pending_dialogs == ()
    assert (state.recent_dialogs[-1].closed_by, state.recent_dialogs[-1].reason) == (
        "cdpnb", "disconnected")
    assert state.recent_dialogs[-1].closed_at == T0 + 11


# -- robustness -------------------------------------------------------------------------------


def robust_base() -> BrowserState:
    return fold_all([
        context_created(1, MAIN, PS),
        context_created(1, OOP, CS),
        console_error("e"),
        dialog_opening("prompt", "Name?", wall=T0 + 5),
    ], oopif_state())


GOOD_TARGET = {"targetId": "NEW", "type": "iframe", "url": ""}
DEFAULT_AUX = {"isDefault": True, "frameId": MAIN}

MALFORMED: list[tuple[str, Message]] = [
    # missing keys
    ("attached: empty", ev("Target.attachedToTarget", {})),
    ("attached: no targetInfo", ev("Target.attachedToTarget", {"sessionId": "NEWS"})),
    ("attached: no sessionId", ev("Target.attachedToTarget", {"targetInfo": GOOD_TARGET})),
    ("attached: no targetId", ev("Target.attachedToTarget",
                                 {"sessionId": "NEWS", "targetInfo": {"type": "iframe"}})),
    ("detached: empty", ev("Target.detachedFromTarget", {})),
    ("targetInfoChanged: empty", ev("Target.targetInfoChanged", {})),
    ("targetInfoChanged: no targetId", ev("Target.targetInfoChanged", {"targetInfo": {}})),
    ("frameAttached: empty", ev("Page.frameAttached", {})),
    ("frameNavigated: empty", ev("Page.frameNavigated", {})),
    ("frameNavigated: frame without id", ev("Page.frameNavigated", {"frame": {"url": "x"}})),
    ("frameDetached: empty", ev("Page.frameDetached", {})),
    ("navigatedWithinDocument: empty", ev("Page.navigatedWithinDocument", {})),
    ("dialogOpening: empty", ev("Page.javascriptDialogOpening", {})),
    ("dialogOpening: no type", ev("Page.javascriptDialogOpening",
                                  {"message": "m", "frameId": MAIN})),
    ("contextCreated: empty", ev("Runtime.executionContextCreated", {})),
    ("contextCreated: no id", ev("Runtime.executionContextCreated",
                                 {"context": {"auxData": DEFAULT_AUX}})),
    ("contextDestroyed: empty", ev("Runtime.executionContextDestroyed", {})),
    ("consoleAPICalled: no type", ev("Runtime.consoleAPICalled",
                                     {"args": [{"type": "string", "value": "x"}]})),
    ("exceptionThrown: no exceptionDetails", ev("Runtime.exceptionThrown", {"timestamp": 1.0})),
    ("getFrameTree: empty result", Reply(1, "Page.getFrameTree", {}, PS)),
    ("getFrameTree: child without id", Reply(1, "Page.getFrameTree", {"frameTree": {
        "frame": frame(MAIN, "http://x/", "http://x"),
        "childFrames": [{"frame": {"url": "about:blank"}}]}}, PS)),
    ("pageTarget: empty", note("cdpnb.pageTarget", {})),
    ("dialogAnswering: empty", note("cdpnb.dialogAnswering", {})),
    ("dialogAnswering: no accept", note("cdpnb.dialogAnswering", {"dialog_id": "d-1"})),
    ("dialogAnswered: empty", note("cdpnb.dialogAnswered", {})),
    ("bridgeDialogOpening: empty", Note("cdpnb.bridgeDialogOpening", {}, PS)),
    # wrong types
    ("attached: targetInfo a string", ev("Target.attachedToTarget",
                                         {"sessionId": "NEWS", "targetInfo": "iframe"})),
    ("attached: targetInfo a list", ev("Target.attachedToTarget",
                                       {"sessionId": "NEWS", "targetInfo": [GOOD_TARGET]})),
    ("attached: sessionId null", ev("Target.attachedToTarget",
                                    {"sessionId": None, "targetInfo": GOOD_TARGET})),
    ("attached: sessionId a list", ev("Target.attachedToTarget",
                                      {"sessionId": ["NEWS"], "targetInfo": GOOD_TARGET})),
    ("detached: sessionId null", ev("Target.detachedFromTarget", {"sessionId": None})),
    ("targetInfoChanged: targetInfo a string", ev("Target.targetInfoChanged",
                                                  {"targetInfo": OOP})),
    ("frameAttached: frameId null", ev("Page.frameAttached",
                                       {"frameId": None, "parentFrameId": MAIN})),
    ("frameAttached: frameId a dict", ev("Page.frameAttached",
                                         {"frameId": {"id": "X"}, "parentFrameId": MAIN})),
    ("frameNavigated: frame a string", ev("Page.frameNavigated", {"frame": MAIN})),
    ("frameNavigated: frame id null", ev("Page.frameNavigated",
                                         {"frame": {"id": None, "url": "http://x/"}})),
    ("frameNavigated: name a dict", ev("Page.frameNavigated",
                                       {"frame": {"id": MAIN, "url": "x", "name": {"a": 1}}})),
    ("frameDetached: frameId null", ev("Page.frameDetached", {"frameId": None})),
    ("dialogOpening: unknown type", ev("Page.javascriptDialogOpening",
                                       {"type": "popup", "message": "m"})),
    ("dialogOpening: type a number", ev("Page.javascriptDialogOpening",
                                        {"type": 5, "message": "m"})),
    ("dialogOpening: hasBrowserHandler a dict", ev("Page.javascriptDialogOpening", {
        "type": "alert", "message": "m", "hasBrowserHandler": {"x": 1}})),
    ("contextCreated: context a string", ev("Runtime.executionContextCreated",
                                            {"context": "ctx"})),
    ("contextCreated: id a word", ev("Runtime.executionContextCreated",
                                     {"context": {"id": "seven", "auxData": DEFAULT_AUX}})),
    ("contextCreated: id infinite", ev("Runtime.executionContextCreated",
                                       {"context": {"id": math.inf, "auxData": DEFAULT_AUX}})),
    ("contextDestroyed: id a word", ev("Runtime.executionContextDestroyed",
                                       {"executionContextId": "one"})),
    ("consoleAPICalled: args a number", ev("Runtime.consoleAPICalled",
                                           {"type": "error", "args": 5})),
    ("consoleAPICalled: stackTrace a list", ev("Runtime.consoleAPICalled",
                                               {"type": "error", "args": [],
                                                "stackTrace": [{"url": "u"}]})),
    ("consoleAPICalled: lineNumber a word", ev("Runtime.consoleAPICalled", {
        "type": "error", "args": [],
        "stackTrace": {"callFrames": [{"url": "u", "lineNumber": "four"}]}})),
    ("exceptionThrown: details a string", ev("Runtime.exceptionThrown",
                                             {"exceptionDetails": "boom"})),
    ("exceptionThrown: lineNumber a word", ev("Runtime.exceptionThrown",
                                              {"exceptionDetails": {"text": "x",
                                                                    "lineNumber": "two"}})),
    ("getFrameTree: frameTree a list", Reply(1, "Page.getFrameTree", {"frameTree": []}, PS)),
    ("dialogAnswering: closed_by unknown", note("cdpnb.dialogAnswering", {
        "dialog_id": "d-1", "accept": True, "closed_by": "martians"})),
]


@pytest.mark.parametrize(("label", "message"), MALFORMED, ids=[m[0] for m in MALFORMED])
def test_malformed_known_message_changes_nothing_and_is_counted(
    label: str, message: Message
) -> None:
    base = robust_base()
    snapshot_before = copy.deepcopy(base)
    after = fold(base, message).state
    assert base == snapshot_before  # the input state is untouched
    assert after.counters == {f"malformed:{message.method}": 1}, label
    assert after.evolve(counters={}) == base, label
    # counting accumulates
    again = fold(after, message).state
    assert again.counters == {f"malformed:{message.method}": 2}


def test_malformed_event_from_the_wire_does_not_escape_fold() -> None:
    # 1e400 is valid JSON; Python's json reads it as float('inf').
    conn = CDPConnection()
    got = conn.receive('{"method":"Runtime.executionContextCreated","params":{"context":'
                       '{"id":1e400,"auxData":{"isDefault":true,"frameId":"MAIN"}}}}')
    assert isinstance(got, Event)
    state = fold(page_state(), got).state
    assert state.contexts == {}
    assert state.counters == {"malformed:Runtime.executionContextCreated": 1}


@pytest.mark.parametrize("message", [
    ev("Page.loadEventFired", {"timestamp": 1.0}),
    ev("Network.requestWillBeSent", {"requestId": "1"}),
    ev("Target.targetCreated", {"targetInfo": GOOD_TARGET}),
    note("cdpnb.somethingNew", {"x": 1}),
    Reply(1, "Runtime.evaluate", {"result": {}}, PS),
    Reply(2, "Page.handleJavaScriptDialog", {}, PS),
    ErrorReply(3, "Page.getFrameTree", -32000, "no"),
    Command(4, "Page.getFrameTree", {}, PS),
    # a Reply-only method arriving as an event, and an event method arriving as a note
    ev("Page.getFrameTree", {"frameTree": {}}),
    note("Page.frameDetached", {"frameId": MAIN}),
])
def test_unknown_method_returns_the_identical_state(message: Message) -> None:
    state = robust_base()
    assert fold(state, message).state is state


def full_sequence() -> list[Message]:
    return [
        *page_setup(),
        *oopif_steps(),
        context_created(1, MAIN, PS),
        context_created(2, OOP, CS),
        console_error("boom", wall=T0 + 2),
        dialog_opening("prompt", "Name?", wall=T0 + 3),
        answering("d-1", True, "hi", wall=T0 + 3.1),
        dialog_closed(True, "hi", wall=T0 + 3.2),
        handle_reply(True, wall=T0 + 3.3),
        answered("d-1", True, wall=T0 + 3.4),
        ev("Page.frameDetached", {"frameId": OOP, "reason": "remove"}, PS, T0 + 4),
        detached(CS, PS, T0 + 4.1),
        ev("Page.frameDetached", {}, PS, T0 + 4.2),
        note("cdpnb.disconnected", {}, T0 + 5),
    ]


def test_fold_is_pure() -> None:
    msgs = full_sequence()
    msgs_copy = copy.deepcopy(msgs)
    first = fold_all(msgs)
    second = fold_all(msgs)
    assert first == second
    assert first.model_dump() == second.model_dump()
    assert msgs == msgs_copy  # messages are not mutated

    # every intermediate input state is left unchanged by the fold that consumes it
    state = BrowserState()
    for msg in msgs:
        before = copy.deepcopy(state)
        after = fold(state, msg).state
        assert state == before
        assert fold(before, msg).state == after
        state = after
    assert state == first


def test_fold_all_starts_from_given_state() -> None:
    msgs = full_sequence()
    head, tail = msgs[:7], msgs[7:]
    assert fold_all(tail, fold_all(head)) == fold_all(msgs)
    assert fold_all([]) == BrowserState()


def test_fold_rejects_non_messages() -> None:
    with pytest.raises(TypeError):
        fold(BrowserState(), {"method": "Page.frameDetached"})  # type: ignore[arg-type]


# -- property test ------------------------------------------------------------------------------

IDS = st.sampled_from([MAIN, SRC, OOP, "F2", "", "d-1", "d-2", PS, CS])
WEIRD = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-3, max_value=3)
    | st.sampled_from([math.inf, -math.inf, math.nan, 1.5, 10**30, 2**63])
    | st.text(max_size=6)
    | IDS
    | st.sampled_from(["alert", "confirm", "prompt", "beforeunload", "iframe", "page", "swap",
                       "remove", "error", "log", "assert", "agent", "remote", "watchdog"])
)
ANY_JSON = st.recursive(
    WEIRD,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner,
                                                                max_size=3),
    max_leaves=8,
)


def loose(**fields: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """A dict with any subset of ``fields`` (each sometimes wrong-typed), or junk."""
    return st.one_of(
        st.fixed_dictionaries({}, optional={k: v | ANY_JSON for k, v in fields.items()}),
        ANY_JSON,
    )


FRAME = loose(id=IDS, parentId=IDS, url=st.text(max_size=6), securityOrigin=st.text(max_size=6),
              name=st.text(max_size=3), urlFragment=st.text(max_size=3))
TARGET_INFO = loose(targetId=IDS, type=st.sampled_from(["iframe", "page", "worker"]),
                    url=st.text(max_size=5))
CONTEXT = loose(id=st.integers(min_value=0, max_value=3),
                auxData=loose(isDefault=st.booleans(), frameId=IDS))
CALL_FRAMES = st.lists(loose(url=st.text(max_size=3), lineNumber=st.integers(0, 5),
                             columnNumber=st.integers(0, 5)), max_size=2)
ARGS = st.lists(loose(type=st.text(max_size=4), value=ANY_JSON, description=ANY_JSON,
                      unserializableValue=ANY_JSON), max_size=3)
FRAME_TREE = st.recursive(
    st.fixed_dictionaries({"frame": FRAME}),
    lambda inner: st.fixed_dictionaries({"frame": FRAME},
                                        optional={"childFrames": st.lists(inner, max_size=3)}),
    max_leaves=6,
)

BIDI_CONTEXT = st.recursive(
    loose(context=IDS, parent=IDS | st.none(), url=st.text(max_size=5),
          originalOpener=IDS | st.none()),
    lambda inner: st.fixed_dictionaries({"context": IDS}, optional={
        "children": st.lists(inner, max_size=3), "parent": IDS | st.none()}),
    max_leaves=6,
)

EVENT_PARAMS: dict[str, st.SearchStrategy[Any]] = {
    "Target.attachedToTarget": loose(sessionId=IDS, targetInfo=TARGET_INFO,
                                     waitingForDebugger=st.booleans()),
    "Target.detachedFromTarget": loose(sessionId=IDS, targetId=IDS),
    "Target.targetInfoChanged": loose(targetInfo=TARGET_INFO),
    "Inspector.targetCrashed": loose(),
    "Inspector.targetReloadedAfterCrash": loose(),
    "Page.frameAttached": loose(frameId=IDS, parentFrameId=IDS),
    "Page.frameNavigated": loose(frame=FRAME, type=st.text(max_size=4)),
    "Page.frameDetached": loose(frameId=IDS, reason=st.sampled_from(["swap", "remove"])),
    "Page.navigatedWithinDocument": loose(frameId=IDS, url=st.text(max_size=5)),
    "Page.frameRequestedNavigation": loose(frameId=IDS, url=st.text(max_size=3),
                                           disposition=st.sampled_from(
                                               ["currentTab", "newTab", "download"])),
    "Page.frameStartedNavigating": loose(frameId=IDS, url=st.text(max_size=3),
                                         navigationType=st.sampled_from(
                                             ["differentDocument", "sameDocument"])),
    "Page.javascriptDialogOpening": loose(
        type=st.sampled_from(["alert", "confirm", "prompt", "beforeunload"]),
        message=st.text(max_size=5), defaultPrompt=st.text(max_size=3), frameId=IDS,
        url=st.text(max_size=3), hasBrowserHandler=st.booleans()),
    "Page.javascriptDialogClosed": loose(frameId=IDS, result=st.booleans(),
                                         userInput=st.text(max_size=3)),
    "Runtime.executionContextCreated": loose(context=CONTEXT),
    "Runtime.executionContextDestroyed": loose(executionContextId=st.integers(0, 3)),
    "Runtime.executionContextsCleared": loose(),
    "Runtime.consoleAPICalled": loose(type=st.sampled_from(["error", "log", "assert"]),
                                      args=ARGS,
                                      stackTrace=loose(callFrames=CALL_FRAMES)),
    "Runtime.exceptionThrown": loose(exceptionDetails=loose(
        text=st.text(max_size=3), url=st.text(max_size=3), lineNumber=st.integers(0, 5),
        columnNumber=st.integers(0, 5), exception=loose(description=st.text(max_size=4)))),
    "Log.entryAdded": loose(entry=loose(
        source=st.sampled_from(["network", "security", "other"]),
        level=st.sampled_from(["error", "warning", "info"]), text=st.text(max_size=4),
        url=st.text(max_size=3), lineNumber=st.integers(0, 5),
        stackTrace=loose(callFrames=CALL_FRAMES))),
    # WebDriver BiDi: contexts are frame ids, the top context of a page is its session.
    "browsingContext.contextCreated": BIDI_CONTEXT,
    "browsingContext.contextDestroyed": loose(context=IDS),
    "browsingContext.navigationStarted": loose(context=IDS, navigation=IDS,
                                               url=st.text(max_size=4)),
    "browsingContext.navigationCommitted": loose(context=IDS, url=st.text(max_size=6)),
    "browsingContext.fragmentNavigated": loose(context=IDS, url=st.text(max_size=6)),
    "browsingContext.historyUpdated": loose(context=IDS, url=st.text(max_size=6)),
    "browsingContext.domContentLoaded": loose(context=IDS, url=st.text(max_size=6)),
    "browsingContext.load": loose(context=IDS, url=st.text(max_size=6)),
    "browsingContext.userPromptOpened": loose(
        context=IDS, type=st.sampled_from(["alert", "confirm", "prompt", "beforeunload"]),
        handler=st.sampled_from(["accept", "dismiss", "ignore"]), message=st.text(max_size=4),
        defaultValue=st.text(max_size=3)),
    "browsingContext.userPromptClosed": loose(context=IDS, accepted=st.booleans(),
                                              userText=st.text(max_size=3)),
    "script.realmCreated": loose(realm=IDS, context=IDS, origin=st.text(max_size=5),
                                 type=st.sampled_from(["window", "worker"]),
                                 sandbox=st.text(max_size=2)),
    "script.realmDestroyed": loose(realm=IDS),
    "log.entryAdded": loose(level=st.sampled_from(["error", "info"]),
                            type=st.sampled_from(["console", "javascript"]),
                            text=st.text(max_size=4), source=loose(context=IDS),
                            stackTrace=loose(callFrames=CALL_FRAMES)),
}
NOTE_PARAMS: dict[str, st.SearchStrategy[Any]] = {
    "cdpnb.connected": loose(generation=st.integers(min_value=0, max_value=3)),
    "cdpnb.disconnected": loose(generation=st.integers(min_value=0, max_value=3),
                                reason=st.text(max_size=3)),
    "cdpnb.connectionReady": loose(generation=st.integers(min_value=0, max_value=3)),
    "cdpnb.reconnectGaveUp": loose(reason=st.text(max_size=3)),
    "cdpnb.evaluated": loose(ms=st.integers(min_value=-1, max_value=20_000)),
    "cdpnb.commandsOrphaned": loose(ids=st.lists(st.integers(min_value=1, max_value=5),
                                                 max_size=3)),
    **dict.fromkeys(OCCURRENCES, loose()),
    "cdpnb.pageTarget": loose(target_id=IDS, session_id=IDS),
    "cdpnb.pageReplacing": loose(session_id=IDS),
    "cdpnb.pageClosing": loose(session_id=IDS, closing=st.booleans()),
    "cdpnb.directTarget": loose(reason=st.text(max_size=3)),
    "cdpnb.bridgeEnabled": loose(reason=st.text(max_size=3)),
    "cdpnb.dialogAnswering": loose(
        dialog_id=st.sampled_from(["d-1", "d-2", "d-3"]), accept=st.booleans(),
        prompt_text=st.none() | st.text(max_size=3),
        closed_by=st.sampled_from(["agent", "auto_policy", "watchdog", "remote", "cdpnb"]),
        reason=st.sampled_from(["released", "navigation"])),
    "cdpnb.dialogAnswered": loose(dialog_id=st.sampled_from(["d-1", "d-2", "d-3"]),
                                  ok=st.booleans(),
                                  error=st.sampled_from(["No dialog is showing",
                                                         "Not attached to an active page",
                                                         "other"])),
    "cdpnb.bridgeDialogOpening": loose(
        type=st.sampled_from(["alert", "confirm", "prompt"]), message=st.text(max_size=5),
        defaultPrompt=st.text(max_size=3), frameId=IDS, requestId=st.text(max_size=3)),
    "cdpnb.bridgeRequestRefused": loose(requestId=st.text(max_size=3), frameId=IDS,
                                        reason=st.text(max_size=3)),
    "cdpnb.dialogsNonBlocking": loose(engine=st.sampled_from(["Lightpanda/1.0", ""]),
                                      source=st.text(max_size=3)),
    "cdpnb.bidiSession": loose(session_id=st.text(max_size=3), popups=st.booleans(),
                               browser=st.sampled_from(["Firefox/153.7.0esr",
                                                        "Chrome/156.0", ""])),
    "cdpnb.pageAbandoned": loose(context=IDS),
    "cdpnb.pageNavigating": loose(session_id=IDS),
    "cdpnb.classicSession": loose(session_id=st.text(max_size=3), popups=st.booleans(),
                                  browser=st.sampled_from(["MiniBrowser/2.50.6", ""])),
    "cdpnb.classicWindowOpened": loose(handle=IDS, opener=IDS),
}


def test_property_strategies_cover_every_rule() -> None:
    assert set(EVENT_PARAMS) == set(EVENT_RULES)
    assert set(NOTE_PARAMS) == set(NOTE_RULES)
    assert set(REPLY_RESULTS) == set(REPLY_RULES)


REPLY_RESULTS: dict[str, st.SearchStrategy[Any]] = {
    "Page.getFrameTree": st.fixed_dictionaries({}, optional={
        "frameTree": FRAME_TREE | ANY_JSON}),
    "Fetch.fulfillRequest": loose(),
    "browsingContext.getTree": st.fixed_dictionaries({}, optional={
        "contexts": st.lists(BIDI_CONTEXT, max_size=3) | ANY_JSON}),
    "LP.handleJavaScriptDialog": loose(),
    "network.provideResponse": loose(),
    # WebDriver classic: the replies of cdpnb's own commands (cdpnb.state.classic).
    "classic.frameTree": st.fixed_dictionaries({}, optional={
        "contexts": st.lists(BIDI_CONTEXT, max_size=2) | ANY_JSON}),
    "classic.getAlertText": loose(value=st.none() | st.text(max_size=3), window=IDS),
    "classic.answerAlert": loose(value=st.none(), message=st.text(max_size=3),
                                 prompt=st.none() | st.booleans()),
    "classic.getWindowHandles": loose(value=st.lists(IDS, max_size=3) | ANY_JSON),
}

SESSION_IDS = st.sampled_from([None, PS, CS, "F2", "GHOST"])
WALLS = st.floats(min_value=0, max_value=2e9, allow_nan=False)


@st.composite
def messages(draw: st.DrawFn) -> Message:
    kind = draw(st.sampled_from(["event", "event", "event", "note", "reply"]))
    sid = draw(SESSION_IDS)
    wall = draw(WALLS)
    if kind == "event":
        method = draw(st.sampled_from(sorted(EVENT_PARAMS)))
        params = draw(EVENT_PARAMS[method])
        return Event(method, params if isinstance(params, dict) else {"x": params}, sid, wall)
    if kind == "note":
        method = draw(st.sampled_from(sorted(NOTE_PARAMS)))
        params = draw(NOTE_PARAMS[method])
        return Note(method, params if isinstance(params, dict) else {"x": params}, sid, wall)
    method = draw(st.sampled_from(sorted(REPLY_RESULTS)))
    params = draw(st.fixed_dictionaries({}, optional={
        "requestId": IDS, "window": IDS, "accept": st.booleans() | ANY_JSON,
        "text": st.none() | st.text(max_size=3)}))
    return Reply(1, method, draw(REPLY_RESULTS[method]), sid, params, wall)


@settings(max_examples=600, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.booleans(), st.lists(messages(), max_size=25))
def test_random_known_messages_never_raise_out_of_fold(bidi: bool, msgs: list[Message]) -> None:
    # Over BiDi the supervisor's page is the context MAIN; over CDP the session PS.
    state = fold_all(bidi_page_setup() if bidi else page_setup())
    for msg in msgs:
        before = state
        state = fold(state, msg).state
        assert isinstance(state, BrowserState)
        assert fold(before, msg).state == state  # same input, same output
    snap = snapshot_of(state)
    json.dumps(snap.to_dict())
    full = build_frame_tree(state, None, None)
    assert len(snap.frame_tree) <= len(full)
    assert len(state.recent_dialogs) <= 20
    assert len(state.console_errors) <= 50


def test_a_crashed_session_is_remembered_until_reloaded_or_reconnected() -> None:
    state = BrowserState()
    crashed = fold(state, Event("Inspector.targetCrashed", {}, "S1", 0, 0)).state
    assert crashed.crashed_sessions == frozenset({"S1"})
    assert fold(crashed, Event("Inspector.targetCrashed", {}, None, 0, 0)).state == crashed
    back = fold(crashed, Event("Inspector.targetReloadedAfterCrash", {}, "S1", 0, 0)).state
    assert back.crashed_sessions == frozenset()
    reconnected = fold(crashed, Note("cdpnb.connected", {}, None, 0, 0)).state
    assert reconnected.crashed_sessions == frozenset()
    attached = fold(crashed, Event("Target.attachedToTarget", {
        "sessionId": "S1", "targetInfo": {"targetId": "T1", "type": "iframe"}}, None, 0, 0)).state
    detached = fold(attached, Event("Target.detachedFromTarget", {"sessionId": "S1"},
                                    None, 0, 0)).state
    assert detached.crashed_sessions == frozenset()


def test_a_page_keeps_the_url_of_its_top_frame_current() -> None:
    """``sup.pages[i].url`` and the snapshot's pages are the page's URL now, not at attach:
    a new document, and a same-document navigation, of the top frame; a child frame's
    navigation leaves it alone."""
    state = page_state()
    assert state.pages[PS].url == ""  # (attached before the tree said where it is)
    moved = fold(state, ev("Page.frameNavigated", {
        "frame": frame(MAIN, "http://127.0.0.1:1/next", PAGE_ORIGIN), "type": "Navigation"},
        PS, T0 + 1)).state
    assert moved.pages[PS].url == "http://127.0.0.1:1/next"
    hashed = fold(moved, ev("Page.navigatedWithinDocument", {
        "frameId": MAIN, "url": "http://127.0.0.1:1/next#part"}, PS, T0 + 2)).state
    assert hashed.pages[PS].url == "http://127.0.0.1:1/next#part"
    child = fold(hashed, ev("Page.frameNavigated", {
        "frame": frame(SRC, "http://127.0.0.1:1/inner", PAGE_ORIGIN, MAIN)}, PS, T0 + 3)).state
    assert child.pages[PS].url == "http://127.0.0.1:1/next#part"
    assert snapshot_of(child).pages[0].url == "http://127.0.0.1:1/next#part"


def test_a_bidi_prompt_closed_before_it_was_announced_is_still_recorded() -> None:
    """Firefox sends ``userPromptClosed`` alone for a prompt whose frame navigated ~10 ms
    after the call: a record the browser closed, never a silent drop; a second close of
    the same frame soon after (late news) is not another dialog."""
    state = fold_all(bidi_page_setup())
    closed = ev("browsingContext.userPromptClosed",
                {"context": OOP, "accepted": False, "type": "prompt"}, None, T0 + 1.0)
    state, changes = fold(state, closed)
    [record] = state.recent_dialogs
    assert (record.type, record.frame_id, record.closed_by, record.reason, record.accepted,
            record.url) == ("prompt", OOP, "browser", "unannounced", False, CHILD_URL)
    assert [type(c).__name__ for c in changes] == ["DialogClosed"]
    assert state.pending_dialogs == () and state.dialog_seq == 1
    again = ev("browsingContext.userPromptClosed",
               {"context": OOP, "accepted": True, "type": "prompt"}, None, T0 + 1.2)
    assert fold(state, again).state is state
    elsewhere = ev("browsingContext.userPromptClosed",
                   {"context": "not-ours", "accepted": True, "type": "alert"}, None, T0 + 1.3)
    assert fold(state, elsewhere).state is state


def test_chromium_behind_bidi_follows_chromiums_dialog_model() -> None:
    """The BiDi session's browser names the engine: on Chrome, overlapping prompts, a
    frame removed over its prompt and an abandoned page follow Chromium's measured
    model, as over CDP; on Firefox they do not (one prompt per tab, no crash)."""
    def opened(cid: str, at: float) -> Event:
        return ev("browsingContext.userPromptOpened", {
            "context": cid, "type": "prompt", "message": cid, "handler": "ignore"}, None, at)

    def setup(browser: str) -> BrowserState:
        return fold_all([*bidi_page_setup(), note("cdpnb.bidiSession", {
            "session_id": "s", "browser": browser, "popups": True}, T0 + 0.03)])

    chrome = fold_all([opened(MAIN, T0 + 1), opened(OOP, T0 + 1.02)],
                      setup("Chrome/156.0.8078.108"))
    assert chrome.engine == "Chrome/156.0.8078.108"
    assert [(d.id, d.unanswerable, d.has_browser_handler)
            for d in chrome.pending_dialogs] == [("d-1", "superseded", True),
                                                 ("d-2", "orphaned", True)]
    firefox = fold_all([opened(MAIN, T0 + 1), opened(OOP, T0 + 1.02)],
                       setup("Firefox/153.7.0esr"))
    assert [(d.unanswerable, d.has_browser_handler) for d in firefox.pending_dialogs] == [
        (None, None), (None, None)]
    # a frame removed over its prompt: a hazard on Chrome only
    gone = ev("browsingContext.contextDestroyed", {"context": OOP}, None, T0 + 2)
    for browser, hazard in (("Chrome/156.0", True), ("Firefox/153.7.0esr", False)):
        state = fold_all([opened(OOP, T0 + 1), gone], setup(browser))
        [record] = state.recent_dialogs
        assert (record.closed_by, record.reason) == ("browser", "frame_removed")
        assert (state.pages[MAIN].hazard is not None) == hazard
    # an abandoned page leaves the state as a replaced one
    state = fold_all([opened(MAIN, T0 + 1),
                      note("cdpnb.pageReplacing", {"session_id": MAIN, "reason": "r"},
                           T0 + 2),
                      note("cdpnb.pageAbandoned", {"context": MAIN}, T0 + 2.1)],
                     setup("Chrome/156.0"))
    assert state.pages == {} and state.page_session_id is None and state.page_gone is None
    assert [(r.closed_by, r.reason) for r in state.recent_dialogs] == [
        ("cdpnb", "page_replaced")]


def test_evolve_gives_what_model_copy_gives_and_refuses_a_name_that_is_no_field() -> None:
    """Reducers copy with ``evolve`` (a dict copy and four slots, not pydantic's
    ``model_copy``): the copy must be the same model by every public measure, the
    original untouched, and a misspelt field an error rather than a stray attribute."""
    from cdpnb.state.models import DialogAnswer, FrameInfo, PendingDialog

    state = page_state()
    assert state.frames and state.pages
    changes: dict[str, Any] = {"dialog_seq": 7, "counters": {"x": 1}, "page_gone": "closed"}
    mine, theirs = state.evolve(**changes), state.model_copy(update=changes)
    assert mine == theirs and type(mine) is BrowserState
    assert mine.model_dump() == theirs.model_dump()
    assert mine.model_fields_set == theirs.model_fields_set
    assert BrowserState.model_validate(mine.model_dump()) == mine
    assert (state.dialog_seq, state.page_gone) == (0, None)  # the original is not changed
    assert mine.__pydantic_extra__ is None and mine.__pydantic_private__ is None
    assert copy.deepcopy(mine) == mine and hash(FrameInfo(frame_id="F").evolve(url="u"))
    with pytest.raises(Exception, match="frozen"):
        mine.dialog_seq = 8  # type: ignore[misc]
    dialog = PendingDialog(id="d1", type="prompt", message="m", opened_at=T0)
    answered = dialog.evolve(answering=DialogAnswer(accept=True, prompt_text="p"))
    assert answered.answering == DialogAnswer(accept=True, prompt_text="p")
    assert dialog.answering is None and answered.id == "d1"
    with pytest.raises(TypeError, match="BrowserState has no field dialog_sequence"):
        state.evolve(dialog_sequence=1)
    with pytest.raises(TypeError, match="FrameInfo has no field colour, size"):
        FrameInfo(frame_id="F").evolve(size=1, colour="red")
