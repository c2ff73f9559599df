"""I/O: the CDP WebSocket client and endpoint discovery."""

from cdpnb.transport.base import Connector, Transport, connect_websocket
from cdpnb.transport.discovery import fetch_json, get_json, redact, resolve_ws_url
from cdpnb.transport.websocket import WebSocketTransport

__all__ = ["Connector", "Transport", "WebSocketTransport", "connect_websocket", "fetch_json",
           "get_json", "redact", "resolve_ws_url"]
