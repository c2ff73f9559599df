"""The messages that flow through cdpnb: plain frozen dataclasses, cheap to build.

Every message carries the wall-clock time it was sent or received (``wall``) and
the monotonic time (``mono``): reducers read time from the message, never from a
clock, so folding a recorded trace gives the same state as the live run.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "Command",
    "ErrorReply",
    "Event",
    "Fault",
    "Message",
    "Note",
    "Reply",
    "TransportFault",
]

JSON = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Command:
    """A command we sent (``direction == "send"``)."""

    id: int
    method: str
    params: JSON = field(default_factory=dict)
    session_id: str | None = None
    wall: float = 0.0
    mono: float = 0.0


@dataclass(frozen=True, slots=True)
class Reply:
    """A successful reply, matched to the command it answers."""

    id: int
    method: str
    result: JSON
    session_id: str | None = None
    params: JSON = field(default_factory=dict)
    wall: float = 0.0
    mono: float = 0.0


@dataclass(frozen=True, slots=True)
class ErrorReply:
    """An ``error`` reply, matched to the command it answers."""

    id: int
    method: str
    code: int
    message: str
    data: Any = None
    session_id: str | None = None
    params: JSON = field(default_factory=dict)
    wall: float = 0.0
    mono: float = 0.0

    @property
    def error(self) -> JSON:
        """The wire ``error`` object: code, message, and data when there is any."""
        error: JSON = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error


@dataclass(frozen=True, slots=True)
class Event:
    """A CDP event from the browser."""

    method: str
    params: JSON
    session_id: str | None = None
    wall: float = 0.0
    mono: float = 0.0


@dataclass(frozen=True, slots=True)
class Note:
    """cdpnb's own annotation (``cdpnb.*``): what we decided, folded like an event.

    Notes make decisions that CDP does not carry (who answered a dialog, that the
    connection dropped) part of the message stream, so replay sees them too.
    """

    method: str
    params: JSON
    session_id: str | None = None
    wall: float = 0.0
    mono: float = 0.0


@dataclass(frozen=True, slots=True)
class Fault:
    """Input the protocol could not accept: returned (the state's fold counts it), never raised."""

    kind: str
    detail: str
    raw: str = ""
    wall: float = 0.0
    mono: float = 0.0


Message = Command | Reply | ErrorReply | Event | Note


class TransportFault(bytes):
    """A frame the transport refused (too big, not UTF-8), passed on in its frame stream.

    A ``bytes`` subclass so that it travels down the transport's ``str | bytes`` stream,
    in order with the frames around it, to ``CDPConnection.receive``, which counts and
    reports it like any other bad input. Its bytes are an excerpt of the payload, if any.
    """

    kind: str
    detail: str

    def __new__(cls, kind: str, detail: str, excerpt: bytes = b"") -> TransportFault:
        fault = super().__new__(cls, excerpt)
        fault.kind = kind
        fault.detail = detail
        return fault

    def __repr__(self) -> str:
        return f"TransportFault({self.kind!r}, {self.detail!r})"
