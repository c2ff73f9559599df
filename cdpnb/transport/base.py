"""The transport seam: what the supervisor needs from a connection, and nothing more.

The supervisor takes a ``Connector`` by injection. The default opens a WebSocket with
its own reader thread (``connect_websocket``, ``cdpnb.transport.wire``);
``cdpnb.testing.ScriptedBrowser`` hands it an in-memory peer instead, so a race a
browser only produces by timing can be played exactly. ``cdpnb.testing.check_transport``
holds every Transport to the contract below (both of those pass it).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Protocol
from urllib.parse import urlsplit

from cdpnb.runtime.threads import in_own_thread

if TYPE_CHECKING:
    from cdpnb.transport.wire import WireSocket

__all__ = ["Connector", "Transport", "connect_websocket"]


class Transport(Protocol):
    """One open connection (CDP or WebDriver BiDi), as the supervisor relies on it
    (``cdpnb.testing.check_transport`` checks each point):

    - ``start`` hands every received message, whole and in order, to ``on_frames``
      (``str`` or UTF-8 ``bytes``, in batches, one call at a time, on whatever thread
      receives them), including those that came before ``start``;
    - ``on_closed`` gets the reason once, after the last ``on_frames`` returned (never
      from inside it: the supervisor calls ``fail`` there), whoever ended it (the far
      end, ``close``, ``fail``), and also for an end that came before ``start``;
    - ``send`` is called from any thread at once; ``ConnectionLost`` after the end.
    """

    url: str
    #: Optional: ``"cdp"`` (the default when absent), ``"bidi"`` (WebDriver BiDi) or
    #: ``"wip"`` (the WebKit Inspector Protocol: CDP's framing, ``cdpnb.protocol.wip``).
    # protocol: str
    #: Optional, for a transport a waiting caller can read itself (``WireSocket``;
    #: ``cdpnb.transport.turns``): ``read_while(waiting, deadline)`` reads on the calling
    #: thread while ``waiting()``; ``lead_from(loop)`` lets ``loop`` read while it
    #: awaits and returns what to call when the wait ends (None: someone else reads).
    #: Without them the transport's own thread reads everything, as the scripted one.
    #: Optional too: ``tell_awaiting(awaiting)``: the core hands a transport that can
    #: acknowledge what it read at once (TCP_QUICKACK) a ``awaiting()`` saying whether a
    #: command still waits for its reply (``cdpnb.transport.wire``: why).
    #: Optional too, the liveness word: ``gone`` (``str | None``), set before
    #: ``on_closed`` when the transport knows the connection ended because what is behind
    #: it died for good, in words naming it ("the WebDriver server ... is gone", "the
    #: browser behind the mapper exited"): the supervisor then does not reconnect, and
    #: says so. None (or absent) for an end a reconnect may mend. A WebSocket learns it
    #: from a close with ``cdpnb.transport.wire.FAR_END_GONE`` (cdpnb's chromium-bidi
    #: wrapper sends it).

    def start(self, on_frames: Callable[[Sequence[str | bytes]], None],
              on_closed: Callable[[str], None]) -> None: ...

    def send(self, data: bytes) -> None:
        """Write one message whole; ``ConnectionLost`` when the connection is gone."""

    def fail(self, code: int, reason: str) -> None:
        """End the connection over bad input (a WebSocket close code and reason);
        nothing once it has ended. Must not block: called on the receiving thread."""

    def close(self) -> None:
        """End the connection (blocking, briefly: run it off an event loop); harmless
        twice, after the end, or before ``start``."""

    @property
    def close_reason(self) -> str:
        """Why the connection ended, in words (what ``on_closed`` was told): "closed by
        cdpnb…" after ``close``/``fail`` (with ``fail``'s reason and code), anything
        else when the far end ended it."""


#: ``await connector(url, timeout)`` opens a Transport to ``url`` (EndpointError if not).
Connector = Callable[[str, float], Awaitable[Transport]]


async def connect_websocket(url: str, timeout: float) -> Transport:
    """Resolve ``url`` and open its WebSocket, knowing which protocol it speaks.

    ``http://host:port``: ``/json/version`` names a CDP WebSocket; without one, a
    WebDriver server (``GET /status``) gets a new WebDriver classic session
    (``cdpnb.transport.classic``), and anything else may speak WebDriver BiDi at
    ``ws://host:port/session`` (Firefox). A
    ``ws://`` URL says CDP with ``/devtools/`` and BiDi with ``/session``; any other is
    asked once (``session.status``, which only BiDi has; a WIP endpoint such as Bun's
    refuses it in WebKit's words). EndpointError says what
    was tried when the endpoint speaks neither."""
    from cdpnb.errors import EndpointError
    from cdpnb.protocol.credentials import redact_url
    from cdpnb.transport.discovery import bidi_url_of, protocol_of_url, resolve_ws_url
    from cdpnb.transport.wire import WireSocket

    try:
        ws_url = await resolve_ws_url(url, timeout)
    except EndpointError as cdp_error:
        if not url.lower().startswith(("http://", "https://")):
            raise
        if await _is_webdriver_server(url, timeout):
            # A WebDriver server (chromedriver, WebKitWebDriver): a classic session.
            from cdpnb.transport.classic import connect_classic
            return await connect_classic(url, timeout)
        bidi_url = bidi_url_of(url)
        try:
            sock = await in_own_thread(lambda: WireSocket.open(bidi_url, timeout),
                                      orphan=WireSocket.close)
        except EndpointError as bidi_error:
            raise EndpointError(
                f"{redact_url(url)} speaks neither CDP ({cdp_error}) nor WebDriver BiDi "
                f"({bidi_error})") from None
        return await _sniffed(sock, redact_url(url), timeout)
    protocol = protocol_of_url(ws_url)
    try:
        sock = await in_own_thread(lambda: WireSocket.open(ws_url, timeout),
                                  orphan=WireSocket.close)
    except EndpointError:
        if protocol is not None or urlsplit(ws_url).path not in ("", "/"):
            raise
        # A bare ws://host:port (what Firefox prints) that is no WebSocket: BiDi's is
        # at /session.
        sock = await in_own_thread(lambda: WireSocket.open(bidi_url_of(ws_url), timeout),
                                  orphan=WireSocket.close)
    if protocol is None:
        return await _sniffed(sock, redact_url(ws_url), timeout)
    sock.protocol = protocol
    return sock


async def _is_webdriver_server(url: str, timeout: float) -> bool:
    """Whether ``GET /status`` at ``url`` answers as a WebDriver server does."""
    from cdpnb.errors import EndpointError
    from cdpnb.transport.webdriver_http import WebDriverServer

    server = WebDriverServer(url)
    try:
        await in_own_thread(lambda: server.status(min(timeout, 5.0)))
    except EndpointError:
        return False
    finally:
        server.close()
    return True


async def _sniffed(sock: WireSocket, shown: str, timeout: float) -> Transport:
    from cdpnb.errors import EndpointError
    from cdpnb.transport.discovery import SNIFF_COMMAND, protocol_of_reply

    reply = await in_own_thread(lambda: sock.exchange(SNIFF_COMMAND, min(timeout, 5.0)))
    protocol = protocol_of_reply(reply)
    if protocol is None:
        await in_own_thread(sock.close)
        what = "no answer" if reply is None else f"the answer {reply[:80]!r}"
        raise EndpointError(f"{shown} speaks neither CDP nor WebDriver BiDi: session.status "
                            f"got {what}")
    sock.protocol = protocol
    return sock
