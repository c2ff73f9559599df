"""WebDriver's HTTP side: a server's status, a new session and its end, and one request.

What every WebDriver client does over HTTP before (BiDi) or instead of (classic) a
WebSocket: ``GET /status``, ``POST /session`` with the capabilities it asks for,
``DELETE /session/<id>``, and, for classic, every command as one request whose JSON
body's ``value`` is the result or a W3C error (``{"error", "message", "stacktrace"}``).
Blocking, on the caller's thread; one keep-alive connection per ``WebDriverServer`` and
per thread (a classic transport sends from several threads at once: a poll must not wait
behind a script that waits for a promise).

Measured here: chromedriver 156 and WebKitWebDriver 2.50 both keep HTTP/1.1 connections
alive; WebKitWebDriver's ``POST /session`` takes 0.3–1 s (it starts MiniBrowser), and
without an X display it never answers, so every request has a timeout.
"""

from __future__ import annotations

import http.client
import json
import threading
from typing import Any, NamedTuple
from urllib.parse import urlsplit

from cdpnb.errors import CdpnbError, EndpointError
from cdpnb.protocol.credentials import redact_url

__all__ = ["NewSession", "ServerGone", "WebDriverError", "WebDriverServer", "server_gone",
           "session_gone", "what_died"]

#: The largest reply body read (a screenshot or a page source can be megabytes).
MAX_BODY = 64 * 1024 * 1024


class WebDriverError(CdpnbError):
    """A WebDriver server answered with a W3C error (``error`` is its code: "no such
    alert", "unexpected alert open", "session not created", ...)."""

    def __init__(self, error: str, message: str, status: int) -> None:
        super().__init__(f"{error}: {message}" if message else error)
        self.error = error
        self.message = message
        self.status = status


class ServerGone(EndpointError):
    """Nothing listens at the server's address any more (the connection was refused):
    on loopback, its process has ended."""


class NewSession(NamedTuple):
    """What ``POST /session`` gave: the session's id and the capabilities it has."""

    session_id: str
    capabilities: dict[str, Any]


