"""Wire text for CDP messages, both ways, and the rules every reader and writer shares.

Pure functions, no I/O. The live sender (:class:`cdpnb.protocol.CDPConnection`) and the
replay endpoint's sender both write with :func:`wire_text`; the replay endpoint reads a
client's command with :func:`parse_command`; the trace reader, the replay script and the
trace tables cut a recording into connections with :func:`opens_connection`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import msgspec

from cdpnb.protocol.messages import Note

__all__ = [
    "CONNECTED",
    "DISCONNECTED",
    "CommandFrame",
    "InvalidCommand",
    "loads",
    "opens_connection",
    "parse_command",
    "wire_text",
]

#: cdpnb's notes that open and close one connection (one WebSocket) in a recording.
#: Command ids restart with every connection, so ids are unique only between two
#: ``CONNECTED`` notes: the connection-epoch rule.
CONNECTED = "cdpnb.connected"
DISCONNECTED = "cdpnb.disconnected"

# Made once: json.dumps with options builds a new encoder per call.
_ASCII = json.JSONEncoder(separators=(",", ":"), ensure_ascii=True)
_ENCODE = msgspec.json.Encoder().encode
_DECODE = msgspec.json.Decoder().decode


def loads(data: str | bytes | bytearray | memoryview) -> Any:
    """JSON text (or its UTF-8 bytes) as Python values: msgspec's fast parser, exact for
    integers of any size; what it refuses (a lone surrogate escape such as ``\\ud800``,
    which JavaScript strings may hold) goes to the standard library, which reads it as
    Python does. ValueError (UnicodeDecodeError included) or RecursionError when the
    text is not JSON."""
    try:
        return _DECODE(data)
    except ValueError:
        return json.loads(data if isinstance(data, str | bytes | bytearray) else bytes(data))


def wire_text(message: dict[str, Any]) -> str:
    """``message`` as one WebSocket text frame: compact JSON, UTF-8 where it can be.

    A lone surrogate (page text such as ``'\\ud800'`` from JS, echoed back in a prompt
    answer or recorded in a trace) has no UTF-8 form and would fail in the socket's
    encoder; such a message goes out with JSON ``\\u`` escapes instead, which every
    CDP peer reads back to the same string. (Chromium 156 itself puts U+FFFD in place
    of lone surrogates in what it reads; that is its business, not the wire's.)
    """
    try:
        return _ENCODE(message).decode("utf-8")
    except UnicodeEncodeError:
        return _ASCII.encode(message)


def opens_connection(message: object) -> bool:
    """True for the note that starts a new connection (and a new run of command ids)."""
    return type(message) is Note and message.method == CONNECTED


@dataclass(frozen=True, slots=True)
class CommandFrame:
    """A client's command, read from the wire and checked."""

    id: int
    method: str
    params: dict[str, Any]
    session_id: str | None


@dataclass(frozen=True, slots=True)
class InvalidCommand:
    """A frame that is not a usable command, with the error reply a browser would send.

    ``id`` is the frame's integer id when it had one (the reply carries it back), else
    None. Codes and messages follow Chromium 156's own (measured): -32700 for text that
    is not JSON, -32600 for a message that is not a command, -32602 for params that are
    not an object.
    """

    code: int
    message: str
    id: int | None = None
    session_id: str | None = None

    def reply(self) -> dict[str, Any]:
        reply: dict[str, Any] = {}
        if self.id is not None:
            reply["id"] = self.id
        reply["error"] = {"code": self.code, "message": self.message}
        if self.session_id is not None:
            reply["sessionId"] = self.session_id
        return reply


def parse_command(frame: str | bytes) -> CommandFrame | InvalidCommand:
    """Read one client frame as a command; never raises.

    Chromium 156 (measured): ``params: null`` is no params; a missing, non-integer or
    boolean ``id`` gets an error without an id; a non-string ``method`` or a
    ``sessionId`` that is not a string (``null`` included) gets -32600 with the id.
    """
    try:
        msg = loads(frame)
    except (ValueError, RecursionError) as exc:
        # ValueError covers bytes that are not UTF-8 (UnicodeDecodeError) too.
        return InvalidCommand(-32700, f"not JSON: {exc}")
    if not isinstance(msg, dict):
        return InvalidCommand(-32600, "Message must be an object")
    cid = msg.get("id")
    if not isinstance(cid, int) or isinstance(cid, bool):
        return InvalidCommand(-32600, "Message must have integer 'id' property")
    method = msg.get("method")
    if not isinstance(method, str):
        return InvalidCommand(-32600, "Message must have string 'method' property", cid)
    session: Any = msg.get("sessionId", None)
    if "sessionId" in msg and not isinstance(session, str):
        return InvalidCommand(-32600, "Message may have string 'sessionId' property", cid)
    params = msg.get("params")
    if params is None:
        params = {}
    if not isinstance(params, dict):
        return InvalidCommand(-32602, f"Invalid parameters: {method} params must be an "
                                      f"object, got {type(params).__name__}", cid, session)
    return CommandFrame(cid, method, params, session)
