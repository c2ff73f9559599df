"""The trace line format: one JSON object per CDP message, and back.

Version 2 (written now). The first line is a header (``{"cdpnb_trace": 2, "protocol":
"cdp", ...}``); every other line is one message, the wire message itself inside::

    {"seq": <1, 2, ...>, "t": <monotonic s>, "wall": <epoch s>,
     "dir": "send" | "recv" | "note", "msg": <the message as it went over the wire>}
    {"seq": ..., "t": ..., "wall": ..., "dir": "fault", "fault": <kind>,
     "detail": ..., "raw": <an excerpt>}

``send`` is a command we sent and ``recv`` a reply or an event, each exactly as the
wire carried it (the recorder writes the received bytes as they are: no re-encoding,
so recording costs what writing costs); ``note`` is one of cdpnb's own ``cdpnb.*``
decisions (``{"method", "params", "sessionId"}``); ``fault`` a frame the protocol
refused. ``seq`` numbers the lines, so a line lost or repeated shows. A reply's method
is its command's (same id, since the last ``cdpnb.connected`` note). The last line of
a closed trace is a footer (``{"cdpnb_trace_end": 2, "counts": ...}``).

Version 1 (still read): the same without ``seq`` and ``msg``: ``sessionId``, ``id``,
``method`` and ``params`` | ``result`` | ``error`` on the line itself, a reply with the
method it answers.

Pure functions, no I/O: the recorder and the reader share them.
"""

from __future__ import annotations

import json
import math
from collections.abc import Collection
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from cdpnb.protocol import (
    Command,
    ErrorReply,
    Event,
    Fault,
    Message,
    Note,
    Reply,
    opens_connection,
)
from cdpnb.protocol.bidi import error_reply, is_bidi_message
from cdpnb.protocol.deep_values import as_json
from cdpnb.trace.replies import ReplyMatcher

__all__ = [
    "INT_MAX",
    "INT_MIN",
    "READABLE_VERSIONS",
    "TRACE_VERSION",
    "WALL_MAX",
    "WALL_MIN",
    "BackendInfo",
    "BrowserInfo",
    "LineDecoder",
    "TraceFooter",
    "TraceFormatError",
    "TraceHeader",
    "check_fields",
    "decode_record",
    "dumps",
    "encode",
    "footer",
    "header",
    "verbatim_tail",
    "wire_message",
]

TRACE_VERSION = 2
#: The versions this cdpnb reads.
READABLE_VERSIONS = (1, 2)

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
        "protocol": "cdp",
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


# -- header and footer, checked at load ---------------------------------------------------

#: Wall times a trace may hold: what a datetime64[ns] column can show (1970 to 2262).
WALL_MIN = 0.0
WALL_MAX = 9_223_372_036.0

WallTime = Annotated[float, Field(ge=WALL_MIN, le=WALL_MAX)]


class _Checked(BaseModel):
    # Unknown fields are kept (a newer cdpnb may add some); known ones must have their
    # type exactly: strict, so "12" is not a number and true is not a count.
    model_config = ConfigDict(extra="allow", strict=True, allow_inf_nan=False, frozen=True)


class BackendInfo(_Checked):
    kind: str | None = None
    version: str | None = None
    cdp_url: str | None = None


class BrowserInfo(_Checked):
    """``/json/version`` as the browser answered it."""

    Browser: str | None = None


class TraceHeader(_Checked):
    """Line 1 of a trace. Only the version is required (hand-made traces have little)."""

    cdpnb_trace: int
    protocol: str = "cdp"
    cdpnb: str = ""
    started_at: WallTime | None = None
    started_mono: float | None = None
    endpoint: str | None = None
    backend: BackendInfo | None = None
    browser: BrowserInfo | None = None
    redacted: list[str] = Field(default_factory=list)
    meta: dict[str, Any] = Field(default_factory=dict)


class TraceFooter(_Checked):
    """The last line of a trace closed cleanly: when, and how many lines of each kind."""

    cdpnb_trace_end: int
    ended_at: WallTime | None = None
    counts: dict[str, Annotated[int, Field(ge=0)]] = Field(default_factory=dict)


def check_fields(model: type[BaseModel], data: dict[str, Any],
                 where: str) -> tuple[dict[str, Any], list[str]]:
    """``data`` checked against ``model``: the data with every bad top-level field left
    out, and one message per bad field naming ``where`` and the field's path."""
    try:
        model.model_validate(data)
    except ValidationError as exc:
        bad: set[str] = set()
        messages = []
        for error in exc.errors(include_url=False):
            path = ".".join(str(part) for part in error["loc"])
            bad.add(str(error["loc"][0]))
            messages.append(f"{where}: '{path}' {_reason(error['msg'])}, "
                            f"got {_shown(error['input'])}")
        return {k: v for k, v in data.items() if k not in bad}, messages
    return data, []


def _reason(msg: str) -> str:
    # pydantic says "Input should be a valid string"; the field is named already.
    return "must" + msg.removeprefix("Input").removeprefix(" should")


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


# ASCII escapes keep every line valid UTF-8, whatever the page sent: a lone surrogate
# from JS ('\ud800') cannot be written as UTF-8 and would be lost. One encoder for
# every line: json.dumps with options builds a new one per call, a cost per message.
_ENCODER = json.JSONEncoder(separators=(",", ":"), ensure_ascii=True, default=as_json)


def dumps(obj: dict[str, Any]) -> str:
    return _ENCODER.encode(obj)


