"""I/O: the WebSocket (CDP or WebDriver BiDi) and endpoint discovery."""

from cdpnb.transport.base import Connector, Transport, connect_websocket
from cdpnb.transport.discovery import fetch_json, get_json, resolve_ws_url
from cdpnb.transport.wire import WireSocket

__all__ = ["Connector", "Transport", "WireSocket", "connect_websocket", "fetch_json",
           "get_json", "resolve_ws_url"]