class WebDriverServer:
    """A WebDriver server at ``base_url`` (``http://127.0.0.1:PORT``, any path prefix)."""

    def __init__(self, base_url: str) -> None:
        parts = urlsplit(base_url)
        if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
            raise ValueError(f"a WebDriver server's URL is http://host:port, got "
                             f"{redact_url(base_url)!r}")
        self.base_url = base_url.rstrip("/")
        self._https = parts.scheme.lower() == "https"
        self._host = parts.hostname
        self._port = parts.port or (443 if self._https else 80)
        self._prefix = parts.path.rstrip("/")
        self._local = threading.local()
        self._lock = threading.Lock()
        self._connections: list[http.client.HTTPConnection] = []

    def __repr__(self) -> str:
        return f"WebDriverServer({redact_url(self.base_url)!r})"

    # -- the few requests every client makes ------------------------------------------------

    def status(self, timeout: float) -> dict[str, Any]:
        """``GET /status``'s value (``ready``, ``message``); EndpointError when the URL
        answers no such thing (no server, or one that is no WebDriver server)."""
        code, body = self.exchange("GET", "/status", None, timeout)
        value = _value_of(body)
        if code != 200 or not isinstance(value, dict) or "ready" not in value:
            raise EndpointError(f"{redact_url(self.base_url)} is no WebDriver server "
                                f"(GET /status answered {code})")
        return value

    def new_session(self, capabilities: dict[str, Any], timeout: float) -> NewSession:
        """``POST /session`` asking for ``capabilities`` (``alwaysMatch``)."""
        value = self.request("POST", "/session",
                             {"capabilities": {"alwaysMatch": capabilities}}, timeout)
        if not isinstance(value, dict) or not isinstance(value.get("sessionId"), str):
            raise EndpointError(f"{redact_url(self.base_url)}: POST /session gave no "
                                f"sessionId ({str(value)[:200]})")
        granted = value.get("capabilities", {})
        if not isinstance(granted, dict):
            raise EndpointError(f"{redact_url(self.base_url)}: POST /session gave "
                                f"capabilities that are no JSON object ({str(granted)[:200]})")
        return NewSession(value["sessionId"], granted)

    def delete_session(self, session_id: str, timeout: float) -> None:
        """``DELETE /session/<id>``: the server ends the browser it started for it."""
        self.request("DELETE", f"/session/{session_id}", None, timeout)

    def request(self, method: str, path: str, body: Any, timeout: float) -> Any:
        """One command: its ``value``, or WebDriverError with the server's error."""
        code, reply = self.exchange(method, path, body, timeout)
        value = _value_of(reply)
        if code >= 400 or (isinstance(value, dict) and isinstance(value.get("error"), str)):
            error = value.get("error") if isinstance(value, dict) else None
            message = value.get("message") if isinstance(value, dict) else None
            raise WebDriverError(error if isinstance(error, str) else f"HTTP {code}",
                                 message if isinstance(message, str) else "", code)
        return value

    # -- the wire ---------------------------------------------------------------------------

    def exchange(self, method: str, path: str, body: Any, timeout: float
                 ) -> tuple[int, Any]:
        """Send one request on this thread's connection: (HTTP status, the JSON body, or
        None when it was no JSON). EndpointError when the server cannot be reached or does
        not answer within ``timeout`` (the connection is then dropped: a late answer must
        not be read as the next request's)."""
        payload = None if body is None else json.dumps(body).encode()
        headers = {"Accept": "application/json"}
        if payload is not None:
            headers["Content-Type"] = "application/json; charset=utf-8"
        for attempt in (0, 1):
            connection = self._connection(timeout)
            try:
                connection.request(method, self._prefix + path, body=payload, headers=headers)
                response = connection.getresponse()
                raw = response.read(MAX_BODY)
                status = response.status
            except (http.client.RemoteDisconnected, BrokenPipeError,
                    ConnectionResetError) as exc:
                self._drop(connection)
                # A kept-alive connection the server closed meanwhile: once more on a new
                # one (a POST that reached it would have been answered, not dropped).
                if attempt == 0:
                    continue
                raise EndpointError(f"{redact_url(self.base_url)}{path}: {exc}") from None
            except ConnectionRefusedError:
                self._drop(connection)
                raise ServerGone(f"{method} {redact_url(self.base_url)}{path}: the connection "
                                 "was refused (nothing listens there)") from None
            except (OSError, http.client.HTTPException) as exc:
                self._drop(connection)
                timed_out = isinstance(exc, TimeoutError)
                why = f"no answer within {timeout:g} s" if timed_out else str(exc)
                raise EndpointError(f"{method} {redact_url(self.base_url)}{path}: "
                                    f"{why}") from None
            try:
                return status, json.loads(raw) if raw else None
            except ValueError:
                return status, None
        raise AssertionError("unreachable")  # pragma: no cover

    def close(self) -> None:
        """Close every connection (harmless twice)."""
        with self._lock:
            connections, self._connections = self._connections, []
        for connection in connections:
            connection.close()

    def _connection(self, timeout: float) -> http.client.HTTPConnection:
        connection: http.client.HTTPConnection | None = getattr(self._local, "connection", None)
        if connection is None:
            kind = http.client.HTTPSConnection if self._https else http.client.HTTPConnection
            connection = kind(self._host, self._port, timeout=timeout)
            self._local.connection = connection
            with self._lock:
                self._connections.append(connection)
        connection.timeout = timeout
        if connection.sock is not None:
            connection.sock.settimeout(timeout)
        return connection

    def _drop(self, connection: http.client.HTTPConnection) -> None:
        connection.close()
        self._local.connection = None
        with self._lock:
            if connection in self._connections:
                self._connections.remove(connection)


def server_gone(url: str) -> str:
    """What died, in words, when the server at ``url`` refuses connections."""
    return (f"the WebDriver server at {redact_url(url)} is gone (the connection was "
            "refused): its process has ended")


def session_gone(url: str, session_id: str, said: str) -> str:
    """What died, in words, when the server answers "invalid session id" (``said``: its
    message, whose first line is kept)."""
    first = said.strip().splitlines()[0][:200] if said.strip() else ""
    why = f"\"invalid session id\": {first}" if first else "\"invalid session id\""
    return (f"the WebDriver session {session_id} at {redact_url(url)} is gone ({why}): the "
            "browser behind the WebDriver server closed or died, or someone else ended the "
            "session")


def what_died(server: WebDriverServer, session_id: str, timeout: float) -> str | None:
    """One cheap look (``GET /session/<id>/window``): what died behind the session, in
    words (the server, or the session with its browser); None while the session answers,
    or when the server does not answer in time (a wedged session is not a dead one)."""
    try:
        _, body = server.exchange("GET", f"/session/{session_id}/window", None, timeout)
    except ServerGone:
        return server_gone(server.base_url)
    except EndpointError:
        return None
    value = _value_of(body)
    if not isinstance(value, dict) or value.get("error") != "invalid session id":
        return None
    message = value.get("message")
    return session_gone(server.base_url, session_id, message if isinstance(message, str)
                        else "")


def _value_of(body: Any) -> Any:
    return body.get("value") if isinstance(body, dict) else None
