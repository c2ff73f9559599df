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

from cdpnb.protocol import Event
from cdpnb.state import CLOSED_BY as STATE_CLOSED_BY
from cdpnb.state import DialogRecord, FrameInfo, PendingDialog
from cdpnb.state.changes import (
    Change,
    DialogAmended,
    DialogClosed,
    DialogOpened,
    FrameAdded,
    FrameNavigated,
    FrameRemoved,
    FrameSwapReported,
    SessionAttached,
    SessionDetached,
)
from cdpnb.state.console import _describe, bidi_entry_kind, log_entry
from cdpnb.state.dialogs import DIALOG_TYPES
from cdpnb.state.reducer import CONSOLE_ONLY, COUNTS_ONLY
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
#: What the dialog and frame tables leave out of their fold (events and notes).
NOT_FOLDED = CONSOLE_ONLY | CONTEXTS_ONLY | COUNTS_ONLY

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


_OOPIF_EVENTS = ("oopif_attached", "oopif_detached")


def _frame_row(rows: Rows, msg: Record, event: str, frame: FrameInfo, *,
               origin: str | None = None, session: str | None = None,
               parent_session: str | None = None, reason: str | None = None) -> None:
    """A row for ``frame`` as the fold holds it (``session``: its own unless given)."""
    rows.add(msg, event, frame.frame_id, frame.name, frame.parent_frame_id,
             frame.url or None, origin, session if session is not None else frame.session_id,
             parent_session, frame.is_oopif or event in _OOPIF_EVENTS, reason)


def frames(columns: Columns, start: float) -> pd.DataFrame:
    """The frame timeline: ``attached``, ``navigated``, ``detached``, ``swapped`` and
    ``oopif_attached`` / ``oopif_detached`` (an iframe target's session; ``session_id``
    is the child session, ``parent_session_id`` the one it was attached through).
    ``name`` is the frame's name as the browser reported it (CDP's ``Frame.name``:
    ``<iframe name>``, or ``window.name`` as of the frame's last new document; WebDriver
    classic's walk reads ``window.name``); WebDriver BiDi reports none, so it is NA there.

    Every row is a change the fold reported (``cdpnb.state.changes``), the frame as the
    fold held it, for every protocol: what the live supervisor saw, its events
    included. ``attached`` is a ``FrameAdded`` (a CDP ``Page.frameAttached``, the frames
    a ``Page.getFrameTree`` reply first names, a BiDi context created or named by
    ``getTree``), ``navigated`` a ``FrameNavigated``: a new document, or a
    same-document move (CDP ``Page.navigatedWithinDocument``, BiDi
    ``fragmentNavigated`` / ``historyUpdated``) with the new URL. ``swapped`` is a frame
    that moved to another process and stays in the tree (``FrameSwapReported``: CDP
    ``Page.frameDetached`` with reason ``swap``, as when it becomes an OOPIF; ``reason``
    ``swap``, ``session_id`` the session that said so), as ``timeline()`` calls it.
    ``detached`` rows (``FrameRemoved``) are frames that went, and say why in
    ``reason``: ``remove`` (its element went), ``navigated`` (an ancestor loaded a new
    document; CDP sends no event for these frames), ``session_gone`` (it went with its
    OOPIF's session), ``page_closed`` (BiDi: with its page); ``session_id`` is the
    session the frame belonged to. Frames a new connection forgets are not detached
    rows (the fold reports nothing of them: live, no ``framedetached`` fires).
    """
    rows = Rows(start, _FRAME_SCHEMA)
    for msg, _, _, changes in columns.folded(without=NOT_FOLDED):
        if changes:
            _frame_rows(rows, msg, changes)
    return rows.frame()


def _frame_rows(rows: Rows, msg: Record, changes: tuple[Change, ...]) -> None:
    """The rows of one message's changes: its own news first (an attach, a navigation),
    then the frames it took along (a navigation prunes the old document's frames first)."""
    # (A frame that arrives with its own session is that session's oopif_attached row.)
    oopifs = {c.frame.frame_id for c in changes
              if type(c) is SessionAttached and c.frame is not None}
    removed: list[FrameRemoved] = []
    for change in changes:
        if type(change) is FrameAdded:
            if change.frame.frame_id not in oopifs:
                _frame_row(rows, msg, "attached", change.frame,
                           origin=change.frame.origin or None)
        elif type(change) is FrameNavigated:
            frame = change.frame
            # (Chromium says "://" or "null" for a frame without an origin of its own:
            # the URL's, if it has one.)
            _frame_row(rows, msg, "navigated", frame,
                       origin=frame.origin if frame.origin not in _NO_ORIGIN
                       else _origin_of(frame.url))
        elif type(change) is FrameRemoved:
            removed.append(change)
        elif type(change) is FrameSwapReported:
            _frame_row(rows, msg, SWAPPED, change.frame, session=change.session_id,
                       reason="swap")
        elif type(change) is SessionAttached and change.frame is not None:
            _frame_row(rows, msg, "oopif_attached", change.frame,
                       parent_session=change.session.parent_session_id)
        elif type(change) is SessionDetached and change.session.type == "iframe":
            # (Its frame may have gone first, with an ancestor's new document.)
            frame = change.frame or FrameInfo(frame_id=change.session.target_id)
            _frame_row(rows, msg, "oopif_detached", frame,
                       session=change.session.session_id,
                       parent_session=change.session.parent_session_id)
    for gone in removed:
        _frame_row(rows, msg, "detached", gone.frame, origin=gone.frame.origin or None,
                   reason=gone.reason)


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


