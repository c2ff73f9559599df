"""Sans-I/O protocol cores (the Chrome DevTools Protocol, WebDriver BiDi): no sockets,
no event loop."""

from cdpnb.protocol.bidi import BiDiConnection, bidi_error_name, bidi_wire
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

#: Either protocol's sans-I/O connection: the same contract, chosen per endpoint.
Connection = CDPConnection | BiDiConnection

__all__ = [
    "CONNECTED",
    "DISCONNECTED",
    "BiDiConnection",
    "CDPConnection",
    "Command",
    "CommandFrame",
    "Connection",
    "ErrorReply",
    "Event",
    "Fault",
    "InvalidCommand",
    "Message",
    "Note",
    "Received",
    "Reply",
    "TransportFault",
    "bidi_error_name",
    "bidi_wire",
    "error_of",
    "opens_connection",
    "parse_command",
    "wire_text",
]
