"""Which engine is behind the endpoint, when the state must know (``cdpnb.state.engines``).

Lightpanda runs page dialogs without blocking, and its ``Browser.getVersion`` says
``Chrome/124.0.6367.29`` (measured, 1.0.2), so it is told apart by the backend cdpnb
launched (kind ``lightpanda``) or by ``/json/version`` (``"Browser": "Lightpanda/…"``),
asked only of endpoints whose WebSocket path is ``/`` (Lightpanda's; Chromium's is
``/devtools/browser/<id>``, node's ``/<uuid>``). What it finds is folded as a
``cdpnb.dialogsNonBlocking`` note, so a replay of the trace knows it too. A replay
endpoint (``cdpnb.replay``) counts as the kind it was recorded on.
"""

from __future__ import annotations

import logging
from typing import Any
from urllib.parse import urlsplit

from cdpnb.errors import CdpnbError
from cdpnb.supervisor.core import Core
from cdpnb.transport.discovery import fetch_json

__all__ = ["NON_BLOCKING_DIALOG_ENGINES", "identify"]

log = logging.getLogger("cdpnb.supervisor")

#: ``/json/version`` "Browser" prefixes (and launch kinds) whose dialogs never block.
NON_BLOCKING_DIALOG_ENGINES = {"Lightpanda/": "lightpanda"}


def _version_url(url: str) -> str | None:
    parts = urlsplit(url)
    scheme = {"ws": "http", "wss": "https", "http": "http", "https": "https"}.get(
        parts.scheme.lower())
    if scheme is None or parts.path not in ("", "/"):
        return None
    return f"{scheme}://{parts.netloc}/json/version"


async def identify(core: Core, url: str, backend: dict[str, Any] | None,
                   timeout: float = 1.0) -> None:
    """Fold ``cdpnb.dialogsNonBlocking`` if the endpoint's dialogs do not block.

    Runs beside the attach sequence, so a ``/json/version`` that answers at once costs
    nothing; one that never answers delays ``Supervisor.start`` by ``timeout`` at most.
    """
    info = backend or {}
    kind, version = info.get("kind"), info.get("version")
    if kind == "replay":  # a recording plays back as the engine it was recorded on
        kind, version = info.get("recorded_kind"), info.get("recorded_version")
    engine: str | None = None
    source = ""
    if kind in NON_BLOCKING_DIALOG_ENGINES.values():
        engine, source = str(version or kind), f"backend kind {kind}"
    elif info.get("kind") == "replay":
        # The recording's own note (a URL backend's engine) or nothing: a replay
        # endpoint's /json/version is cdpnb's, not the engine's.
        recorded = info.get("recorded_engine")
        if isinstance(recorded, str) and recorded:
            engine, source = recorded, "the recording"
    else:
        where = _version_url(url)
        if where is None:
            return
        try:
            info = await fetch_json(where, timeout)
        except (CdpnbError, OSError) as exc:
            log.debug("cdpnb: %s not read: %s", where, exc)
            return
        browser = info.get("Browser") if isinstance(info, dict) else None
        if isinstance(browser, str) and browser.startswith(tuple(NON_BLOCKING_DIALOG_ENGINES)):
            engine, source = browser, "/json/version"
    if engine is not None:
        core.note("cdpnb.dialogsNonBlocking", {"engine": engine, "source": source})
