"""The transport seam: what the supervisor needs from a connection, and nothing more.

The supervisor takes a ``Connector`` by injection. The default opens a WebSocket
(``connect_websocket``); ``cdpnb.testing.ScriptedBrowser`` hands it an in-memory
peer instead, so a race a browser only produces by timing can be played exactly.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Protocol

__all__ = ["Connector", "Transport", "connect_websocket"]


class Transport(Protocol):
    """One open CDP connection."""

    async def send(self, text: str) -> None:
        """Write one frame; ``ConnectionLost`` when the connection is gone."""

    def frames(self) -> AsyncIterator[str | bytes]:
        """Received frames in order until the connection closes (then it ends)."""

    async def close(self) -> None: ...

    @property
    def close_reason(self) -> str:
        """Why the connection ended, in words."""


#: ``await connector(url, timeout)`` opens a Transport to ``url`` (EndpointError if not).
Connector = Callable[[str, float], Awaitable[Transport]]


async def connect_websocket(url: str, timeout: float) -> Transport:
    """Resolve ``url`` (``http://host:port`` via ``/json/version``) and open its WebSocket."""
    from cdpnb.transport.discovery import resolve_ws_url
    from cdpnb.transport.websocket import WebSocketTransport

    ws_url = await resolve_ws_url(url, timeout)
    return await WebSocketTransport.connect(ws_url, timeout=timeout)
