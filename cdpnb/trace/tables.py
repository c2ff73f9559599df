"""A trace as pandas DataFrames with real dtypes, and as one lossless Parquet file.

Every builder reads ``trace.records`` once, collecting plain column lists (no row
dicts), and turns them into typed columns at the end: ``datetime64[ns, UTC]`` for
wall-clock times, ``float64`` seconds since the trace started (``t``),
categoricals for the small vocabularies (direction, kind, method, session id),
nullable ``Int64`` / ``Float64`` / ``boolean`` / ``string`` where a value can be
missing. Empty traces give the same columns and dtypes with zero rows.

The dialog and frame tables fold the records through the reducers the live
supervisor uses (``cdpnb.state.fold``), so "who closed this dialog" or "which
frame is this OOPIF's parent" means here exactly what it meant live.
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit

import numpy as np
import pandas as pd

from cdpnb.protocol import Command, ErrorReply, Event, Fault, Note, Reply, opens_connection
from cdpnb.state import CLOSED_BY as STATE_CLOSED_BY
from cdpnb.state import BrowserState, DialogRecord, PendingDialog
from cdpnb.state.changes import DialogAmended, DialogClosed, DialogOpened
from cdpnb.state.console import _describe
from cdpnb.state.dialogs import DIALOG_TYPES
from cdpnb.state.frames import _frame_url
from cdpnb.trace.format import INT_MAX, INT_MIN, Record, TraceFormatError
from cdpnb.trace.trace import Trace

__all__ = [
    "CLOSED_BY",
    "DIRECTIONS",
    "FRAME_EVENTS",
    "KINDS",
    "commands",
    "console",
    "dialogs",
    "events",
    "frames",
    "from_parquet",
    "to_parquet",
]

DIRECTIONS = ("send", "recv", "note", "fault")
KINDS = ("command", "reply", "error", "event", "note", "fault")
CLOSED_BY = STATE_CLOSED_BY
VIA = ("native", "bridge")
FRAME_EVENTS = ("attached", "navigated", "detached", "oopif_attached", "oopif_detached")
CONSOLE_KINDS = ("console", "exception")

#: Parquet key-value metadata key holding header, footer and problems (JSON).
PARQUET_KEY = b"cdpnb.trace"
PARQUET_VERSION = 1

_encode = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, default=repr).encode
_T = TypeVar("_T")

@contextlib.contextmanager
def _gc_paused() -> Iterator[None]:
    """No cyclic GC while building a million acyclic objects: every full collection
    would walk the whole trace again (halves from_parquet's time). Restored after."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


# -- typed columns ------------------------------------------------------------------------


def _times(walls: Sequence[float]) -> pd.DatetimeIndex:
    stamps = pd.to_datetime(np.asarray(walls, dtype="float64"), unit="s", utc=True)
    return stamps.as_unit("ns")


def _since(monos: Sequence[float], start: float) -> np.ndarray[Any, np.dtype[np.float64]]:
    return np.asarray(monos, dtype="float64") - start


_SURROGATE = re.compile("[\ud800-\udfff]")


def _escape_surrogates(values: Sequence[Any]) -> list[Any]:
    """Lone surrogates (JavaScript strings may hold them; UTF-8 cannot) as ``\\udXXX``
    escapes: the same value to json.loads inside JSON text, visible in plain text."""
    return [_SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", v) if isinstance(v, str)
            else v for v in values]


def _text_array(build: Callable[[Sequence[Any]], _T], values: Sequence[Any]) -> _T:
    try:
        return build(values)
    except UnicodeEncodeError:  # Arrow-backed strings must be valid UTF-8
        return build(_escape_surrogates(values))


def _cat(values: Sequence[Any], categories: Sequence[str] | None = None) -> pd.Categorical:
    """A categorical of ``values`` (None is NA) with str categories: sorted, or exactly
    ``categories`` (values outside them are NA). Factorised by hand: pd.Categorical
    on a list holding None is ten times slower."""
    codes, uniques = pd.factorize(np.asarray(values, dtype=object), sort=True)
    found = _text_array(lambda v: pd.Index(v, dtype="str"), list(uniques))
    if categories is None:
        return pd.Categorical.from_codes(codes, categories=found)
    index = pd.Index(list(categories), dtype="str")
    to_index = np.append(index.get_indexer(found), -1)  # code -1 (NA) stays -1
    return pd.Categorical.from_codes(to_index[codes], categories=index)


def _ints(values: Sequence[int | None]) -> pd.api.extensions.ExtensionArray:
    try:
        return pd.array(values, dtype="Int64")
    except (OverflowError, TypeError):
        # Page-controlled numbers (a console line number) can be any JSON integer; the
        # record keeps it, the column shows NA where it does not fit 64 bits.
        return pd.array([v if isinstance(v, int) and INT_MIN <= v <= INT_MAX else None
                         for v in values], dtype="Int64")


def _floats(values: Sequence[float | None]) -> pd.api.extensions.ExtensionArray:
    return pd.array(values, dtype="Float64")


def _bools(values: Sequence[bool | None]) -> pd.api.extensions.ExtensionArray:
    return pd.array(values, dtype="boolean")


def _strings(values: Sequence[str | None]) -> pd.api.extensions.ExtensionArray:
    """Nullable text (``string``, NA for missing)."""
    return _text_array(lambda v: pd.array(v, dtype="string"), values)


def _json_texts(values: Sequence[str]) -> pd.api.extensions.ExtensionArray:
    """JSON text, never missing (pandas' default ``str``)."""
    return _text_array(lambda v: pd.array(v, dtype="str"), values)


def _frame(columns: dict[str, Any]) -> pd.DataFrame:
    return pd.DataFrame(columns, index=pd.RangeIndex(len(next(iter(columns.values())))))


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


Convert = Callable[[list[Any]], Any]


class _Rows:
    """Rows collected as column lists, typed at the end by ``schema`` (column ->
    converter, in column order). ``time`` takes wall floats; ``t`` monotonic ones."""

    def __init__(self, start: float, schema: Mapping[str, Convert]) -> None:
        self.schema = {"time": _times, "t": lambda monos: _since(monos, start), **schema}
        self.columns: list[list[Any]] = [[] for _ in self.schema]

    def add(self, record: Record, *values: Any) -> None:
        """One row: the record's wall and mono times, then the schema's other columns."""
        for column, value in zip(self.columns, (record.wall, record.mono, *values),
                                 strict=True):
            column.append(value)

    def frame(self, **rename: str) -> pd.DataFrame:
        named = {rename.get(name, name): convert(values) for (name, convert), values
                 in zip(self.schema.items(), self.columns, strict=True)}
        return _frame(named)


def _categories(categories: Sequence[str]) -> Convert:
    return lambda values: _cat(values, categories)


# -- events ------------------------------------------------------------------------------


def _event_columns(records: Sequence[Record], extras: bool) -> dict[str, list[Any]]:
    """The events table as plain lists, in one pass. ``extras`` adds what Parquet needs to
    rebuild every record: the raw wall/mono floats (already there) and reply params."""
    with _gc_paused():
        return _collect_event_columns(records, extras)


def _collect_event_columns(records: Sequence[Record], extras: bool) -> dict[str, list[Any]]:
    wall: list[float] = []
    mono: list[float] = []
    direction: list[str] = []
    kind: list[str] = []
    session: list[str | None] = []
    ids: list[int | None] = []
    method: list[str | None] = []
    payload: list[str] = []
    params: list[str | None] = []
    encode = _encode
    for r in records:
        wall.append(r.wall)
        mono.append(r.mono)
        cls = type(r)
        if cls is Event or cls is Note:
            assert isinstance(r, Event | Note)
            direction.append("recv" if cls is Event else "note")
            kind.append("event" if cls is Event else "note")
            session.append(r.session_id)
            ids.append(None)
            method.append(r.method)
            payload.append(encode(r.params))
            reply_params = None
        elif cls is Command:
            assert isinstance(r, Command)
            direction.append("send")
            kind.append("command")
            session.append(r.session_id)
            ids.append(r.id)
            method.append(r.method)
            payload.append(encode(r.params))
            reply_params = None
        elif cls is Reply or cls is ErrorReply:
            assert isinstance(r, Reply | ErrorReply)
            direction.append("recv")
            session.append(r.session_id)
            ids.append(r.id)
            method.append(r.method)
            if isinstance(r, Reply):
                kind.append("reply")
                payload.append(encode(r.result))
            else:
                kind.append("error")
                payload.append(encode(r.error))
            reply_params = encode(r.params) if extras else None
        elif cls is Fault:
            assert isinstance(r, Fault)
            direction.append("fault")
            kind.append("fault")
            session.append(None)
            ids.append(None)
            method.append(None)
            payload.append(encode({"kind": r.kind, "detail": r.detail, "raw": r.raw}))
            reply_params = None
        else:
            raise TypeError(f"a trace holds protocol messages and faults, got {cls.__name__}")
        if extras:
            params.append(reply_params)
    columns: dict[str, list[Any]] = {
        "wall": wall, "mono": mono, "direction": direction, "kind": kind,
        "session_id": session, "id": ids, "method": method, "payload": payload,
    }
    if extras:
        columns["params"] = params
    return columns


def _events_frame(columns: Mapping[str, list[Any]], start: float) -> pd.DataFrame:
    return _frame({
        "time": _times(columns["wall"]),
        "t": _since(columns["mono"], start),
        "direction": _cat(columns["direction"], DIRECTIONS),
        "kind": _cat(columns["kind"], KINDS),
        "session_id": _cat(columns["session_id"]),
        "id": _ints(columns["id"]),
        "method": _cat(columns["method"]),
        "payload": _json_texts(columns["payload"]),
    })


def events(trace: Trace) -> pd.DataFrame:
    """One row per record: ``time, t, direction, kind, session_id, id, method, payload``.

    ``payload`` is compact JSON of the params (commands, events, notes), the result
    (replies), ``{code, message[, data]}`` (error replies) or ``{kind, detail, raw}``
    (faults). A reply's ``method`` is the method of the command it answers.
    """
    return _events_frame(_event_columns(trace.records, extras=False), trace.started_mono)


# -- commands ----------------------------------------------------------------------------


def commands(trace: Trace) -> pd.DataFrame:
    """One row per command sent, joined with its reply.

    A reply answers the latest command with its id since the last ``cdpnb.connected``
    note (ids restart with each connection). ``latency_ms`` and ``ok`` are NA for a
    command that never got a reply.
    """
    wall: list[float] = []
    mono: list[float] = []
    method: list[str] = []
    session: list[str | None] = []
    ids: list[int] = []
    params: list[str] = []
    latency: list[float | None] = []
    ok: list[bool | None] = []
    code: list[int | None] = []
    error: list[str | None] = []
    waiting: dict[int, int] = {}  # command id -> row, within this connection
    encode = _encode
    for r in trace.records:
        cls = type(r)
        if cls is Command:
            assert isinstance(r, Command)
            waiting[r.id] = len(ids)
            wall.append(r.wall)
            mono.append(r.mono)
            method.append(r.method)
            session.append(r.session_id)
            ids.append(r.id)
            params.append(encode(r.params))
            latency.append(None)
            ok.append(None)
            code.append(None)
            error.append(None)
        elif cls is Reply or cls is ErrorReply:
            assert isinstance(r, Reply | ErrorReply)
            row = waiting.pop(r.id, None)
            if row is None:
                continue  # a reply to a command recorded before the trace began
            latency[row] = (r.mono - mono[row]) * 1000.0
            if isinstance(r, ErrorReply):
                ok[row] = False
                code[row] = r.code
                error[row] = r.message
            else:
                ok[row] = True
        elif opens_connection(r):
            waiting.clear()
    return _frame({
        "sent": _times(wall),
        "t": _since(mono, trace.started_mono),
        "method": _cat(method),
        "session_id": _cat(session),
        "id": _ints(ids),
        "latency_ms": _floats(latency),
        "ok": _bools(ok),
        "error_code": _ints(code),
        "error": _strings(error),
        "params": _json_texts(params),
    })


# -- folding helpers ---------------------------------------------------------------------


def _folded(trace: Trace) -> Iterable[tuple[Record, BrowserState, BrowserState]]:
    """Each message with the state before and after it (the reducers' own fold)."""
    before = BrowserState()
    for message, after in trace.replay_states():
        yield message, before, after
        before = after


# -- dialogs -----------------------------------------------------------------------------


def dialogs(trace: Trace) -> pd.DataFrame:
    """One row per dialog ever opened, as the reducers saw it open and close.

    ``closed_at`` / ``closed_by`` / ``reason`` / ``accepted`` / ``open_ms`` are NA for a
    dialog still open when the trace ends; ``answer`` is the text an accepted prompt
    returned to the page. Built from the changes the fold reports (``DialogOpened``,
    ``DialogClosed``, ``DialogAmended``): what the live supervisor acted on.
    """
    opened: dict[str, tuple[PendingDialog, Record]] = {}
    closed: dict[str, DialogRecord] = {}
    for message, _, changes in trace.replay_changes():
        for change in changes:
            if isinstance(change, DialogOpened):
                opened.setdefault(change.dialog.id, (change.dialog, message))
            elif isinstance(change, DialogClosed | DialogAmended):
                # A record may be amended later (an answer that failed after all was
                # not ours): the newest version of each one wins.
                closed[change.record.id] = change.record
    return _dialog_frame(opened, closed, trace.started_mono)


_DIALOG_SCHEMA: dict[str, Convert] = {
    "dialog_id": _strings, "closed_at": _times, "type": _categories(DIALOG_TYPES),
    "message": _strings, "default_prompt": _strings, "frame_id": _strings, "url": _strings,
    "session_id": _cat, "via": _categories(VIA), "has_browser_handler": _bools,
    "accepted": _bools, "answer": _strings, "closed_by": _categories(CLOSED_BY),
    "reason": _cat, "open_ms": _floats,
}


def _dialog_frame(opened: Mapping[str, tuple[PendingDialog, Record]],
                  closed: Mapping[str, DialogRecord], start: float) -> pd.DataFrame:
    rows = _Rows(start, _DIALOG_SCHEMA)
    for did, (dialog, opening) in opened.items():
        record = closed.get(did)
        rows.add(opening, did, record.closed_at if record else np.nan, dialog.type,
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
    "event": _categories(FRAME_EVENTS), "frame_id": _strings, "parent_frame_id": _strings,
    "url": _strings, "origin": _strings, "session_id": _cat, "parent_session_id": _cat,
    "is_oopif": _bools, "reason": _cat,
}


def _frame_row(rows: _Rows, msg: Event, event: str, frame_id: str, *,
               parent: str | None = None, url: str | None = None, origin: str | None = None,
               session: str | None = None, parent_session: str | None = None,
               is_oopif: bool = False, reason: str | None = None) -> None:
    rows.add(msg, event, frame_id, parent, url, origin, session, parent_session, is_oopif,
             reason)


def _navigated(rows: _Rows, msg: Event, after: BrowserState) -> None:
    frame = msg.params.get("frame")
    if not isinstance(frame, dict) or not isinstance(frame.get("id"), str):
        return
    fid = frame["id"]
    known = after.frames.get(fid)
    url = _frame_url(frame)
    origin = str(frame.get("securityOrigin") or "")
    if origin in _NO_ORIGIN:
        origin = known.origin if known is not None else ""
    parent = _text(frame.get("parentId")) or (known.parent_frame_id if known else None)
    _frame_row(rows, msg, "navigated", fid, parent=parent, url=url,
               origin=origin if origin not in _NO_ORIGIN else _origin_of(url),
               session=msg.session_id, is_oopif=bool(known and known.is_oopif))


def frames(trace: Trace) -> pd.DataFrame:
    """The frame timeline: ``attached``, ``navigated``, ``detached`` (Page domain, with
    ``reason`` remove / swap) and ``oopif_attached`` / ``oopif_detached`` (an iframe
    target's session; ``session_id`` is the child session, ``parent_session_id`` the
    one that reported it). Parents come from the event, else from the folded state.
    """
    rows = _Rows(trace.started_mono, _FRAME_SCHEMA)
    oopif_sessions: dict[str, str] = {}  # child session -> frame (target) id
    for msg, before, after in _folded(trace):
        if type(msg) is not Event:
            continue
        assert isinstance(msg, Event)
        p = msg.params
        name = msg.method
        if name == "Page.frameNavigated":
            _navigated(rows, msg, after)
        elif name == "Page.frameAttached":
            fid = _text(p.get("frameId"))
            if fid:
                known = after.frames.get(fid)
                _frame_row(rows, msg, "attached", fid, parent=_text(p.get("parentFrameId")),
                           session=msg.session_id, is_oopif=bool(known and known.is_oopif))
        elif name == "Page.frameDetached":
            fid = _text(p.get("frameId"))
            if fid:
                old = before.frames.get(fid)
                _frame_row(rows, msg, "detached", fid,
                           parent=old.parent_frame_id if old else None,
                           url=old.url if old else None, session=msg.session_id,
                           is_oopif=bool(old and old.is_oopif), reason=_text(p.get("reason")))
        elif name == "Target.attachedToTarget":
            info = p.get("targetInfo")
            sid, fid = _text(p.get("sessionId")), _text((info or {}).get("targetId"))
            if not (isinstance(info, dict) and info.get("type") == "iframe" and sid and fid):
                continue
            oopif_sessions[sid] = fid
            known = after.frames.get(fid)
            _frame_row(rows, msg, "oopif_attached", fid,
                       parent=known.parent_frame_id if known else None,
                       url=(known.url if known else "") or _text(info.get("url")) or None,
                       session=sid, parent_session=msg.session_id, is_oopif=True)
        elif name == "Target.detachedFromTarget":
            sid = _text(p.get("sessionId"))
            fid = oopif_sessions.pop(sid, None) if sid else None
            if sid and fid:
                old = before.frames.get(fid)
                _frame_row(rows, msg, "oopif_detached", fid,
                           parent=old.parent_frame_id if old else None,
                           url=old.url if old else None, session=sid,
                           parent_session=msg.session_id, is_oopif=True)
    return rows.frame()


# -- console -----------------------------------------------------------------------------


def _top_frame(params: Mapping[str, Any]) -> Mapping[str, Any]:
    stack = params.get("stackTrace")
    frames = stack.get("callFrames") if isinstance(stack, dict) else None
    top = frames[0] if isinstance(frames, list) and frames else None
    return top if isinstance(top, dict) else {}


def _int_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


_CONSOLE_SCHEMA: dict[str, Convert] = {
    "session_id": _cat, "level": _cat, "kind": _categories(CONSOLE_KINDS), "text": _strings,
    "url": _strings, "line": _ints, "column": _ints,
}


def console(trace: Trace) -> pd.DataFrame:
    """Every ``Runtime.consoleAPICalled`` (all levels: ``level`` is the call's type) and
    ``Runtime.exceptionThrown`` (level ``error``), with the full text."""
    rows = _Rows(trace.started_mono, _CONSOLE_SCHEMA)

    def add(msg: Event, level: str, kind: str, text: str, where: Mapping[str, Any]) -> None:
        rows.add(msg, msg.session_id, level, kind, text, str(where.get("url", "")),
                 _int_or_none(where.get("lineNumber")), _int_or_none(where.get("columnNumber")))

    for r in trace.records:
        if type(r) is not Event:
            continue
        assert isinstance(r, Event)
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
    return rows.frame()


# -- Parquet -----------------------------------------------------------------------------


def _pa_strings(values: list[str | None]) -> Any:
    import pyarrow as pa

    return _text_array(lambda v: pa.array(v, pa.string()), values)


def to_parquet(trace: Trace, path: str | os.PathLike[str]) -> Path:
    """Write every record to one Parquet file: the events table, plus ``wall`` and
    ``mono`` (the exact floats) and ``params`` (a reply's command params, JSON), with
    the trace's header, footer and problems as JSON in the file's key-value metadata.
    ``from_parquet`` rebuilds records equal to these (for JSON-valued records, which
    is every record read from a trace file)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = Path(path)
    if path.is_dir():
        raise IsADirectoryError(f"{path} is a directory; to_parquet writes one file")
    columns = _event_columns(trace.records, extras=True)
    frame = _events_frame(columns, trace.started_mono).drop(columns=["payload"])
    table = pa.Table.from_pandas(frame, preserve_index=False)
    table = table.append_column("payload", _pa_strings(columns["payload"]))
    table = table.append_column("wall", pa.array(columns["wall"], pa.float64()))
    table = table.append_column("mono", pa.array(columns["mono"], pa.float64()))
    table = table.append_column("params", _pa_strings(columns["params"]))
    about = {"version": PARQUET_VERSION, "header": trace.header, "footer": trace.footer,
             "problems": list(trace.problems)}
    metadata = {**(table.schema.metadata or {}), PARQUET_KEY: _encode(about).encode()}
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table.replace_schema_metadata(metadata), path)
    return path


_BUILDERS: dict[str, Callable[[Any, Any, Any, Any, Any, float, float], Record]] = {
    "command": lambda i, m, s, body, _p, wall, mono: Command(i, m, body, s, wall, mono),
    "reply": lambda i, m, s, body, p, wall, mono: Reply(i, m, body, s, p, wall, mono),
    "error": lambda i, m, s, body, p, wall, mono: ErrorReply(
        i, m, body["code"], body["message"], body.get("data"), s, p, wall, mono),
    "event": lambda _i, m, s, body, _p, wall, mono: Event(m, body, s, wall, mono),
    "note": lambda _i, m, s, body, _p, wall, mono: Note(m, body, s, wall, mono),
    "fault": lambda _i, _m, _s, body, _p, wall, mono: Fault(
        body["kind"], body["detail"], body["raw"], wall, mono),
}


def _column_values(column: Any) -> list[Any]:
    """A pyarrow column as Python values (to_pylist is slow on dictionary columns)."""
    import pyarrow as pa

    if pa.types.is_dictionary(column.type):
        column = column.cast(column.type.value_type)
    if pa.types.is_string(column.type) or pa.types.is_large_string(column.type):
        values: list[Any] = column.to_numpy(zero_copy_only=False).tolist()
        return values
    return list(column.to_pylist())


def from_parquet(path: str | os.PathLike[str]) -> Trace:
    """The trace ``to_parquet`` wrote: equal header, footer, problems and records."""
    import pyarrow.parquet as pq

    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"no Parquet trace at {path}")
    try:
        schema = pq.read_schema(path)
    except Exception as exc:  # pyarrow raises several types for "not this kind of file"
        raise TraceFormatError(f"{path} is not a cdpnb Parquet trace: {exc}") from None
    meta = (schema.metadata or {}).get(PARQUET_KEY)
    if meta is None:
        raise TraceFormatError(f"{path} is a Parquet file without cdpnb trace metadata "
                               f"(no {PARQUET_KEY.decode()!r} key); write it with "
                               "Trace.to_parquet")
    about = json.loads(meta)
    if about.get("version", 0) > PARQUET_VERSION:
        raise TraceFormatError(f"{path} is cdpnb Parquet trace version {about['version']}; "
                               f"this cdpnb reads up to {PARQUET_VERSION} (upgrade cdpnb)")
    names = ["kind", "id", "method", "session_id", "payload", "params", "wall", "mono"]
    missing = [name for name in names if name not in schema.names]
    if missing:
        raise TraceFormatError(f"{path} has cdpnb trace metadata but lacks columns {missing}")
    table = pq.read_table(path, columns=names)
    loads = json.loads
    records: list[Record] = []
    columns = [_column_values(table.column(name)) for name in names]
    with _gc_paused():
        for row, (kind, cid, method, session, body, params, wall, mono) in enumerate(
                zip(*columns, strict=True)):
            build = _BUILDERS.get(kind)
            if build is None:
                raise TraceFormatError(f"{path} row {row}: unknown record kind {kind!r}")
            records.append(build(cid, method, session, loads(body),
                                 loads(params) if params is not None else {}, wall, mono))
    return Trace(about.get("header") or {}, records, about.get("footer"),
                 about.get("problems") or (), path)
