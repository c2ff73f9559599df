"""Page reducer: which page targets are supervised, who opened them, how they end.

The supervisor's own page comes from its explicit attach (``cdpnb.pageTarget``). The
pages it opens come from the browser-level auto-attach the supervisor turns on:
measured on Chromium 156, a ``window.open`` popup or a link with ``target=_blank``
(``noopener`` included) is announced on the browser connection as a ``page`` target
with ``openerId`` (and ``openerFrameId``), waiting for the debugger, while the page
session's own auto-attach never reports it. A page whose opener is supervised is
supervised too, recursively; any other page (another client's, the browser's first
tab, a second session to one of ours) is left alone, and the supervisor detaches.

A page ends when its session detaches: closed by someone (``closed``), closed as
``close_page()`` asked (``requested``, announced by a ``cdpnb.pageClosing`` note), or
replaced by cdpnb (``replaced``, announced by a ``cdpnb.pageReplacing`` note). Its
dialogs end with it and are never answered.
"""

from __future__ import annotations

from cdpnb.protocol import ErrorReply, Event, Note
from cdpnb.state.changes import (
    BridgeEnabled,
    CapabilityMissing,
    Change,
    PageClosed,
    PageOpened,
)
from cdpnb.state.dialogs import close_dialogs_of, closed_with_page
from cdpnb.state.frames import detached_from_target, ident, target_crashed
from cdpnb.state.models import BrowserState, PageInfo, SessionInfo

__all__ = ["CLOSED_ON_REQUEST", "METHOD_NOT_FOUND", "supervised_target_ids"]

Out = list[Change]

#: JSON-RPC's "method not found": the endpoint lacks that domain or command.
METHOD_NOT_FOUND = -32601
#: ``page_gone`` once the supervisor's own page was closed by ``close_page()``.
CLOSED_ON_REQUEST = "closed by close_page()"


def supervised_target_ids(state: BrowserState) -> set[str]:
    return {p.target_id for p in state.pages.values()}


def _opened(state: BrowserState, page: PageInfo, out: Out) -> BrowserState:
    out.append(PageOpened(page))
    return state.evolve(pages={**state.pages, page.session_id: page})


def page_target(state: BrowserState, msg: Note, out: Out) -> BrowserState:
    """``cdpnb.pageTarget``: the page target this supervisor created and owns."""
    tid = ident(msg.params["target_id"], "target_id")
    sid = ident(msg.params["session_id"], "session_id")
    session = SessionInfo(session_id=sid, target_id=tid, type="page", parent_session_id=None)
    state = state.evolve(page_target_id=tid, page_session_id=sid, page_gone=None,
                         sessions={**state.sessions, sid: session})
    return _opened(state, PageInfo(session_id=sid, target_id=tid, main=True), out)


def page_attached(state: BrowserState, msg: Event, out: Out) -> BrowserState:
    """A root-level ``Target.attachedToTarget`` for a page: supervised when a
    supervised page (or one of its frames) opened it. Sessions are the frame
    reducer's; this only decides supervision."""
    if msg.session_id is not None:
        return state
    info = msg.params["targetInfo"]
    if info.get("type") != "page":
        return state
    sid = ident(msg.params["sessionId"], "sessionId")
    tid = ident(info["targetId"], "targetInfo.targetId")
    opener = info.get("openerId")
    opener_frame = info.get("openerFrameId")
    ours = supervised_target_ids(state)
    if sid in state.pages or tid in ours:
        return state  # a second session to a page we have: not a new page
    if opener not in ours and opener_frame not in state.frames:
        return state
    page = PageInfo(session_id=sid, target_id=tid,
                    opener_target_id=str(opener) if opener else None,
                    opener_frame_id=str(opener_frame) if opener_frame else None,
                    url=str(info.get("url", "")))
    return _opened(state, page, out)


def page_detached(state: BrowserState, msg: Event, out: Out) -> BrowserState:
    """``Target.detachedFromTarget``: a supervised page ends with its session (its
    dialogs first, by page; then the frame reducer drops sessions and frames)."""
    sid = ident(msg.params["sessionId"], "sessionId")
    page = state.pages.get(sid)
    if page is not None:
        reason = "replaced" if page.replacing else "requested" if page.closing else "closed"
        doomed = [d for d in state.pending_dialogs if d.page_session_id == sid]
        state = close_dialogs_of(state, doomed, msg.wall,
                                 "cdpnb" if page.replacing else "browser",
                                 "page_replaced" if page.replacing else "page_closed", out)
        if not page.replacing:
            state = closed_with_page(state, sid, msg.wall, out)
        pages = {k: v for k, v in state.pages.items() if k != sid}
        state = state.evolve(pages=pages)
        if page.main:
            gone = (None if page.replacing else CLOSED_ON_REQUEST if page.closing
                    else "the page target was closed (not by cdpnb)")
            state = state.evolve(page_target_id=None, page_session_id=None, page_gone=gone)
        out.append(PageClosed(page, reason))
    return detached_from_target(state, msg, out)


def page_crashed(state: BrowserState, msg: Event, out: Out) -> BrowserState:
    """``Inspector.targetCrashed``: the renderer went; dialogs open in its frames with it."""
    if msg.session_id is None:
        return state
    frames = {f.frame_id for f in state.frames.values() if f.session_id == msg.session_id}
    doomed = [d for d in state.pending_dialogs
              if d.frame_id in frames or (d.session_id == msg.session_id and d.via == "bridge")]
    state = close_dialogs_of(state, doomed, msg.wall, "browser", "crashed", out)
    return target_crashed(state, msg, out)


def page_replacing(state: BrowserState, msg: Note, out: Out) -> BrowserState:
    """``cdpnb.pageReplacing``: cdpnb is about to close this page for a fresh one."""
    sid = str(msg.params["session_id"])
    page = state.pages.get(sid)
    if page is None:
        return state
    return state.evolve(pages={**state.pages, sid: page.evolve(replacing=True)})


def page_closing(state: BrowserState, msg: Note, out: Out) -> BrowserState:
    """``cdpnb.pageClosing {session_id, closing}``: ``close_page()`` asked the browser to
    close this page (``closing`` true), or its request failed (false). The page's end is
    then the close asked for (``PageClosed`` reason ``requested``)."""
    sid = str(msg.params["session_id"])
    page = state.pages.get(sid)
    closing = bool(msg.params.get("closing", True))
    if page is None or page.closing == closing:
        return state
    return state.evolve(pages={**state.pages, sid: page.evolve(closing=closing)})


def direct_target(state: BrowserState, msg: Note, out: Out) -> BrowserState:
    """``cdpnb.directTarget``: the endpoint is one target (Node): no pages of its own."""
    return state.evolve(direct=True)


def bridge_enabled(state: BrowserState, msg: Note, out: Out) -> BrowserState:
    if state.bridge_enabled:
        return state
    out.append(BridgeEnabled(str(msg.params.get("reason", ""))))
    return state.evolve(bridge_enabled=True)


def method_missing(state: BrowserState, msg: ErrorReply, out: Out) -> BrowserState:
    """An error reply: -32601 means the endpoint does not have that command."""
    if msg.code != METHOD_NOT_FOUND or msg.method in state.unsupported:
        return state
    error = f"{msg.code} {msg.message}"
    out.append(CapabilityMissing(msg.method, error))
    return state.evolve(unsupported={**state.unsupported, msg.method: error})

