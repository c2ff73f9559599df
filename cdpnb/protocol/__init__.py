"""Sans-I/O Chrome DevTools Protocol core: no sockets, no event loop."""

from cdpnb.protocol.connection import CDPConnection, Received, error_of
from cdpnb.protocol.messages import (
    Command,
    ErrorReply,
    Event,
    Fault,
    Message,
    Note,
    Reply,
    TransportFault,
)

__all__ = [
    "CDPConnection",
    "Command",
    "ErrorReply",
    "Event",
    "Fault",
    "Message",
    "Note",
    "Received",
    "Reply",
    "TransportFault",
    "error_of",
]
