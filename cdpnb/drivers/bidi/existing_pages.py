"""Adopting a browsing context that already exists over WebDriver BiDi
(``Supervisor.start(page="first" | <id>)``)."""

from __future__ import annotations

from cdpnb.session.core import Core
from cdpnb.session.existing_pages import (
    unknown_page,
)
from cdpnb.session.options import FIRST

__all__ = ["choose_bidi_context"]


async def choose_bidi_context(core: Core, page: str) -> str | None:
    """The existing top-level browsing context ``page`` names over WebDriver BiDi (the
    session is made): for ``"first"`` the first that ``browsingContext.getTree`` lists
    (None when there is none), otherwise the context id itself."""
    tree = await core.send("browsingContext.getTree", {"maxDepth": 0})
    contexts = [c for c in tree.get("contexts") or () if isinstance(c, dict)
                and isinstance(c.get("context"), str)]
    if page == FIRST:
        return str(contexts[0]["context"]) if contexts else None
    if any(c["context"] == page for c in contexts):
        return page
    raise unknown_page(page, [(str(c["context"]), str(c.get("url", ""))) for c in contexts],
                   "top-level browsing context",
                   # Measured on Firefox ESR 153: ids do not carry over to a new session.
                   " (a context id from an earlier WebDriver BiDi session does not carry "
                   "over: Firefox names its tabs afresh in each session)")
