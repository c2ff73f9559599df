"""Supervising a page that already exists (``Supervisor.start(page="first" | <id>)``), what
every protocol shares: which listed targets are a user's pages, the error that names the
ones there are, and which pages ``stop()`` leaves open. How each protocol chooses the
page: ``cdp.existing_pages``, ``bidi.existing_pages``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cdpnb.errors import UnknownPage
from cdpnb.protocol.credentials import hide_credentials
from cdpnb.state import BrowserState

__all__ = ["is_user_page", "pages_left_open", "unknown_page"]


#: Page targets that are no user's page: a prerendering page has ``subtype``.
_NOT_A_TAB_SUBTYPES = ("prerender",)


#: How many pages an UnknownPage message names.
_NAMED = 10


def is_user_page(info: Mapping[str, Any]) -> bool:
    """Whether a ``Target.TargetInfo`` is a page a user could have: a ``page`` target,
    not DevTools' own front-end, not a prerendering page."""
    return (info.get("type") == "page" and isinstance(info.get("targetId"), str)
            and not str(info.get("url", "")).startswith("devtools://")
            and info.get("subtype") not in _NOT_A_TAB_SUBTYPES)


def unknown_page(page: str, listed: list[tuple[str, str]], what: str,
                 extra: str = "") -> UnknownPage:
    """The error for a page id no listed page has, naming (some of) those there are."""
    shown = ", ".join(f"{tid} ({hide_credentials(url)[:80]})" for tid, url in listed[:_NAMED])
    if len(listed) > _NAMED:
        shown += f", and {len(listed) - _NAMED} more"
    return UnknownPage(
        f"page={page!r} names no {what} of this browser{extra}; it has "
        f"{shown or 'none'}. Pass one of those ids, page='first' or page='new'",
        page=page, existing=tuple(tid for tid, _ in listed))


def pages_left_open(state: BrowserState, adopted: str | None) -> set[str]:
    """The target ids of the supervised pages ``stop()`` leaves open: the page the
    supervisor adopted and every page it opened, recursively (they are their
    opener's owner's, not cdpnb's). Pages cdpnb created are closed."""
    if adopted is None:
        return set()
    left = {adopted}
    grew = True
    while grew:
        grew = False
        for info in state.pages.values():
            if info.target_id not in left and info.opener_target_id in left:
                left.add(info.target_id)
                grew = True
    return left
