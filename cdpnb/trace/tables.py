"""A trace as pandas DataFrames with real dtypes (see ``dtypes``).

Every table is built from the trace's columns (``Columns``: a file as scanned, or
message objects held as columns), one way whatever the trace came from; empty traces
give the same columns and dtypes with zero rows. The events and commands tables come
straight from the columns (``columnar``); the others make message objects only for the
messages they need.

The dialog and frame tables fold the messages through the reducers the live
supervisor uses (``cdpnb.state.fold``), so "who closed this dialog" or "which
frame is this OOPIF's parent" means here exactly what it meant live; only messages
a reducer rule acts on can change the state, so only those are folded
(``Columns.folded``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

import numpy as np
import pandas as pd

from cdpnb.protocol import Event, ProtocolSpec, Reply
from cdpnb.state import CLOSED_BY as STATE_CLOSED_BY
from cdpnb.state import BrowserState, DialogRecord, FrameInfo, PendingDialog
from cdpnb.state.changes import (
    Change,
    DialogAmended,
    DialogClosed,
    DialogOpened,
    FrameAdded,
    FrameNavigated,
    FrameRemoved,
)
from cdpnb.state.console import _describe, bidi_entry_kind, log_entry
from cdpnb.state.dialogs import DIALOG_TYPES
from cdpnb.state.frames import _frame_url
from cdpnb.state.reducer import CONSOLE_ONLY
from cdpnb.trace.blocks import DIRECTIONS, KIND_NAMES
from cdpnb.trace.columnar import commands, events
from cdpnb.trace.columns import Columns
from cdpnb.trace.dtypes import (
    Convert,
    Rows,
    booleans,
    categorical,
    categories_of,
    float64s,
    int64s,
    str_or_none,
    strings,
    wall_times,
)
from cdpnb.trace.format import Record

__all__ = [
    "CLOSED_BY",
    "CONTEXTS_ONLY",
    "DIRECTIONS",
    "FRAME_EVENTS",
    "KINDS",
    "NOT_FOLDED",
    "SWAPPED",
    "commands",
    "console",
    "dialogs",
    "events",
    "frames",
]

KINDS = KIND_NAMES
CLOSED_BY = STATE_CLOSED_BY
VIA = ("native", "bridge")
#: A frame that moved to another process (CDP ``Page.frameDetached`` with ``reason:
#: "swap"``: it became, or stopped being, an OOPIF); it was not removed.
SWAPPED = "swapped"
FRAME_EVENTS = ("attached", "navigated", "detached", SWAPPED, "oopif_attached",
                "oopif_detached")
CONSOLE_KINDS = ("console", "exception", "browser")
#: CDP events whose rules write the execution contexts only (``state.contexts``: no
#: table reads them, and the rules that read them write only them again) and report no
#: change but ``Malformed``: the dialog and frame tables fold without them, as without
#: the console's (``reducer.CONSOLE_ONLY``). A quarter of the lines those tables fold in
#: a real trace (``benchmarks/tiled_trace.py``: 57,000 of 229,000 in a million).
#: ``tests/test_trace_scale.py`` holds each rule to it.
CONTEXTS_ONLY = frozenset({"Runtime.executionContextCreated",
                           "Runtime.executionContextDestroyed",
                           "Runtime.executionContextsCleared"})
#: What the dialog and frame tables leave out of their fold.
NOT_FOLDED = CONSOLE_ONLY | CONTEXTS_ONLY

# -- dialogs -----------------------------------------------------------------------------


def dialogs(columns: Columns, start: float) -> pd.DataFrame:
    """One row per dialog ever opened, as the reducers saw it open and close.

    ``closed_at`` / ``closed_by`` / ``reason`` / ``accepted`` / ``open_ms`` are NA for a
    dialog still open when the trace ends; ``answer`` is the text an accepted prompt
    returned to the page. Built from the changes the fold reports (``DialogOpened``,
    ``DialogClosed``, ``DialogAmended``): what the live supervisor acted on.
    """
    opened: dict[str, tuple[PendingDialog, Record]] = {}
    closed: dict[str, DialogRecord] = {}
    # (A console message changes nothing a dialog row reads, nor does an execution
    # context's: not folded here.)
    for message, _, _, changes in columns.folded(without=NOT_FOLDED):
        for change in changes:
            if isinstance(change, DialogOpened):
                opened.setdefault(change.dialog.id, (change.dialog, message))
            elif isinstance(change, DialogClosed | DialogAmended):
                # A record may be amended later (an answer that failed after all was
                # not ours): the newest version of each one wins.
                closed[change.record.id] = change.record
    return _dialog_frame(opened, closed, start)


_DIALOG_SCHEMA: dict[str, Convert] = {
    "dialog_id": strings, "closed_at": wall_times,
    # (``unknown``: a WebDriver classic dialog, whose type classic does not tell)
    "type": categories_of((*DIALOG_TYPES, "unknown")),
    "message": strings, "default_prompt": strings, "frame_id": strings, "url": strings,
    "session_id": categorical, "via": categories_of(VIA), "has_browser_handler": booleans,
    "accepted": booleans, "answer": strings, "closed_by": categories_of(CLOSED_BY),
    "reason": categorical, "open_ms": float64s,
}


def _dialog_frame(opened: Mapping[str, tuple[PendingDialog, Record]],
                  closed: Mapping[str, DialogRecord], start: float) -> pd.DataFrame:
    rows = Rows(start, _DIALOG_SCHEMA)
    for did, (dialog, opening) in opened.items():
        record = closed.get(did)
        # (The record's type: a WebDriver classic dialog's is learnt as it is answered.)
        rows.add(opening, did, record.closed_at if record else np.nan,
                 record.type if record else dialog.type,
                 dialog.message, dialog.default_prompt, dialog.frame_id, dialog.url,
                 dialog.session_id, dialog.via, dialog.has_browser_handler,
                 record.accepted if record else None, record.prompt_text if record else None,
                 record.closed_by if record else None, record.reason if record else None,
                 record.open_ms if record else None)
    frame = rows.frame(time="opened_at")
    return frame[["dialog_id", "opened_at", "closed_at", "t", *list(_DIALOG_SCHEMA)[2:]]]


# -- frames ------------------------------------------------------------------------------

_NO_ORIGIN = ("", "://", "null")


def _origin_of(url: str) -> str | None:
    parts = urlsplit(url)
    if parts.scheme and parts.netloc:
        return f"{parts.scheme}://{parts.netloc}"
    return None


_FRAME_SCHEMA: dict[str, Convert] = {
    "event": categories_of(FRAME_EVENTS), "frame_id": strings, "name": strings,
    "parent_frame_id": strings, "url": strings, "origin": strings, "session_id": categorical,
    "parent_session_id": categorical, "is_oopif": booleans, "reason": categorical,
}


def _frame_row(rows: Rows, msg: Record, event: str, frame_id: str, *,
               name: str | None = None, parent: str | None = None, url: str | None = None,
               origin: str | None = None, session: str | None = None,
               parent_session: str | None = None, is_oopif: bool = False,
               reason: str | None = None) -> None:
    rows.add(msg, event, frame_id, name, parent, url, origin, session, parent_session,
             is_oopif, reason)


def _state_row(rows: Rows, msg: Record, event: str, frame: FrameInfo,
               session: str | None, reason: str | None = None) -> None:
    """A row for ``frame`` as the fold holds it."""
    _frame_row(rows, msg, event, frame.frame_id, name=frame.name,
               parent=frame.parent_frame_id, url=frame.url or None,
               origin=frame.origin or None, session=session, is_oopif=frame.is_oopif,
               reason=reason)


def _navigated(rows: Rows, msg: Event, after: BrowserState) -> None:
    frame = msg.params.get("frame")
    if not isinstance(frame, dict) or not isinstance(frame.get("id"), str):
        return
    fid = frame["id"]
    known = after.frames.get(fid)
    url = _frame_url(frame)
    origin = str(frame.get("securityOrigin") or "")
    if origin in _NO_ORIGIN:
        origin = known.origin if known is not None else ""
    parent = str_or_none(frame.get("parentId")) or (known.parent_frame_id if known else None)
    name = str_or_none(frame.get("name")) or (known.name if known else None)
    _frame_row(rows, msg, "navigated", fid, name=name, parent=parent, url=url,
               origin=origin if origin not in _NO_ORIGIN else _origin_of(url),
               session=msg.session_id, is_oopif=bool(known and known.is_oopif))


def frames(columns: Columns, start: float, protocol: ProtocolSpec) -> pd.DataFrame:
    """The frame timeline: ``attached``, ``navigated``, ``detached``, ``swapped`` and
    ``oopif_attached`` / ``oopif_detached`` (an iframe target's session; ``session_id``
    is the child session, ``parent_session_id`` the one that reported it). ``name`` is
    the frame's name as the browser reported it (CDP's ``Frame.name``: ``<iframe
    name>``, or ``window.name`` as of the frame's last new document); WebDriver BiDi
    reports none, so it is NA there. Parents come from the event, else from the folded
    state.

    ``swapped`` is a frame that moved to another process and stays in the tree (CDP
    ``Page.frameDetached`` with reason ``swap``, as when it becomes an OOPIF; its
    ``reason`` is ``swap``), as ``timeline()`` calls it. ``detached`` rows are frames
    that went, and say why in ``reason``: ``remove`` (its element went), ``navigated``
    (an ancestor loaded a new document; CDP sends no event for these frames), and
    ``session_gone`` (it went with its OOPIF's session), ``page_closed`` (BiDi: with
    its page). The last three come from the fold's changes (``FrameRemoved``), so they
    are the frames the live supervisor saw go; ``session_id`` is then the session the
    frame belonged to. A same-document navigation (CDP
    ``Page.navigatedWithinDocument``, BiDi ``fragmentNavigated`` / ``historyUpdated``)
    is a ``navigated`` row with the new URL, and the frames a ``Page.getFrameTree``
    reply first names (an existing page's, a reconnect's) are ``attached`` rows.
    """
    rows = Rows(start, _FRAME_SCHEMA)
    oopif_sessions: dict[str, str] = {}  # child session -> frame (target) id
    gone: set[str] = set()  # frames a change reported detached (no event of their own)
    # (BiDi's frames, and classic's, come from the fold's changes alone.)
    from_changes = protocol.frames_from_changes
    for msg, before, after, changes in columns.folded(without=NOT_FOLDED):
        if from_changes:
            _bidi_frames(rows, msg, before, after, changes)
            continue
        _cdp_event_frames(rows, msg, before, after, oopif_sessions, gone)
        _changed_frames(rows, msg, changes, gone)
        if gone and after.frames is not before.frames:
            # A frame back in the tree is no longer gone. (Looked up from the tree's
            # side: gone keeps every frame of the connections before, which made this
            # quadratic, 25 CPU s for a million real messages.)
            gone.difference_update(gone.intersection(after.frames))
    return rows.frame()


def _cdp_event_frames(rows: Rows, msg: Record, before: BrowserState, after: BrowserState,
                      oopif_sessions: dict[str, str], gone: set[str]) -> None:
    """The row a CDP frame or target event makes, read from the event (and the fold)."""
    if type(msg) is not Event:
        return
    assert isinstance(msg, Event)
    p = msg.params
    name = msg.method
    if name == "Page.frameNavigated":
        _navigated(rows, msg, after)
    elif name == "Page.frameAttached":
        fid = str_or_none(p.get("frameId"))
        if fid:
            known = after.frames.get(fid)
            _frame_row(rows, msg, "attached", fid, name=known.name if known else None,
                       parent=str_or_none(p.get("parentFrameId")), session=msg.session_id,
                       is_oopif=bool(known and known.is_oopif))
    elif name == "Page.frameDetached":
        fid = str_or_none(p.get("frameId"))
        old = before.frames.get(fid) if fid else None
        if fid and (old is not None or fid not in gone):  # else reported when it went
            reason = str_or_none(p.get("reason"))
            _frame_row(rows, msg, SWAPPED if reason == "swap" else "detached", fid,
                       name=old.name if old else None,
                       parent=old.parent_frame_id if old else None,
                       url=old.url if old else None, session=msg.session_id,
                       is_oopif=bool(old and old.is_oopif), reason=reason)
    elif name == "Target.attachedToTarget":
        info = p.get("targetInfo")
        sid, fid = str_or_none(p.get("sessionId")), str_or_none((info or {}).get("targetId"))
        if not (isinstance(info, dict) and info.get("type") == "iframe" and sid and fid):
            return
        oopif_sessions[sid] = fid
        known = after.frames.get(fid)
        _frame_row(rows, msg, "oopif_attached", fid, name=known.name if known else None,
                   parent=known.parent_frame_id if known else None,
                   url=(known.url if known else "") or str_or_none(info.get("url")) or None,
                   session=sid, parent_session=msg.session_id, is_oopif=True)
    elif name == "Target.detachedFromTarget":
        sid = str_or_none(p.get("sessionId"))
        fid = oopif_sessions.pop(sid, None) if sid else None
        if sid and fid:
            old = before.frames.get(fid)
            _frame_row(rows, msg, "oopif_detached", fid, name=old.name if old else None,
                       parent=old.parent_frame_id if old else None,
                       url=old.url if old else None, session=sid,
                       parent_session=msg.session_id, is_oopif=True)


def _changed_frames(rows: Rows, msg: Record, changes: tuple[Change, ...],
                    gone: set[str]) -> None:
    """CDP rows no event of their own announces, from the fold's changes: frames removed
    with another (pruned by an ancestor's navigation, gone with an OOPIF session, under
    a removed frame), same-document navigations, and the frames a frame tree names."""
    if not changes:
        return
    event = msg if type(msg) is Event else None
    reply = msg if type(msg) is Reply else None
    assert event is None or isinstance(event, Event)
    assert reply is None or isinstance(reply, Reply)
    own = (str_or_none(event.params.get("frameId"))
           if event is not None and event.method == "Page.frameDetached" else None)
    for change in changes:
        if type(change) is FrameRemoved:
            if change.frame.frame_id != own:  # (a frameDetached's own frame has its row)
                gone.add(change.frame.frame_id)
                _state_row(rows, msg, "detached", change.frame, change.frame.session_id,
                           change.reason)
        elif (type(change) is FrameNavigated and event is not None
              and event.method == "Page.navigatedWithinDocument"):
            _state_row(rows, msg, "navigated", change.frame, event.session_id)
        elif (type(change) is FrameAdded and reply is not None
              and reply.method == "Page.getFrameTree"):
            _state_row(rows, msg, "attached", change.frame, reply.session_id)


def _bidi_frames(rows: Rows, msg: Record, before: BrowserState, after: BrowserState,
                 changes: tuple[Change, ...]) -> None:
    """WebDriver BiDi: browsing contexts come and go (``contextCreated``, the
    ``getTree`` reply, ``contextDestroyed``) and navigate; the rows are what the fold
    made of them, a removal's reason the fold's (``remove``, ``page_closed``). BiDi
    does not say which frames are out of process, nor their names."""
    if after.frames is before.frames:
        return
    for fid, frame in after.frames.items():
        old = before.frames.get(fid)
        if old is None:
            _frame_row(rows, msg, "attached", fid, name=frame.name,
                       parent=frame.parent_frame_id, url=frame.url or None,
                       origin=frame.origin or None, session=frame.session_id)
        elif old.url != frame.url:
            _frame_row(rows, msg, "navigated", fid, name=frame.name,
                       parent=frame.parent_frame_id, url=frame.url,
                       origin=frame.origin or None, session=frame.session_id)
    reasons = {c.frame.frame_id: c.reason for c in changes if type(c) is FrameRemoved}
    for fid, old in before.frames.items():
        if fid not in after.frames:
            # (frames a new connection forgets go with no change: "remove", as before)
            _frame_row(rows, msg, "detached", fid, name=old.name, parent=old.parent_frame_id,
                       url=old.url or None, session=old.session_id,
                       reason=reasons.get(fid, "remove"))


# -- console -----------------------------------------------------------------------------


def _top_frame(params: Mapping[str, Any]) -> Mapping[str, Any]:
    stack = params.get("stackTrace")
    frames = stack.get("callFrames") if isinstance(stack, dict) else None
    top = frames[0] if isinstance(frames, list) and frames else None
    return top if isinstance(top, dict) else {}


def _int_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


_CONSOLE_EVENTS = ("Runtime.consoleAPICalled", "Runtime.exceptionThrown", "Log.entryAdded",
                   "log.entryAdded")
_CONSOLE_SCHEMA: dict[str, Convert] = {
    "session_id": categorical, "level": categorical, "kind": categories_of(CONSOLE_KINDS),
    "source": categorical, "text": strings, "url": strings, "line": int64s, "column": int64s,
}


def console(columns: Columns, start: float) -> pd.DataFrame:
    """Every ``Runtime.consoleAPICalled`` (all levels: ``level`` is the call's type),
    ``Runtime.exceptionThrown`` (level ``error``) and ``Log.entryAdded`` (the browser's
    own messages, ``kind`` ``browser``: all levels, ``source`` as CDP names it), with the
    full text; over WebDriver BiDi every ``log.entryAdded`` (``level`` as BiDi gives it,
    ``kind`` by ``cdpnb.state.console.bidi_entry_kind``)."""
    rows = Rows(start, _CONSOLE_SCHEMA)

    def add(msg: Event, level: str, kind: str, text: str, where: Mapping[str, Any],
            source: str | None = None) -> None:
        rows.add(msg, msg.session_id, level, kind, source, text, str(where.get("url", "")),
                 _int_or_none(where.get("lineNumber")), _int_or_none(where.get("columnNumber")))

    for r in columns.messages(columns.rows_of("event", _CONSOLE_EVENTS)):
        if r.method == "Runtime.consoleAPICalled":
            args = r.params.get("args")
            text = " ".join(_describe(a) for a in args or () if isinstance(a, dict))
            add(r, str(r.params.get("type", "")), "console", text, _top_frame(r.params))
        elif r.method == "Runtime.exceptionThrown":
            details = r.params.get("exceptionDetails")
            if not isinstance(details, dict):
                continue
            exc = details.get("exception")
            described = exc.get("description") if isinstance(exc, dict) else None
            add(r, "error", "exception", str(described or details.get("text") or "exception"),
                details)
        elif r.method == "Log.entryAdded":  # CDP: the browser's own messages
            try:
                level, source, text, url, line = log_entry(r.params)
            except (LookupError, TypeError, ValueError):  # malformed: the reducer's Malformed
                continue
            add(r, level, "browser", text, {"url": url, "lineNumber": line}, source or None)
        elif r.method == "log.entryAdded":  # WebDriver BiDi: console calls and exceptions
            add(r, str(r.params.get("level", "")), bidi_entry_kind(r.params),
                str(r.params.get("text") or ""), _top_frame(r.params))
    return rows.frame()


