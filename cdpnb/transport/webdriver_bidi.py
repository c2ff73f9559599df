"""WebDriver BiDi on a session made over HTTP: ``POST /session`` with ``webSocketUrl:
true``, then the WebSocket the server names for it.

This is how a WebDriver server that also speaks BiDi (chromedriver) is reached: its
BiDi WebSocket (``ws://127.0.0.1:PORT/session/<id>``) exists only for a session made
over HTTP, and carries that session, so the BiDi client sends no ``session.new``;
the session ends with ``DELETE /session/<id>`` over HTTP. The socket carries what was
made (``WebDriverBiDiSocket.webdriver_session``) for the supervisor to adopt and end.

Liveness: chromedriver 156 drops the socket when the session's Chromium dies (measured:
killed by its pid, the socket dropped within 50 ms, no close frame), which says nothing
of why; so a socket that ended without cdpnb asks the session over HTTP once (``GET
/session/<id>/window``): "invalid session id" is the session gone with its browser, a
refused connection the server gone (``gone``: the supervisor does not reconnect, which
would start another browser); anything else may be mended by a reconnect.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Any

from cdpnb.errors import EndpointError
from cdpnb.protocol.credentials import redact_url
from cdpnb.runtime.threads import in_own_thread
from cdpnb.transport.webdriver_http import WebDriverServer, what_died
from cdpnb.transport.wire import WireSocket

__all__ = ["WebDriverBiDiSocket", "WebDriverSession", "connect_webdriver_bidi"]


@dataclass
class WebDriverSession:
    """A session made on a WebDriver server over HTTP: its id, the capabilities it was
    given (``webSocketUrl`` among them), and how to end it."""

    server: WebDriverServer
    session_id: str
    capabilities: dict[str, Any]
    deleted: bool = field(default=False, init=False)

    def delete(self, timeout: float) -> None:
        """``DELETE /session/<id>`` (once; the server ends the browser it started) and
        close the HTTP connections. Blocking: run it off an event loop."""
        if self.deleted:
            return
        self.deleted = True
        try:
            self.server.delete_session(self.session_id, timeout)
        finally:
            self.server.close()


#: How long the look at a session whose socket ended may take.
CHECK_TIMEOUT_S = 5.0


class WebDriverBiDiSocket(WireSocket):
    """The BiDi WebSocket of a session made over HTTP (``webdriver_session``)."""

    webdriver_session: WebDriverSession | None = None
    _died: str | None = None

    @property
    def gone(self) -> str | None:
        """What died behind the socket, as the session's server said once it ended."""
        return self._died or super().gone

    def _ending_reason(self) -> str:
        reason = super()._ending_reason()
        session = self.webdriver_session
        if not reason.startswith("closed by cdpnb") and session is not None \
                and not session.deleted:
            # (On the reader thread, as it ends: before on_closed, which reads gone.)
            self._died = what_died(session.server, session.session_id, CHECK_TIMEOUT_S)
        return reason


def _open(url: str, capabilities: dict[str, Any], timeout: float) -> WebDriverBiDiSocket:
    server = WebDriverServer(url)
    try:
        made = server.new_session({**capabilities, "webSocketUrl": True}, timeout)
    except BaseException:
        server.close()
        raise
    session = WebDriverSession(server, made.session_id, made.capabilities)
    try:
        ws_url = made.capabilities.get("webSocketUrl")
        if not isinstance(ws_url, str) or not ws_url.startswith(("ws://", "wss://")):
            raise EndpointError(f"{redact_url(url)} made a session but gave it no WebDriver "
                                f"BiDi WebSocket (webSocketUrl: {ws_url!r})")
        sock = WebDriverBiDiSocket.open(ws_url, timeout)
        assert isinstance(sock, WebDriverBiDiSocket)  # (open makes a cls)
    except BaseException:
        with contextlib.suppress(Exception):
            session.delete(timeout)
        raise
    sock.protocol = "bidi"
    sock.webdriver_session = session
    return sock


def _abandon(sock: WebDriverBiDiSocket) -> None:
    """A connect nobody waits for any more: its socket closed, its session ended."""
    sock.close()
    if sock.webdriver_session is not None:
        with contextlib.suppress(Exception):
            sock.webdriver_session.delete(10.0)


async def connect_webdriver_bidi(url: str, capabilities: dict[str, Any],
                                 timeout: float) -> WebDriverBiDiSocket:
    """Make a session on the WebDriver server at ``url`` (``http://127.0.0.1:PORT``)
    asking for ``capabilities`` and ``webSocketUrl: true``, and open its BiDi WebSocket.
    The session is ended again if the socket cannot be opened (or nobody awaits it any
    more); EndpointError / WebDriverError say why it could not be made."""
    return await in_own_thread(lambda: _open(url, capabilities, timeout),
                               name="cdpnb-webdriver-bidi", orphan=_abandon)