def wire_message(record: Message) -> tuple[str, dict[str, Any]]:
    """(direction, the message as the wire carries it) for ``record``."""
    kind = type(record)
    msg: dict[str, Any]
    if kind is Event or kind is Note:
        assert isinstance(record, Event | Note)
        msg = {"method": record.method, "params": record.params}
        direction = "recv" if kind is Event else "note"
    elif kind is Command:
        assert isinstance(record, Command)
        msg = {"id": record.id, "method": record.method, "params": record.params}
        direction = "send"
    elif kind is Reply:
        assert isinstance(record, Reply)
        msg = {"id": record.id, "result": record.result}
        direction = "recv"
    elif kind is ErrorReply:
        assert isinstance(record, ErrorReply)
        msg = {"id": record.id, "error": record.error}
        direction = "recv"
    else:
        raise TypeError(f"cannot encode {kind.__name__} as a trace line")
    if record.session_id is not None:
        msg["sessionId"] = record.session_id
    return direction, msg


def encode(record: Record, seq: int = 0) -> str:
    """One version-2 line of JSON (no newline) for ``record``, number ``seq``."""
    line: dict[str, Any] = {"seq": seq, "t": record.mono, "wall": record.wall}
    if type(record) is Fault:
        assert isinstance(record, Fault)
        line["dir"] = "fault"
        line["fault"] = record.kind
        line["detail"] = record.detail
        line["raw"] = record.raw
    else:
        assert not isinstance(record, Fault)
        line["dir"], line["msg"] = wire_message(record)
    return dumps(line)


def verbatim_tail(direction: str, mono: float, wall: float) -> bytes:
    """What a version-2 line holds between its ``seq`` and the message itself, the
    wire JSON as it is: ``{"seq":N`` + this + the message + ``}``. The same for every
    message received in one read, so a recorder makes it once per read."""
    return f',"t":{mono!r},"wall":{wall!r},"dir":"{direction}","msg":'.encode()


def _number(line: dict[str, Any], key: str, where: str) -> float:
    value = line.get(key)
    if isinstance(value, bool) or not isinstance(value, int | float) \
            or not math.isfinite(value):
        raise TraceFormatError(f"{where}: '{key}' must be a finite number, got {value!r}")
    return float(value)


def _wall(line: dict[str, Any], where: str) -> float:
    value = _number(line, "wall", where)
    if not WALL_MIN <= value <= WALL_MAX:
        raise TraceFormatError(f"{where}: 'wall' must be seconds since 1970 up to the year "
                               f"2262, got {value!r}")
    return value


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


#: Command ids and error codes a trace may hold: 64-bit integers (Chromium's are 32-bit).
INT_MIN, INT_MAX = -(2**63), 2**63 - 1


def _integer(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and INT_MIN <= value <= INT_MAX


def _id(line: dict[str, Any], where: str) -> int:
    value: Any = line.get("id")
    if not _integer(value):
        raise TraceFormatError(f"{where}: 'id' must be a 64-bit integer, got {value!r}")
    return int(value)


class LineDecoder:
    """Turns message lines back into protocol messages, in order.

    Replies carry the method and params of the command they answer (as they do live),
    paired by ``ReplyMatcher``'s rule: the latest command with the reply's id since the
    last ``cdpnb.connected`` note.
    """

    def __init__(self) -> None:
        self._commands: ReplyMatcher[Command] = ReplyMatcher()

    def decode(self, line: dict[str, Any], where: str) -> Record:
        mono = _number(line, "t", where)
        wall = _wall(line, where)
        direction = line.get("dir")
        if "msg" in line and direction != "fault":
            # Version 2: the wire message itself.
            msg = _object(line, "msg", where)
            line = {**msg, "dir": direction}
        if direction == "send":
            cmd = Command(_id(line, where), _text(line, "method", where),
                          _object(line, "params", where), _session(line, where), wall, mono)
            self._commands.sent(cmd.id, cmd)
            return cmd
        if direction == "recv":
            if is_bidi_message(line):
                return self._bidi(line, where, wall, mono)
            if "id" in line:
                return self._reply(line, where, wall, mono)
            return Event(_text(line, "method", where), _object(line, "params", where),
                         _session(line, where), wall, mono)
        if direction == "note":
            note = Note(_text(line, "method", where), _object(line, "params", where),
                        _session(line, where), wall, mono)
            if opens_connection(note):
                self._commands.connected()
            return note
        if direction == "fault":
            return Fault(_text(line, "fault", where), str(line.get("detail", "")),
                         str(line.get("raw", "")), wall, mono)
        raise TraceFormatError(f"{where}: 'dir' must be send, recv, note or fault, "
                               f"got {direction!r}")

    def _bidi(self, line: dict[str, Any], where: str, wall: float, mono: float) -> Record:
        """A WebDriver BiDi message (``type`` success, error or event)."""
        if line["type"] == "event":
            return Event(_text(line, "method", where), _object(line, "params", where), None,
                         wall, mono)
        cid = _id(line, where)
        cmd = self._commands.answered(cid)
        method = cmd.method if cmd is not None else ""
        params = cmd.params if cmd is not None else {}
        if line["type"] == "error":
            return error_reply(line, cid, method, params, wall, mono)
        return Reply(cid, method, _object(line, "result", where), None, params, wall, mono)

    def _reply(self, line: dict[str, Any], where: str, wall: float, mono: float) -> Record:
        cid = _id(line, where)
        cmd = self._commands.answered(cid)
        method = line.get("method")
        if not isinstance(method, str):
            method = cmd.method if cmd is not None else ""
        params = cmd.params if cmd is not None else {}
        session = _session(line, where)
        if "error" in line:
            error = _object(line, "error", where)
            code = error.get("code", -1)
            return ErrorReply(cid, method, code if _integer(code) else -1,
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
    if "cdpnb_trace" in line:
        raise TraceFormatError(f"{where}: a second header line (another trace starts here)")
    return decoder.decode(line, where)
