"""Freeing pages the browser left stuck: a page is never left blocked by a dialog
nobody can answer.

Acts on the reducers' changes (``DialogUnanswerable``, ``DialogClosed``,
``PageHazard``), by the browser facts measured on Chromium 156 (``cdpnb.state.dialogs``):

* a dialog the browser is closing itself (``superseded``, ``navigation``) is given a
  moment to close; if it does not, it counts as lost;
* ``chromium`` (``hasBrowserHandler``) with an orphaned dialog (``orphaned``,
  ``handle_lost``): a same-document navigation of the top frame to the current URL
  with a fragment closes it (result false), the page and its frames stay; the URL is
  put back with ``history.replaceState`` (the history keeps one more entry);
* ``headless-shell`` (``handle_taken``, ``wedged``, ``handle_lost``): nothing short of a
  new page frees the frame, so once no answerable dialog is left on the page the page
  is replaced: closed, and (for the supervisor's own page) a fresh ``about:blank``
  one created and set up. A popup is closed.

A page marked with a hazard (a Chromium bug that crashes the browser at its next
native dialog, navigation, reload or close) is frozen at once
(``Page.setWebLifecycleState``, sent from the reader's thread: none of its script runs
again) and abandoned: detached and left open, never closed or navigated; the
supervisor gets a fresh page in its place. Each action is said in a
``cdpnb.*`` note, counted in ``stats()`` and announced as a ``CdpnbWarning`` hint.
"""

from __future__ import annotations

import contextlib
import json
import logging
import threading

from cdpnb.errors import COMMAND_FAILURES
from cdpnb.protocol import Message
from cdpnb.state import Change, DialogRecord, PageInfo, PendingDialog
from cdpnb.state.changes import PageHazard
from cdpnb.state.dialogs import BROWSER_CLOSES, UNANSWERABLE, answerable_dialog
from cdpnb.supervisor.context import SupervisorContext

__all__ = ["Recovery", "released_hint"]

log = logging.getLogger("cdpnb.supervisor")

#: How long the browser gets to close a dialog it is closing itself (measured: 0–3 ms;
#: Firefox's close of a prompt a navigation closed came ~4 ms after the navigation's
#: reply). A navigation waits this long for it too (``PageControl``).
BROWSER_CLOSE_GRACE_S = 1.0
#: How long a release (same-document navigation) may take to close the dialog.
RELEASE_WAIT_S = 2.0
#: How long closing (or detaching from) a page may take to show in the state.
CLOSE_WAIT_S = 5.0


#: Why a dialog is released, in plain words (``cdpnb.state.dialogs.UNANSWERABLE`` has
#: the browser's side), and what to do about it.
_RELEASED_WHY = {
    "orphaned": ("it opened while a dialog of another frame of the page was open, and "
                 "Chromium then cannot answer it",
                 "So that two are rarely open at once, answer each dialog as soon as it "
                 "opens (policy='auto_accept' or 'auto_dismiss'; cdpnb record --dialogs "
                 "accept or dismiss)."),
    "handle_lost": ("Chromium says no dialog is showing, though the page still waits on it",
                    "Nothing to do."),
}
#: What the page's call got from a dismissal.
_DISMISSED_RETURNS = {"alert": "alert() call returned", "confirm": "confirm() returned false",
                      "prompt": "prompt() returned null"}


def released_hint(dialog: PendingDialog) -> str:
    """The hint for a dialog cdpnb released: what happened and what to do, in words a
    newcomer reads (the state's reason names, "orphaned", stay in the records)."""
    reason = dialog.unanswerable or ""
    why, advice = _RELEASED_WHY.get(
        reason, (UNANSWERABLE.get(reason, "the browser cannot answer it")
                 .replace("{other}", "a newer one"), "Nothing to do."))
    returned = _DISMISSED_RETURNS.get(dialog.type)
    got = f" (the page's {returned})" if returned else ""
    where = f"frame {dialog.frame_id}" if dialog.frame_id else "the page"
    return (f"{dialog.id}, {'an' if dialog.type[0] in 'aeiou' else 'a'} {dialog.type} in "
            f"{where}, could not be answered: {why}. cdpnb released it: "
            f"closed it as Cancel would{got}, reloading nothing, so the page goes on as it "
            f"was. {advice}")


