"""The trace line format: one JSON object per CDP message, and back.

Version 1. The first line is a header (``{"cdpnb_trace": 1, ...}``); every other
line is one message::

    {"t": <monotonic s>, "wall": <epoch s>, "dir": "send" | "recv" | "note" | "fault",
     "sessionId": ..., "id": ..., "method": ...,
     "params" | "result" | "error": ...}

``send`` is a command we sent; ``recv`` a reply (with ``id``, and the ``method`` it
answers for convenience) or an event; ``note`` one of cdpnb's own ``cdpnb.*``
decisions; ``fault`` a frame the protocol refused (kind, detail, an excerpt). The
last line of a closed trace is a footer (``{"cdpnb_trace_end": 1, "counts": ...}``).

Pure functions, no I/O: the recorder and the reader share them.
"""

from __future__ import annotations

import json
from collections.abc import Collection
from typing import Any

from cdpnb.protocol import Command, ErrorReply, Event, Fault, Message, Note, Reply

__all__ = [
    "TRACE_VERSION",
    "LineDecoder",
    "TraceFormatError",
    "decode_record",
    "dumps",
    "encode",
    "footer",
    "header",
]

TRACE_VERSION = 1

Record = Message | Fault


class TraceFormatError(ValueError):
    """A file that is not a cdpnb trace, or a line in one that cannot be read."""


def header(
    *,
    started_at: float,
    started_mono: float,
    cdpnb_version: str,
    endpoint: str | None = None,
    backend: dict[str, Any] | None = None,
    browser: dict[str, Any] | None = None,
    redacted: Collection[str] = (),
    meta: dict[str, Any] | None = None,
) -> dict[str, Any]:
    return {
        "cdpnb_trace": TRACE_VERSION,
        "cdpnb": cdpnb_version,
        "started_at": started_at,
        "started_mono": started_mono,
        "endpoint": endpoint,
        "backend": backend,
        "browser": browser,
        "redacted": sorted(redacted),
        "meta": meta or {},
    }


def footer(*, ended_at: float, counts: dict[str, int]) -> dict[str, Any]:
    return {"cdpnb_trace_end": TRACE_VERSION, "ended_at": ended_at, "counts": counts}


# ASCII escapes keep every line valid UTF-8, whatever the page sent: a lone surrogate
# from JS ('\ud800') cannot be written as UTF-8 and would be lost. One encoder for
# every line: json.dumps with options builds a new one per call, a cost per message.
_ENCODER = json.JSONEncoder(separators=(",", ":"), ensure_ascii=True, default=repr)


def dumps(obj: dict[str, Any]) -> str:
    return _ENCODER.encode(obj)


def encode(record: Record) -> str:
    """One line of JSON (no newline) for ``record``."""
    line: dict[str, Any] = {"t": record.mono, "wall": record.wall}
    kind = type(record)
    if kind is Event or kind is Note:
        assert isinstance(record, Event | Note)
        line["dir"] = "recv" if kind is Event else "note"
        if record.session_id is not None:
            line["sessionId"] = record.session_id
        line["method"] = record.method
        line["params"] = record.params
    elif kind is Command:
        assert isinstance(record, Command)
        line["dir"] = "send"
        if record.session_id is not None:
            line["sessionId"] = record.session_id
        line["id"] = record.id
        line["method"] = record.method
        line["params"] = record.params
    elif kind is Reply or kind is ErrorReply:
        assert isinstance(record, Reply | ErrorReply)
        line["dir"] = "recv"
        if record.session_id is not None:
            line["sessionId"] = record.session_id
        line["id"] = record.id
        line["method"] = record.method
        if isinstance(record, Reply):
            line["result"] = record.result
        else:
            line["error"] = record.error
    elif kind is Fault:
        assert isinstance(record, Fault)
        line["dir"] = "fault"
        line["fault"] = record.kind
        line["detail"] = record.detail
        line["raw"] = record.raw
    else:
        raise TypeError(f"cannot encode {kind.__name__} as a trace line")
    return dumps(line)


