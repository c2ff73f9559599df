"""What ``Supervisor.start`` is given to connect to: a URL, or a backend (anything with
a ``cdp_url``), resolved into the URL, the backend's description and what a replay
brings along (its recording's bridge key and script, its in-memory transport)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from cdpnb.transport import Connector

__all__ = ["Endpoint", "HasCdpUrl", "bridge_reason", "endpoint_of"]


class HasCdpUrl(Protocol):
    """A backend from ``cdpnb.launch`` (or anything with a ``cdp_url``)."""

    @property
    def cdp_url(self) -> str: ...


@dataclass(frozen=True)
class Endpoint:
    url: str
    #: The backend's ``describe()`` (kind, versions, ...), when a backend was given.
    backend: dict[str, Any] | None
    #: The transport to connect with (None: the WebSocket).
    transport: Connector | None
    #: A replay plays its recording's bridge key and script.
    bridge_key: str | None = None
    bridge_script: str | None = None

    @property
    def kind(self) -> Any:
        return (self.backend or {}).get("kind")

    @property
    def dismisses_dialogs(self) -> bool:
        """The backend says a client in front of it closes native dialogs itself
        (``describe()["dismisses_dialogs"]``: Playwright with no handler)."""
        return (self.backend or {}).get("dismisses_dialogs") is True


def _str_or_none(value: object) -> str | None:
    return value if isinstance(value, str) else None


def endpoint_of(url: str | HasCdpUrl, transport: Connector | None) -> Endpoint:
    """``url`` (a string or a backend) and ``transport`` as one checked Endpoint."""
    if transport is not None and not callable(transport):
        raise TypeError(f"transport must be an async callable (url, timeout) -> "
                        f"transport, got {transport!r}")
    cdp_url = None if isinstance(url, str) else getattr(url, "cdp_url", None)
    if isinstance(cdp_url, str) and cdp_url:
        describe = getattr(url, "describe", None)
        connect = getattr(url, "connect_transport", None)
        if transport is None and callable(connect):
            transport = connect  # e.g. cdpnb.testing.ScriptedBrowser
        return Endpoint(cdp_url, describe() if callable(describe) else None, transport,
                        _str_or_none(getattr(url, "bridge_key", None)),
                        _str_or_none(getattr(url, "bridge_script", None)))
    if not isinstance(url, str) or not url:
        # (a backend not started yet says so itself, from its cdp_url)
        raise TypeError(f"url must be a CDP URL string or a backend from cdpnb.launch "
                        f"(anything with a cdp_url), got {url!r}")
    return Endpoint(url, None, transport)


def bridge_reason(bridge: object, endpoint: Endpoint) -> str | None:
    """Why the dialog bridge is on from the start (None: it is not, until an
    auto-dismissing client is seen)."""
    if bridge is True:
        return "bridge=True"
    if bridge == "auto" and endpoint.dismisses_dialogs:
        return f"bridge='auto': {endpoint.kind} auto-dismisses native dialogs"
    return None
