"""Sans-I/O Chrome DevTools Protocol core: no sockets, no event loop."""

from cdpnb.protocol.codec import (
    CONNECTED,
    DISCONNECTED,
    CommandFrame,
    InvalidCommand,
    opens_connection,
    parse_command,
    wire_text,
)
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
    "CONNECTED",
    "DISCONNECTED",
    "CDPConnection",
    "Command",
    "CommandFrame",
    "ErrorReply",
    "Event",
    "Fault",
    "InvalidCommand",
    "Message",
    "Note",
    "Received",
    "Reply",
    "TransportFault",
    "error_of",
    "opens_connection",
    "parse_command",
    "wire_text",
]
