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

from cdpnb.drivers.cdp.attach import attach_existing_page, attach_page
from cdpnb.errors import CDPError, UnknownPage
from cdpnb.protocol.credentials import redact_url
from cdpnb.session.bridge import DialogBridge
from cdpnb.session.core import Core
from cdpnb.session.existing_pages import (
    is_user_page,
    unknown_page,
)
from cdpnb.session.options import FIRST, NEW
from cdpnb.state.pages import METHOD_NOT_FOUND

__all__ = ["attach_chosen_page", "choose_cdp_page"]







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
    raise unknown_page(page, [(str(i["targetId"]), str(i.get("url", ""))) for i in pages],
                   "page target", extra)




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




