"""A thin asyncio WebSocket client for CDP, on ``websockets``."""

from __future__ import annotations

from collections.abc import AsyncIterator

import websockets
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidURI

from cdpnb.errors import ConnectionLost, EndpointError
from cdpnb.protocol import TransportFault
from cdpnb.transport.discovery import redact

__all__ = ["MAX_MESSAGE_BYTES", "WebSocketTransport"]

#: CDP replies can be large (screenshots, DOM snapshots, response bodies) but not
#: unbounded: a bigger message closes the connection (code 1009). Puppeteer's limit too.
MAX_MESSAGE_BYTES = 256 * 1024 * 1024

#: Close codes with which websockets fails the connection over a message it received:
#: it cannot skip one (and RFC 6455 requires closing on bad UTF-8), so it is reported.
_REFUSALS = {1009: "oversized-message", 1007: "invalid-utf8"}


class WebSocketTransport:
    """One CDP WebSocket: ``send`` text, iterate received frames, ``close``."""

    def __init__(self, ws: ClientConnection, url: str, max_size: int | None = None) -> None:
        self._ws = ws
        self.url = url
        self.max_size = max_size
        self._closed: ConnectionClosed | None = None

    @classmethod
    async def connect(cls, url: str, *, timeout: float = 10.0) -> WebSocketTransport:
        max_size = MAX_MESSAGE_BYTES
        try:
            ws = await connect(
                url,
                max_size=max_size,
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
        return cls(ws, url, max_size)

    async def send(self, text: str) -> None:
        try:
            await self._ws.send(text)
        except ConnectionClosed as exc:
            raise ConnectionLost(f"CDP WebSocket closed: {exc}") from None

    async def frames(self) -> AsyncIterator[str | bytes]:
        """Received frames until the connection closes (then the iterator ends).

        A message the client had to refuse (larger than ``max_size``, a text frame that
        is not UTF-8) ends the connection; it comes out last as a ``TransportFault``.
        """
        try:
            async for frame in self._ws:
                yield frame
        except ConnectionClosed as exc:
            self._closed = exc
            fault = self._refusal(exc)
            if fault is not None:
                yield fault

    def _refusal(self, exc: ConnectionClosed) -> TransportFault | None:
        sent = exc.sent
        if sent is None or exc.rcvd_then_sent or sent.code not in _REFUSALS:
            return None
        cause = exc.__cause__
        if isinstance(cause, UnicodeDecodeError):
            detail = (f"a text frame is not UTF-8 ({cause.reason} at byte {cause.start}); "
                      "the connection was closed (code 1007)")
            return TransportFault("invalid-utf8", detail, bytes(cause.object[:200]))
        if sent.code == 1009:
            return TransportFault("oversized-message", f"{self._too_big()}; the connection "
                                  "was closed (code 1009)")
        return TransportFault(_REFUSALS[sent.code], f"{sent.reason} (code {sent.code})")

    def _too_big(self) -> str:
        limit = self.max_size
        if limit is None:
            return "a message was too big"
        size = f"{limit / 2**20:g} MiB" if limit % 2**20 == 0 else f"{limit} bytes"
        return f"a message was larger than the {size} limit"

    @property
    def close_reason(self) -> str:
        closed = self._closed
        if closed is not None and closed.sent is not None and not closed.rcvd_then_sent:
            ours = closed.sent.code
            if ours == 1009:
                return f"closed by cdpnb: {self._too_big()} (code 1009)"
            if ours == 1007:
                return "closed by cdpnb: a text frame was not UTF-8 (code 1007)"
            if ours not in (1000, 1001):
                return f"closed by cdpnb (code {ours}: {closed.sent.reason})"
        code = self._ws.close_code
        if code is None or code == 1006:
            return "connection dropped"
        reason = self._ws.close_reason
        return f"closed (code {code}{': ' + reason if reason else ''})"

    async def close(self) -> None:
        await self._ws.close()


_ = websockets  # the package is a runtime dependency; keep the import explicit
