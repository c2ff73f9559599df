"""A thin asyncio WebSocket client for CDP, on ``websockets``."""

from __future__ import annotations

from collections.abc import AsyncIterator

import websockets
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidURI

from cdpnb.errors import ConnectionLost, EndpointError
from cdpnb.transport.discovery import redact

__all__ = ["MAX_MESSAGE_BYTES", "WebSocketTransport"]

#: CDP replies can be large (screenshots, DOM snapshots) but not unbounded.
MAX_MESSAGE_BYTES = 256 * 1024 * 1024


class WebSocketTransport:
    """One CDP WebSocket: ``send`` text, iterate received frames, ``close``."""

    def __init__(self, ws: ClientConnection, url: str) -> None:
        self._ws = ws
        self.url = url

    @classmethod
    async def connect(cls, url: str, *, timeout: float = 10.0) -> WebSocketTransport:
        try:
            ws = await connect(
                url,
                max_size=MAX_MESSAGE_BYTES,
                compression=None,
                # Chromium does not ping; a busy renderer must not look like a dead link.
                ping_interval=None,
                open_timeout=timeout,
                close_timeout=2.0,
            )
        except InvalidURI as exc:
            raise EndpointError(f"not a WebSocket URL: {redact(url)!r}") from exc
        except (OSError, InvalidHandshake, TimeoutError) as exc:
            raise EndpointError(
                f"cannot open CDP WebSocket {redact(url)}: {type(exc).__name__}: {exc}"
            ) from None
        return cls(ws, url)

    async def send(self, text: str) -> None:
        try:
            await self._ws.send(text)
        except ConnectionClosed as exc:
            raise ConnectionLost(f"CDP WebSocket closed: {exc}") from None

    async def frames(self) -> AsyncIterator[str | bytes]:
        """Received frames until the far end closes (then the iterator ends)."""
        try:
            async for frame in self._ws:
                yield frame
        except ConnectionClosed:
            return

    @property
    def close_reason(self) -> str:
        code = self._ws.close_code
        if code is None or code == 1006:
            return "connection dropped"
        reason = self._ws.close_reason
        return f"closed (code {code}{': ' + reason if reason else ''})"

    async def close(self) -> None:
        await self._ws.close()


_ = websockets  # the package is a runtime dependency; keep the import explicit
