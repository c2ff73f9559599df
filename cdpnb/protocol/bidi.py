"""Sans-I/O WebDriver BiDi connection: ids, serialisation and reply matching.

The same contract as :class:`~cdpnb.protocol.connection.CDPConnection` (``command``
returns a command and its wire text; ``receive`` turns one frame into a message or a
fault, never raising), so the supervisor's core, the recorder and the reducers take
either. BiDi messages become the same message types:

* ``{"type": "success", "id", "result"}`` → :class:`Reply`;
* ``{"type": "error", "id", "error", "message"}`` → :class:`ErrorReply` with the
  BiDi error name in ``data["error"]`` and a JSON-RPC-style ``code`` (table below),
  so "unknown command" reads like CDP's -32601 everywhere cdpnb checks capabilities;
* ``{"type": "event", "method", "params"}`` → :class:`Event`.

BiDi has no sessions on the wire: the browsing context travels in ``params``, so every
message's ``session_id`` is None. An error without an ``id`` (a frame the remote end
could not parse) is a fault.
"""

from __future__ import annotations

from typing import Any

from cdpnb.errors import CDPError
from cdpnb.protocol.codec import loads
from cdpnb.protocol.connection import CommandBook, Received
from cdpnb.protocol.messages import Command, ErrorReply, Event, Reply, TransportFault

__all__ = ["BIDI_ERROR_CODES", "BiDiConnection", "bidi_error_name", "bidi_wire", "error_reply",
           "is_bidi_message"]

#: BiDi error names → the JSON-RPC codes CDP uses for the same thing; others -32000.
BIDI_ERROR_CODES: dict[str, int] = {
    "unknown command": -32601,
    "unsupported operation": -32601,
    "invalid argument": -32602,
}
GENERIC_ERROR = -32000
#: Command ids are JS numbers on the remote end: keep them exact.
MAX_ID = 2**53 - 1


def bidi_error_name(error: ErrorReply | CDPError) -> str | None:
    """The BiDi error name of an error reply or its CDPError (``"no such alert"``);
    None for CDP's."""
    data = error.data
    if isinstance(data, dict) and isinstance(data.get("error"), str):
        return str(data["error"])
    return None


def bidi_wire(message: Reply | ErrorReply | Event) -> dict[str, Any]:
    """The BiDi wire object of a received message (for a replay that serves BiDi)."""
    if isinstance(message, Event):
        return {"type": "event", "method": message.method, "params": message.params}
    if isinstance(message, Reply):
        return {"type": "success", "id": message.id, "result": message.result}
    name = bidi_error_name(message) or "unknown error"
    detail = message.message.removeprefix(name).removeprefix(": ")
    return {"type": "error", "id": message.id, "error": name, "message": detail}


def is_bidi_message(msg: dict[str, Any]) -> bool:
    """Whether a received wire object is BiDi's (CDP's have no ``type``)."""
    return msg.get("type") in ("success", "error", "event")


def error_reply(msg: dict[str, Any], cid: int, method: str, params: dict[str, Any],
                wall: float, mono: float) -> ErrorReply:
    """The ErrorReply of a BiDi ``{"type": "error", ...}`` answering ``method``."""
    name = msg.get("error")
    name = name if isinstance(name, str) else "unknown error"
    detail = msg.get("message")
    # "no such alert", or "no such frame: Browsing Context with id 7 not found"
    text = f"{name}: {detail}" if isinstance(detail, str) and detail else name
    return ErrorReply(cid, method, BIDI_ERROR_CODES.get(name, GENERIC_ERROR), text,
                      {"error": name}, None, params, wall, mono)


class BiDiConnection(CommandBook):
    """One BiDi WebSocket's protocol state: pending commands by id."""

    protocol = "bidi"

    METHOD_SHAPE = "'module.command' (e.g. 'browsingContext.navigate')"

    # -- sending -------------------------------------------------------------------

    def _check_session(self, method: str, session_id: str | None) -> None:
        if session_id is not None:
            raise ValueError(f"{method}: WebDriver BiDi has no sessions on the wire; name the "
                             "browsing context in params instead of a session_id")

    def _frame(self, command_id: int, method: str, params: dict[str, Any],
               session_id: str | None) -> dict[str, Any]:
        return {"id": command_id, "method": method, "params": params}

    def take_orphans(self) -> list[tuple[Command, str]]:
        """Nothing is orphaned in BiDi: a command on a context that went gets an error."""
        return []

    @property
    def sessions(self) -> dict[str, str | None]:
        return {}

    def knows_session(self, session_id: str | None) -> bool:
        return session_id is None

    # -- receiving -----------------------------------------------------------------

    def receive(self, data: str | bytes | bytearray | memoryview, *, wall: float = 0.0,
                mono: float = 0.0) -> Received:
        """Parse one frame from the remote end. Never raises: bad input becomes a Fault."""
        if isinstance(data, TransportFault):
            return self._fault(data.kind, data.detail, bytes(data), wall, mono)
        try:
            msg = self._read_own_way(data)
            if msg is None:
                msg = loads(data)
        except (ValueError, RecursionError) as exc:
            return self._fault("malformed-json", str(exc), data, wall, mono)
        if not isinstance(msg, dict):
            return self._fault("not-an-object", type(msg).__name__, data, wall, mono)
        kind = msg.get("type")
        if kind == "event":
            method, params = msg.get("method"), msg.get("params", {})
            if not isinstance(method, str):
                return self._fault("no-method", "an event without a string 'method'", data,
                                   wall, mono)
            if not isinstance(params, dict):
                return self._fault("bad-params", f"{method}: params is not an object", data,
                                   wall, mono)
            return Event(method, params, None, wall, mono)
        if kind in ("success", "error"):
            return self._reply(msg, kind, data, wall, mono)
        return self._fault("no-type", f"'type' must be success, error or event, got "
                           f"{str(kind)[:40]!r}", data, wall, mono)

    def _reply(self, msg: dict[str, Any], kind: str, raw: str | bytes | bytearray | memoryview,
               wall: float, mono: float) -> Received:
        cid = msg.get("id")
        if cid is None and kind == "error":
            # The remote end could not read one of our frames well enough to know its id.
            return self._fault("error-without-id", f"{msg.get('error')}: {msg.get('message')}",
                               raw, wall, mono)
        if not isinstance(cid, int) or isinstance(cid, bool) or not 0 <= cid <= MAX_ID:
            return self._fault("bad-id", repr(cid)[:40], raw, wall, mono)
        cmd = self._answered(cid)
        if cmd is None:
            return self._fault("unknown-id", f"reply to id {cid} that was never sent", raw,
                               wall, mono)
        if kind == "error":
            return error_reply(msg, cid, cmd.method, cmd.params, wall, mono)
        result = msg.get("result", {})
        if not isinstance(result, dict):
            return self._fault("bad-result", f"{cmd.method}: result is not an object", raw,
                               wall, mono)
        return Reply(cid, cmd.method, result, None, cmd.params, wall, mono)