class Recovery:
    """One per supervisor; ``free(page)`` runs at most once at a time per page."""

    def __init__(self, context: SupervisorContext) -> None:
        self.core = context.core
        #: Ends and opens pages, and reaches a page's own CDP session, in its protocol.
        self.driver = context.driver
        self.hint = context.hint
        self._busy: set[str] = set()
        self._busy_lock = threading.Lock()
        #: Replaced pages of our own: the target that replaced each one.
        self.replacements: list[tuple[str, str]] = []

    # -- triggers (from DialogControl and the supervisor's listener) -----------------

    def on_unanswerable(self, dialog: PendingDialog) -> None:
        if dialog.page_session_id is not None:
            self.schedule(dialog.page_session_id)

    def on_closed(self, record: DialogRecord) -> None:
        """(On the thread that folded the close.) Free the page if it is stuck now."""
        page = record.page_session_id
        if page is not None and self._stuck(page):
            self.schedule(page)

    def freeze_at_once(self, message: Message, changes: tuple[Change, ...]) -> None:
        """On the reader's thread, as the hazard is folded: the driver stops the page's
        script before the next message is read (``CDPDriver.freeze_at_once`` says why)."""
        for change in changes:
            if type(change) is PageHazard:
                assert isinstance(change, PageHazard)
                self.driver.freeze_at_once(change.page)

    def on_hazard(self, page: PageInfo) -> None:
        self.hint(f"page {page.target_id}: {page.hazard}. cdpnb froze it at once (none of "
                  "its script runs again, so it cannot open that dialog) and abandons it: "
                  "it is left open, never navigated, reloaded or closed.")
        # (counted by the fold, with the PageHazard change: pages-hazardous)
        with self._busy_lock:
            if page.session_id in self._busy:
                return
            self._busy.add(page.session_id)
        self.core.spawn(self._abandon(page), name=f"cdpnb-abandon-{page.session_id[:8]}")

    async def _abandon(self, page: PageInfo) -> None:
        try:
            current = self.core.state.pages.get(page.session_id)
            if current is not None:
                await self.replace(current, "its frame went with a dialog open, and Chromium "
                                            "would crash at its next dialog, navigation, "
                                            "reload or close")
        finally:
            self._busy.discard(page.session_id)

    @property
    def busy(self) -> bool:
        """Whether a page is being freed (released, or replaced by a fresh one) now."""
        return bool(self._busy)

    async def settled(self, timeout: float) -> None:
        """Once no page is being freed (at most ``timeout`` s): a call that needs the
        supervisor's page waits for the fresh one a replacement is opening."""
        with contextlib.suppress(TimeoutError):
            await self.core.wait_until(lambda s: not self._busy, timeout)

    def schedule(self, page_session_id: str) -> None:
        with self._busy_lock:  # (from the engine, and from the folding thread's close)
            if page_session_id in self._busy:
                return
            self._busy.add(page_session_id)
        self.core.spawn(self._free(page_session_id), name=f"cdpnb-free-{page_session_id[:8]}")

    # -- what is stuck ------------------------------------------------------------------

    def _stuck(self, page: str) -> list[PendingDialog]:
        """Unanswerable native dialogs on ``page`` with nothing answerable left above them."""
        state = self.core.state
        if answerable_dialog(state, page) is not None:
            return []  # the browser still answers one; its close will call us again
        return [d for d in state.pending_dialogs
                if d.via == "native" and d.page_session_id == page and not d.answerable
                and d.answering is None]

    async def _free(self, page: str) -> None:
        try:
            info = self.core.state.pages.get(page)
            lost = [d for d in self._stuck(page) if d.unanswerable not in BROWSER_CLOSES]
            if lost and info is not None and lost[-1].has_browser_handler and info.hazard is None:
                await self.release(info, lost[-1])
            if self._stuck(page):
                # What the browser is closing itself (measured: within 0-3 ms) gets a moment.
                with contextlib.suppress(TimeoutError):
                    await self.core.wait_until(lambda s: not self._stuck(page),
                                               BROWSER_CLOSE_GRACE_S)
            stuck = self._stuck(page)
            info = self.core.state.pages.get(page)
            if not stuck or info is None:
                return
            await self.replace(info, f"{len(stuck)} dialog(s) the browser cannot answer "
                                     f"({', '.join(f'{d.id}: {d.unanswerable}' for d in stuck)})")
        finally:
            self._busy.discard(page)

    # -- the two remedies ---------------------------------------------------------------

    async def release(self, page: PageInfo, dialog: PendingDialog) -> bool:
        """Close ``dialog`` (result false) by a same-document navigation of the top
        frame; True when it closed."""
        core = self.core
        sid = page.session_id
        core.note("cdpnb.dialogAnswering", {"dialog_id": dialog.id, "accept": False,
                                            "prompt_text": None, "closed_by": "cdpnb",
                                            "reason": "released"}, sid)
        ok = False
        try:
            send = await self.driver.page_sender(page)
            history = await send("Page.getNavigationHistory", None)
            entry = history["entries"][history["currentIndex"]]
            url = str(entry["url"])
            target = url if "#" in url else url + "#"
            await send("Page.navigate", {"url": target})
            await core.wait_until(
                lambda s: all(d.id != dialog.id for d in s.pending_dialogs), RELEASE_WAIT_S)
            ok = True
            if target != url:
                with contextlib.suppress(*COMMAND_FAILURES):
                    restore = f"history.replaceState(history.state, '', {json.dumps(url)})"
                    await send("Runtime.evaluate", {"expression": restore})
        except (*COMMAND_FAILURES, TimeoutError, LookupError, TypeError) as exc:
            log.info("cdpnb: releasing %s failed: %s", dialog.id, exc)
        finally:
            core.note("cdpnb.dialogAnswered", {"dialog_id": dialog.id, "ok": ok,
                                               **({} if ok else {"error": "release failed"})},
                      sid)
        if ok:  # (counted by the fold, with its close: dialogs-released)
            self.hint(released_hint(dialog))
        return ok

    async def replace(self, page: PageInfo, why: str) -> None:
        """End ``page`` (closed, or abandoned if touching it would crash the browser)
        and, for the supervisor's own page, open a fresh one."""
        core = self.core
        sid = page.session_id
        core.note("cdpnb.pageReplacing", {"session_id": sid, "reason": why}, sid)
        try:
            await self.driver.end_page(page)
            with contextlib.suppress(TimeoutError):
                await core.wait_until(lambda s: sid not in s.pages, CLOSE_WAIT_S)
        except COMMAND_FAILURES as exc:
            log.info("cdpnb: ending page %s failed: %s", page.target_id, exc)
        core.note("cdpnb.pageReplaced" if page.main else "cdpnb.popupClosed",
                  {"target_id": page.target_id, "reason": why}, sid)
        kept = "abandoned (left open, frozen)" if page.hazard else "closed"
        if not page.main:
            self.hint(f"popup {page.target_id} was {kept}: {why}.")
            return
        await self.driver.open_page()
        new = core.state.page_target_id or "?"
        self.replacements.append((page.target_id, new))
        self.hint(f"the supervisor's page {page.target_id} was {kept} and replaced by a fresh "
                  f"about:blank page {new}: {why}. Frame ids from before are gone; navigate "
                  "again.")
