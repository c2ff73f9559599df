"""Which engine is behind the endpoint, when the state must know (``cdpnb.state.engines``).

Lightpanda runs page dialogs without blocking, and its ``Browser.getVersion`` says
``Chrome/124.0.6367.29`` (measured, 1.0.2), so it is told apart by the backend cdpnb
launched (kind ``lightpanda``) or by ``/json/version`` (``"Browser": "Lightpanda/…"``),
asked only of endpoints whose WebSocket path is ``/`` (Lightpanda's; Chromium's is
``/devtools/browser/<id>``, node's ``/<uuid>``). What it finds is folded as a
``cdpnb.dialogsNonBlocking`` note, so a replay of the trace knows it too. A replay
endpoint (``cdpnb.replay``) knows it from the note in its recording.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from cdpnb.session.core import Core
from cdpnb.transport.discovery import browser_of

__all__ = ["NON_BLOCKING_DIALOG_ENGINES", "identify"]


#: ``/json/version`` "Browser" prefixes (and launch kinds) whose dialogs never block.
NON_BLOCKING_DIALOG_ENGINES = {"Lightpanda/": "lightpanda"}


async def identify(core: Core, url: str, backend: dict[str, Any] | None,
                   timeout: float = 1.0) -> None:
    """Fold ``cdpnb.dialogsNonBlocking`` if the endpoint's dialogs do not block.

    Runs beside the attach sequence, so a ``/json/version`` that answers at once costs
    nothing; one that never answers delays ``Supervisor.start`` by ``timeout`` at most.
    """
    info = backend or {}
    kind = info.get("kind")
    engine: str | None = None
    source = ""
    if kind == "replay":
        # The recording's own note, whether a launched kind or a URL was recorded: a
        # replay endpoint's /json/version is cdpnb's, not the engine's.
        recorded = info.get("recorded_engine")
        if isinstance(recorded, str) and recorded:
            engine, source = recorded, "the recording"
    elif kind in NON_BLOCKING_DIALOG_ENGINES.values():
        engine, source = str(info.get("version") or kind), f"backend kind {kind}"
    elif urlsplit(url).path in ("", "/"):  # an endpoint shaped as Lightpanda's
        browser = await browser_of(url, timeout)
        if browser.startswith(tuple(NON_BLOCKING_DIALOG_ENGINES)):
            engine, source = browser, "/json/version"
    if engine is not None:
        core.note("cdpnb.dialogsNonBlocking", {"engine": engine, "source": source})
