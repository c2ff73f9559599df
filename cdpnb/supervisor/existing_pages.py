"""Supervising a page that already exists: ``Supervisor.start(page="first" | <id>)``.

By default the supervisor creates a page of its own and ``stop()`` closes it. It can
instead adopt a page someone else made (the tab an agent's Playwright drives, the
browser's first tab): the page is attached and set up as the supervisor's own is (its
frames and OOPIFs already there, its popups, the dialog bridge in the documents
already loaded), and ``stop()`` leaves it, and the pages it opened, open: their open
dialogs are dismissed (nobody could answer them afterwards) and the connection lets go.

Measured with raw CDP on Chromium 156 and headless-shell 156:

* ``Target.getTargets`` lists page targets in an order of its own (not the order they
  were created in; ``browser_ui`` targets beside them on chromium): ``"first"`` is the
  first ``page`` it lists, as hermes-agent's supervisor takes it.
* On an existing page's session, ``Target.setAutoAttach`` reports the OOPIFs that are
  there already (``waitingForDebugger: false``) and ``Page.getFrameTree`` gives the
  in-process tree; the browser-level auto-attach reports an existing popup with its
  ``openerId``. So the attach sequence of a fresh page sees all of them.
* ``Page.addScriptToEvaluateOnNewDocument`` with ``runImmediately`` runs in the
  documents already there (the main frame and a same-site iframe; an OOPIF on its own
  session), so the bridge reaches a page that has loaded already.
* A dialog open before a session attaches is never announced to it (no
  ``Page.javascriptDialogOpening`` after ``Page.enable``), ``Page.handleJavaScriptDialog``
  says "No dialog is showing", and ``Page.enable``, ``Runtime.enable`` and
  ``Page.getFrameTree`` get no reply until the dialog closes: the renderer is blocked.
  Only the client attached when it opened can answer it (``PageBlocked``).
* A dialog still open when the session that held it detaches: chromium keeps it open
  (the page stays blocked, for good); headless-shell dismisses it (a prompt returns
  null). So ``stop()`` dismisses the open dialogs of the pages it leaves.

Measured with raw WebDriver BiDi on Firefox ESR 153:

* A prompt open before ``session.new`` is not announced (no ``userPromptOpened`` on
  subscribing), ``script.evaluate`` works in its tab, and
  ``browsingContext.handleUserPrompt`` answers it (``userPromptClosed`` follows).
* A tab's context id holds for one session: after ``session.end`` the next session names
  the same tab with a new id.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Mapping
from typing import Any

from cdpnb.errors import CDPError, CdpnbError, UnknownPage
from cdpnb.protocol.credentials import hide_credentials, redact_url
from cdpnb.runtime.waits import wait_for
from cdpnb.state import BrowserState
from cdpnb.state.pages import METHOD_NOT_FOUND
from cdpnb.supervisor.attach import attach_existing_page, attach_page
from cdpnb.supervisor.bridge import DialogBridge
from cdpnb.supervisor.core import Core
from cdpnb.supervisor.dialogs import DialogControl
from cdpnb.supervisor.options import FIRST, NEW

__all__ = ["attach_chosen_page", "choose_bidi_context", "choose_cdp_page",
           "is_user_page", "let_go_of_dialogs", "pages_left_open"]

#: How long stop() gives each dismissal of a dialog in a page it leaves open.
LET_GO_TIMEOUT_S = 2.0
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


def _unknown(page: str, listed: list[tuple[str, str]], what: str, extra: str = "") -> UnknownPage:
    shown = ", ".join(f"{tid} ({hide_credentials(url)[:80]})" for tid, url in listed[:_NAMED])
    if len(listed) > _NAMED:
        shown += f", and {len(listed) - _NAMED} more"
    return UnknownPage(
        f"page={page!r} names no {what} of this browser{extra}; it has "
        f"{shown or 'none'}. Pass one of those ids, page='first' or page='new'",
        page=page, existing=tuple(tid for tid, _ in listed))


async def choose_cdp_page(core: Core, page: str) -> str | None:
    """The existing page target ``page`` names over CDP: for ``"first"`` the first page
    ``Target.getTargets`` lists (None when there is none), otherwise the target id
    itself, which must be a page's (UnknownPage names the pages there are)."""
    try:
        infos = (await core.send("Target.getTargets")).get("targetInfos") or []
    except CDPError as exc:
        if exc.code != METHOD_NOT_FOUND:
            raise
        if page == FIRST:
            return None  # a target-level endpoint (Node): the connection is the page
        raise UnknownPage(f"page={page!r}: {redact_url(core.url)} has no Target domain "
                          f"({exc.message}); it is one target, reached by page='new' or "
                          "page='first'", page=page, existing=()) from None
    targets = [i for i in infos if isinstance(i, dict)]
    pages = [i for i in targets if is_user_page(i)]
    if page == FIRST:
        return str(pages[0]["targetId"]) if pages else None
    if any(i["targetId"] == page for i in pages):
        return page
    other = next((i for i in targets if i.get("targetId") == page), None)
    extra = (f" (it is a target of type {other.get('type')!r}, not a page)"
             if other is not None else "")
    raise _unknown(page, [(str(i["targetId"]), str(i.get("url", ""))) for i in pages],
                   "page target", extra)


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
    raise _unknown(page, [(str(c["context"]), str(c.get("url", ""))) for c in contexts],
                   "top-level browsing context",
                   # Measured on Firefox ESR 153: ids do not carry over to a new session.
                   " (a context id from an earlier WebDriver BiDi session does not carry "
                   "over: Firefox names its tabs afresh in each session)")


async def attach_chosen_page(core: Core, page: str, bridge: DialogBridge) -> str | None:
    """Attach the supervisor's page over CDP as ``page`` says and set it up: the
    target id of the existing page it adopted, or None when it created one (``"new"``,
    or ``"first"`` on a browser with no page)."""
    if page != NEW:
        target = await choose_cdp_page(core, page)
        if target is not None:
            await attach_existing_page(core, target, bridge)
            return target
    await attach_page(core, bridge=bridge)
    return None


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


async def let_go_of_dialogs(state: BrowserState, dialogs: DialogControl,
                            left: Iterable[str]) -> int:
    """Dismiss the open dialogs of the pages in ``left`` (target ids) before the
    supervisor lets go of them (``closed_by="cdpnb"``, ``reason="detached"``): a dialog
    its session held stays open on chromium after the session goes, and no client
    attached later can answer it (measured). Returns how many were dismissed."""
    targets = set(left)
    sessions = {p.session_id for p in state.pages.values() if p.target_id in targets}
    doomed = [d for d in state.pending_dialogs
              if d.page_session_id in sessions and d.answerable and d.answering is None]
    dismissed = 0
    for dialog in doomed:
        with contextlib.suppress(CdpnbError, TimeoutError):
            await wait_for(dialogs.answer(dialog, False, None, "cdpnb", reason="detached"),
                           LET_GO_TIMEOUT_S)
            dismissed += 1
    return dismissed
