"""The transport seam: what the supervisor needs from a connection, and nothing more.

The supervisor takes a ``Connector`` by injection. The default opens a WebSocket with
its own reader thread (``connect_websocket``, ``cdpnb.transport.wire``);
``cdpnb.testing.ScriptedBrowser`` hands it an in-memory peer instead, so a race a
browser only produces by timing can be played exactly.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Protocol

__all__ = ["Connector", "Transport", "connect_websocket"]


class Transport(Protocol):
    """One open CDP connection. ``send`` is called from any thread; ``start`` hands
    received frames, in order and in batches, to ``on_frames`` (on whatever thread
    receives them) and the reason to ``on_closed`` once the connection ends."""

    url: str

    def start(self, on_frames: Callable[[Sequence[str | bytes]], None],
              on_closed: Callable[[str], None]) -> None: ...

    def send(self, data: bytes) -> None:
        """Write one frame; ``ConnectionLost`` when the connection is gone."""

    def fail(self, code: int, reason: str) -> None:
        """End the connection over bad input (a WebSocket close code and reason)."""

    def close(self) -> None:
        """End the connection (blocking, briefly: run it off an event loop)."""

    @property
    def close_reason(self) -> str:
        """Why the connection ended, in words."""


#: ``await connector(url, timeout)`` opens a Transport to ``url`` (EndpointError if not).
Connector = Callable[[str, float], Awaitable[Transport]]


async def connect_websocket(url: str, timeout: float) -> Transport:
    """Resolve ``url`` (``http://host:port`` via ``/json/version``) and open its WebSocket."""
    from cdpnb.transport.discovery import resolve_ws_url
    from cdpnb.transport.wire import WireSocket

    ws_url = await resolve_ws_url(url, timeout)
    return await asyncio.to_thread(WireSocket.open, ws_url, timeout)
