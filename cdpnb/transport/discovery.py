"""Resolve a user-given endpoint to a browser WebSocket URL (``/json/version``)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from cdpnb.errors import EndpointError
from cdpnb.protocol import PROTOCOL_SPECS
from cdpnb.protocol.credentials import redact_url
from cdpnb.protocol.wip import is_wip_error
from cdpnb.runtime.threads import in_own_thread
from cdpnb.runtime.waits import wait_for

__all__ = ["PROTOCOLS", "bidi_url_of", "browser_of", "fetch_json", "get_json",
           "protocol_of_reply", "protocol_of_url", "resolve_ws_url"]

#: The protocols cdpnb speaks: the Chrome DevTools Protocol, WebDriver BiDi, the WebKit
#: Inspector Protocol (Bun's inspector; ``cdpnb.protocol.wip``) and WebDriver classic
#: (HTTP, ``cdpnb.transport.classic``): their names, from their specs.
PROTOCOLS = tuple(spec.name for spec in PROTOCOL_SPECS)
#: Sent once to a WebSocket whose URL does not say what it speaks. BiDi answers it with
#: ``{"type": "success", ...}``; a CDP endpoint with ``{"id": 0, "error": {-32601}}``, a
#: WIP one (Bun 1.4.5) likewise but in WebKit's words ("'session' domain was not found"
#: where node and Deno say "'session.status' wasn't found").
SNIFF_COMMAND = b'{"id":0,"method":"session.status","params":{}}'


def protocol_of_url(url: str) -> str | None:
    """``cdp`` for a DevTools WebSocket path, ``bidi`` for a WebDriver BiDi one (the
    path ends in ``/session``), None when the URL does not say."""
    path = urlsplit(url).path
    if "/devtools/" in path:
        return "cdp"
    if path.rstrip("/").endswith("/session") or "/session/" in path:
        return "bidi"
    return None


def protocol_of_reply(reply: bytes | None) -> str | None:
    """What the reply to ``SNIFF_COMMAND`` says the endpoint speaks, None if neither."""
    if reply is None:
        return None
    try:
        msg = json.loads(reply)
    except ValueError:
        return None
    if not isinstance(msg, dict):
        return None
    if msg.get("type") in ("success", "error"):
        return "bidi"
    if msg.get("id") == 0 and is_wip_error(msg):
        return "wip"
    if msg.get("id") == 0 and ("error" in msg or "result" in msg):
        return "cdp"
    return None


def bidi_url_of(url: str) -> str:
    """``http://host:port`` (or ``ws://host:port``) → ``ws://host:port/session``, where
    WebDriver BiDi listens (Firefox prints its endpoint without the path)."""
    parts = urlsplit(url)
    scheme = "wss" if parts.scheme.lower() in ("https", "wss") else "ws"
    return urlunsplit((scheme, parts.netloc, "/session", "", ""))


def get_json(url: str, timeout: float = 5.0) -> Any:
    """Blocking GET of a DevTools HTTP endpoint; failures are EndpointError."""
    request = urllib.request.Request(url, headers={"Accept": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            body = response.read(4 * 1024 * 1024)
        return json.loads(body)
    except (urllib.error.URLError, OSError, TimeoutError) as exc:
        raise EndpointError(f"cannot reach {redact_url(url)}: {exc}") from None
    except ValueError as exc:
        raise EndpointError(f"{redact_url(url)} did not answer with JSON: {exc}") from None


async def fetch_json(url: str, timeout: float = 5.0) -> Any:
    """``get_json`` off the event loop (``/json/version``, ``/json/list``)."""
    try:
        return await wait_for(in_own_thread(lambda: get_json(url, timeout)), timeout + 1)
    except TimeoutError:
        raise EndpointError(f"{redact_url(url)} did not answer within {timeout:g} s") from None


async def resolve_ws_url(url: str, timeout: float = 5.0) -> str:
    """``ws://``/``wss://`` pass through; ``http(s)://host:port`` goes via ``/json/version``."""
    if not isinstance(url, str) or not url:
        raise ValueError(f"url must be a ws://, wss:// or http:// URL, got {url!r}")
    scheme = urlsplit(url).scheme.lower()
    if scheme in ("ws", "wss"):
        return url
    if scheme not in ("http", "https"):
        raise ValueError(f"url must be a ws://, wss:// or http:// URL, got {redact_url(url)!r}")
    info = await fetch_json(url.rstrip("/") + "/json/version", timeout)
    ws = info.get("webSocketDebuggerUrl") if isinstance(info, dict) else None
    if not isinstance(ws, str):
        raise EndpointError(f"{redact_url(url)}/json/version has no webSocketDebuggerUrl")
    return ws


async def browser_of(url: str, timeout: float) -> str:
    """The ``Browser`` that ``/json/version`` of the host behind ``url`` (``ws://``,
    ``wss://``, ``http://``, ``https://``; any path) names, or "" when it names none or
    does not answer within ``timeout``."""
    parts = urlsplit(url)
    scheme = {"ws": "http", "wss": "https", "http": "http", "https": "https"}.get(
        parts.scheme.lower())
    if scheme is None:
        return ""
    try:
        info = await fetch_json(f"{scheme}://{parts.netloc}/json/version", timeout)
    except (EndpointError, OSError):
        return ""
    browser = info.get("Browser") if isinstance(info, dict) else None
    return browser if isinstance(browser, str) else ""