def _number(line: dict[str, Any], key: str, where: str) -> float:
    value = line.get(key)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TraceFormatError(f"{where}: '{key}' must be a number, got {value!r}")
    return float(value)


def _text(line: dict[str, Any], key: str, where: str) -> str:
    value = line.get(key)
    if not isinstance(value, str):
        raise TraceFormatError(f"{where}: '{key}' must be a string, got {value!r}")
    return value


def _object(line: dict[str, Any], key: str, where: str) -> dict[str, Any]:
    value = line.get(key, {})
    if not isinstance(value, dict):
        raise TraceFormatError(f"{where}: '{key}' must be an object, got {type(value).__name__}")
    return value


def _session(line: dict[str, Any], where: str) -> str | None:
    value = line.get("sessionId")
    if value is not None and not isinstance(value, str):
        raise TraceFormatError(f"{where}: 'sessionId' must be a string, got {value!r}")
    return value


def _id(line: dict[str, Any], where: str) -> int:
    value = line.get("id")
    if isinstance(value, bool) or not isinstance(value, int):
        raise TraceFormatError(f"{where}: 'id' must be an integer, got {value!r}")
    return value


class LineDecoder:
    """Turns message lines back into protocol messages, in order.

    Replies carry the params of the command they answer (as they do live), so the
    decoder remembers commands by id; ids restart with each connection, which the
    ``cdpnb.connected`` note marks.
    """

    def __init__(self) -> None:
        self._commands: dict[int, Command] = {}

    def decode(self, line: dict[str, Any], where: str) -> Record:
        mono = _number(line, "t", where)
        wall = _number(line, "wall", where)
        direction = line.get("dir")
        if direction == "send":
            cmd = Command(_id(line, where), _text(line, "method", where),
                          _object(line, "params", where), _session(line, where), wall, mono)
            self._commands[cmd.id] = cmd
            return cmd
        if direction == "recv":
            if "id" in line:
                return self._reply(line, where, wall, mono)
            return Event(_text(line, "method", where), _object(line, "params", where),
                         _session(line, where), wall, mono)
        if direction == "note":
            note = Note(_text(line, "method", where), _object(line, "params", where),
                        _session(line, where), wall, mono)
            if note.method == "cdpnb.connected":
                self._commands.clear()
            return note
        if direction == "fault":
            return Fault(_text(line, "fault", where), str(line.get("detail", "")),
                         str(line.get("raw", "")), wall, mono)
        raise TraceFormatError(f"{where}: 'dir' must be send, recv, note or fault, "
                               f"got {direction!r}")

    def _reply(self, line: dict[str, Any], where: str, wall: float, mono: float) -> Record:
        cid = _id(line, where)
        cmd = self._commands.pop(cid, None)
        method = line.get("method")
        if not isinstance(method, str):
            method = cmd.method if cmd is not None else ""
        params = cmd.params if cmd is not None else {}
        session = _session(line, where)
        if "error" in line:
            error = _object(line, "error", where)
            code = error.get("code", -1)
            return ErrorReply(cid, method, code if isinstance(code, int) else -1,
                              str(error.get("message", "")), error.get("data"), session,
                              params, wall, mono)
        return Reply(cid, method, _object(line, "result", where), session, params, wall, mono)


def decode_record(text: str, where: str, decoder: LineDecoder) -> Record | dict[str, Any]:
    """A message, or the footer dict; TraceFormatError says what is wrong and where."""
    try:
        line = json.loads(text)
    except ValueError as exc:
        raise TraceFormatError(f"{where}: not JSON ({exc})") from None
    if not isinstance(line, dict):
        raise TraceFormatError(f"{where}: expected a JSON object, got {type(line).__name__}")
    if "cdpnb_trace_end" in line:
        return line
    return decoder.decode(line, where)
