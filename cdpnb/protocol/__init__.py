"""Sans-I/O protocol cores (the Chrome DevTools Protocol, WebDriver BiDi, WebDriver
classic's plans, the WebKit Inspector Protocol) and each protocol's spec: no sockets, no
event loop."""

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
from cdpnb.protocol.specs import (
    PROTOCOL_SPECS,
    ProtocolName,
    ProtocolSpec,
    protocol_spec,
    recorded_protocol,
)

#: Either protocol's sans-I/O connection: the same contract, chosen per endpoint.
Connection = CDPConnection | BiDiConnection

__all__ = [
    "CONNECTED",
    "DISCONNECTED",
    "PROTOCOL_SPECS",
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
    "ProtocolName",
    "ProtocolSpec",
    "Received",
    "Reply",
    "TransportFault",
    "bidi_error_name",
    "bidi_wire",
    "error_of",
    "opens_connection",
    "parse_command",
    "protocol_spec",
    "recorded_protocol",
    "wire_text",
]
