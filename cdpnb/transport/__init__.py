"""I/O: the CDP WebSocket client and endpoint discovery."""

from cdpnb.transport.base import Connector, Transport, connect_websocket
from cdpnb.transport.discovery import fetch_json, get_json, redact, resolve_ws_url
from cdpnb.transport.wire import WireSocket

__all__ = ["Connector", "Transport", "WireSocket", "connect_websocket", "fetch_json",
           "get_json", "redact", "resolve_ws_url"]
