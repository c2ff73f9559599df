"""Frame and target reducers: one frame table stitched across OOPIF sessions.

The page session reports in-process frames; each OOPIF is a child session whose
target id equals the frame id of the iframe it renders. A frame is owned by the
session that reports it; ``is_oopif`` marks the root frame of a child session.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from cdpnb.protocol import Event, Reply
from cdpnb.state.changes import (
    Change,
    FrameAdded,
    FrameNavigated,
    FrameRemoved,
    FrameSwapped,
    FrameSwapReported,
    SessionAttached,
    SessionDetached,
)
from cdpnb.state.dialogs import dialogs_gone_with_frames, page_session_of
from cdpnb.state.models import BrowserState, FrameInfo, SessionInfo

Out = list[Change]


def ident(value: Any, what: str) -> str:
    """A CDP id from the wire: a non-empty string, or ValueError (counted as malformed)."""
    if not isinstance(value, str) or not value:
        raise ValueError(f"{what} must be a non-empty string, got {value!r}")
    return value


def _frame_url(frame: Mapping[str, Any]) -> str:
    return str(frame.get("url", "")) + str(frame.get("urlFragment", ""))


def _no_loop(frames: Mapping[str, FrameInfo], fid: str, parent_id: str | None) -> None:
    """ValueError when ``parent_id`` is ``fid`` or one of its descendants: a frame in a
    parent loop is unreachable from the top frame, so every tree would silently lose it."""
    seen: set[str] = set()
    current = parent_id
    while current is not None and current not in seen:
        if current == fid:
            raise ValueError(f"frame {fid} would be its own ancestor (parent {parent_id})")
        seen.add(current)
        parent = frames.get(current)
        current = parent.parent_frame_id if parent is not None else None


def _is_oopif_root(state: BrowserState, session_id: str | None, frame_id: str) -> bool:
    session = state.sessions.get(session_id) if session_id else None
    return session is not None and session.type == "iframe" and session.target_id == frame_id


def _upsert(state: BrowserState, frames: dict[str, FrameInfo], session_id: str | None,
            frame: Mapping[str, Any]) -> str | None:
    """Put ``frame`` (a CDP Frame) into ``frames``; its id, or None when it was left out."""
    fid = ident(frame["id"], "frame.id")
    old = frames.get(fid)
    oopif = _is_oopif_root(state, session_id, fid)
    parent = frame.get("parentId")
    if old is not None and old.is_oopif and not oopif and old.session_id != session_id:
        # The parent session still names a frame that a child session now renders: the
        # child's entry stays. It may not know where it sits, or its address, yet (after
        # a reconnect the OOPIF's attach can come before the page's frame tree, and the
        # attach says neither): the parent's tree fills those gaps, nothing more.
        gaps: dict[str, Any] = {}
        if old.parent_frame_id is None and parent is not None:
            gaps["parent_frame_id"] = ident(parent, "frame.parentId")
            _no_loop(frames, fid, gaps["parent_frame_id"])
        if not old.url:
            gaps["url"] = _frame_url(frame)
        if old.name is None and frame.get("name"):
            gaps["name"] = str(frame["name"])
        if not old.origin and str(frame.get("securityOrigin", "")) not in ("", "://", "null"):
            gaps["origin"] = str(frame["securityOrigin"])
        if gaps:
            frames[fid] = old.evolve(**gaps)
        return None
    if parent is not None:
        parent_id: str | None = ident(parent, "frame.parentId")
    else:
        parent_id = old.parent_frame_id if old else None
    _no_loop(frames, fid, parent_id)
    origin = str(frame.get("securityOrigin", ""))
    if origin in ("", "://", "null") and parent_id in frames:
        # about:srcdoc and about:blank frames run with their parent's origin; Chromium
        # reports "://" for them.
        origin = frames[parent_id].origin
    frames[fid] = FrameInfo(
        frame_id=fid,
        parent_frame_id=parent_id,
        url=_frame_url(frame),
        origin=origin,
        # The frame's browsing-context name (window.name) as of this document's commit;
        # "" (the top frame, an unnamed iframe) is None. Measured on Chromium 156: the
        # <iframe name> at the first commit; a later ``window.name = ...`` shows at the
        # frame's next commit (no event says so before), and setting the element's
        # name attribute after load changes nothing.
        name=frame.get("name") or None,
        session_id=session_id,
        is_oopif=oopif,
    )
    return fid


def _walk(tree: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    yield tree["frame"]
    for child in tree.get("childFrames") or ():
        yield from _walk(child)


def descendants(parent_of: Mapping[str, str | None], roots: set[str]) -> set[str]:
    """``roots`` and everything whose parent chain leads to one of them."""
    found = set(roots)
    grew = True
    while grew:
        grew = False
        for key, parent in parent_of.items():
            if key not in found and parent in found:
                found.add(key)
                grew = True
    return found


def _subtree(frames: Mapping[str, FrameInfo], root: str) -> set[str]:
    return descendants({k: f.parent_frame_id for k, f in frames.items()}, {root})


# -- Page domain ------------------------------------------------------------------


def frame_tree(state: BrowserState, msg: Reply, out: Out) -> BrowserState:
    frames = dict(state.frames)
    for frame in _walk(msg.result["frameTree"]):
        fid = _upsert(state, frames, msg.session_id, frame)
        if fid is not None and fid not in state.frames:
            out.append(FrameAdded(frames[fid]))
    return state.evolve(frames=frames)


def _removed(state: BrowserState, doomed: set[str], msg: Event, reason: str,
             out: Out) -> BrowserState:
    """Drop ``doomed`` frames, their contexts, and the dialogs open in them."""
    if not doomed:
        return state
    # In the frame table's order, not the set's: the changes (and the trace's frames()
    # rows made of them) come out the same in every process.
    out.extend(FrameRemoved(f, reason) for k, f in state.frames.items() if k in doomed)
    frames = {k: v for k, v in state.frames.items() if k not in doomed}
    contexts = {k: v for k, v in state.contexts.items() if k[1] not in doomed}
    state = state.evolve(frames=frames, contexts=contexts,
                         rejoining=state.rejoining - doomed)
    return dialogs_gone_with_frames(state, doomed, msg.wall,
                                    "frame_removed" if reason == "remove" else
                                    "frame_navigated", out)


def frame_attached(state: BrowserState, msg: Event, out: Out) -> BrowserState:
    fid = ident(msg.params["frameId"], "frameId")
    old = state.frames.get(fid)
    if old is not None:
        return state
    parent = msg.params.get("parentFrameId")
    parent_id = ident(parent, "parentFrameId") if parent else None
    _no_loop(state.frames, fid, parent_id)
    frames = dict(state.frames)
    frames[fid] = FrameInfo(frame_id=fid, parent_frame_id=parent_id, session_id=msg.session_id)
    out.append(FrameAdded(frames[fid]))
    return state.evolve(frames=frames)


def frame_navigated(state: BrowserState, msg: Event, out: Out) -> BrowserState:
    frame = msg.params["frame"]
    fid = ident(frame["id"], "frame.id")
    # A new document has none of the old one's child frames, and Chromium sends no
    # frameDetached for them: prune them here.
    doomed = _subtree(state.frames, fid) - {fid} if fid in state.frames else set()
    state = _removed(state, doomed, msg, "navigated", out)
    frames = dict(state.frames)
    if _upsert(state, frames, msg.session_id, frame) is None:
        return state
    state = state.evolve(frames=frames)
    if fid in state.rejoining:  # its OOPIF session ended and its parent has it back
        out.append(FrameSwapped(frames[fid]))
        state = state.evolve(rejoining=state.rejoining - {fid})
    out.append(FrameNavigated(frames[fid]))
    page = state.pages.get(page_session_of(state, msg.session_id) or "")
    if page is not None:
        update: dict[str, object] = {"last_commit": msg.wall}
        if page.target_id == fid:  # the page's own top frame: its URL is the page's
            update["url"] = frames[fid].url
        page = page.evolve(**update)
        state = state.evolve(pages={**state.pages, page.session_id: page})
    # A dialog still open in the frame's old document went with it (a Closed would
    # have come first had anyone answered it).
    return dialogs_gone_with_frames(state, {fid}, msg.wall, "frame_navigated", out)


def navigated_within_document(state: BrowserState, msg: Event, out: Out) -> BrowserState:
    fid = ident(msg.params["frameId"], "frameId")
    old = state.frames.get(fid)
    if old is None:
        return state
    frames = dict(state.frames)
    frames[fid] = old.evolve(url=str(msg.params.get("url", old.url)))
    out.append(FrameNavigated(frames[fid]))
    state = state.evolve(frames=frames)
    page = state.pages.get(page_session_of(state, msg.session_id) or "")
    if page is not None and page.target_id == fid:
        page = page.evolve(url=frames[fid].url)
        state = state.evolve(pages={**state.pages, page.session_id: page})
    return state


def frame_detached(state: BrowserState, msg: Event, out: Out) -> BrowserState:
    fid = ident(msg.params["frameId"], "frameId")
    old = state.frames.get(fid)
    if old is None:
        return state
    if msg.params.get("reason") == "swap":
        # A swap hands the frame to another process; it is not a removal.
        out.append(FrameSwapReported(old, msg.session_id))
        return state
    return _removed(state, _subtree(state.frames, fid), msg, "remove", out)


# -- Target domain ----------------------------------------------------------------


def attached_to_target(state: BrowserState, msg: Event, out: Out) -> BrowserState:
    sid = ident(msg.params["sessionId"], "sessionId")
    info = msg.params["targetInfo"]
    session = SessionInfo(
        session_id=sid,
        target_id=ident(info["targetId"], "targetInfo.targetId"),
        type=str(info.get("type", "")),
        url=str(info.get("url", "")),
        parent_session_id=msg.session_id,
        waiting_for_debugger=bool(msg.params.get("waitingForDebugger", False)),
    )
    sessions = {**state.sessions, sid: session}
    if session.type != "iframe":
        out.append(SessionAttached(session))
        return state.evolve(sessions=sessions)
    frames = dict(state.frames)
    old = frames.get(session.target_id)
    frames[session.target_id] = FrameInfo(
        frame_id=session.target_id,
        parent_frame_id=old.parent_frame_id if old else None,
        url=old.url if old and old.url else session.url,
        origin=old.origin if old else "",
        name=old.name if old else None,
        session_id=sid,
        is_oopif=True,
    )
    out.append(SessionAttached(session, frames[session.target_id]))
    if old is None:
        out.append(FrameAdded(frames[session.target_id]))
    elif not old.is_oopif:  # an in-process frame navigated cross-site: now its own process
        out.append(FrameSwapped(frames[session.target_id]))
    return state.evolve(sessions=sessions, frames=frames,
                        rejoining=state.rejoining - {session.target_id})


def detached_from_target(state: BrowserState, msg: Event, out: Out) -> BrowserState:
    sid = ident(msg.params["sessionId"], "sessionId")
    if sid not in state.sessions:
        return state
    gone = descendants({k: v.parent_session_id for k, v in state.sessions.items()}, {sid})
    # (In the session table's order, not the set's: the same changes in every process.)
    out.extend(SessionDetached(s, state.frames.get(s.target_id) if s.type == "iframe"
                               else None)
               for k, s in state.sessions.items() if k in gone)
    sessions = {k: v for k, v in state.sessions.items() if k not in gone}
    frames: dict[str, FrameInfo] = {}
    rejoining = set(state.rejoining)
    parent_session = state.sessions[sid].parent_session_id
    for fid, f in state.frames.items():
        if f.session_id not in gone:
            frames[fid] = f
        elif f.is_oopif and f.session_id == sid and f.parent_frame_id in state.frames:
            # The iframe element may still be there (navigated back to its parent's
            # site); the parent session reports it again or detaches it.
            frames[fid] = f.evolve(is_oopif=False, session_id=parent_session)
            rejoining.add(fid)
    contexts = {k: v for k, v in state.contexts.items() if k[0] not in gone}
    # A child's own frames vanish with it: drop frames left without a parent.
    orphans = {fid for fid, f in frames.items()
               if f.parent_frame_id is not None and f.parent_frame_id not in frames}
    if orphans:
        doomed = descendants({k: f.parent_frame_id for k, f in frames.items()}, orphans)
        frames = {k: v for k, v in frames.items() if k not in doomed}
    vanished = set(state.frames) - set(frames)
    out.extend(FrameRemoved(f, "session_gone") for k, f in state.frames.items() if k in vanished)
    state = state.evolve(sessions=sessions, frames=frames, contexts=contexts,
                         crashed_sessions=state.crashed_sessions - gone,
                         rejoining=frozenset(rejoining & set(frames)))
    # An OOPIF whose <iframe> stays (navigated to another process) keeps its dialog:
    # measured, it stays answerable. Only frames that left the tree take theirs along.
    return dialogs_gone_with_frames(state, vanished, msg.wall, "frame_removed", out)


def target_crashed(state: BrowserState, msg: Event, out: Out) -> BrowserState:
    if msg.session_id is None:
        return state
    return state.evolve(crashed_sessions=state.crashed_sessions | {msg.session_id})


def target_reloaded_after_crash(state: BrowserState, msg: Event, out: Out) -> BrowserState:
    if msg.session_id not in state.crashed_sessions:
        return state
    return state.evolve(crashed_sessions=state.crashed_sessions - {msg.session_id})


def target_info_changed(state: BrowserState, msg: Event, out: Out) -> BrowserState:
    info = msg.params["targetInfo"]
    tid = ident(info["targetId"], "targetInfo.targetId")
    sessions = dict(state.sessions)
    changed = False
    for sid, s in state.sessions.items():
        if s.target_id == tid:
            sessions[sid] = s.evolve(url=str(info.get("url", s.url)))
            changed = True
    if not changed:
        return state
    pages = {sid: p.evolve(url=sessions[sid].url)
             for sid, p in state.pages.items() if sid in sessions and p.target_id == tid}
    return state.evolve(sessions=sessions, pages={**state.pages, **pages})


# -- Runtime execution contexts -----------------------------------------------------


def context_created(state: BrowserState, msg: Event, out: Out) -> BrowserState:
    ctx = msg.params["context"]
    aux = ctx.get("auxData") or {}
    if not aux.get("isDefault") or not aux.get("frameId"):
        return state
    key = (msg.session_id, ident(aux["frameId"], "auxData.frameId"))
    return state.evolve(contexts={**state.contexts, key: _context_id(ctx["id"])})


def _context_id(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"execution context id must be an int, got {value!r}")
    return value


def context_destroyed(state: BrowserState, msg: Event, out: Out) -> BrowserState:
    cid = _context_id(msg.params["executionContextId"])
    contexts = {k: v for k, v in state.contexts.items()
                if not (k[0] == msg.session_id and v == cid)}
    return state.evolve(contexts=contexts) if len(contexts) != len(state.contexts) else state


def contexts_cleared(state: BrowserState, msg: Event, out: Out) -> BrowserState:
    contexts = {k: v for k, v in state.contexts.items() if k[0] != msg.session_id}
    return state.evolve(contexts=contexts)
