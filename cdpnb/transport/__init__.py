"""I/O: the CDP WebSocket client and endpoint discovery."""

from cdpnb.transport.discovery import fetch_json, get_json, redact, resolve_ws_url
from cdpnb.transport.websocket import WebSocketTransport

__all__ = ["WebSocketTransport", "fetch_json", "get_json", "redact", "resolve_ws_url"]
