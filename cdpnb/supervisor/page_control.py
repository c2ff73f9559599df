"""Page and frame control: navigate the page or any frame, reload, replace a document's
content, close a supervised page. The same calls over CDP (Chromium, headless-shell,
Lightpanda where it can) and WebDriver BiDi (Firefox, chromium-bidi), with
Playwright's and Puppeteer's semantics; none of them leaves its caller stuck behind a
dialog.

Measured (Debian Chromium and chromium-headless-shell 156, Firefox ESR 153,
chromium-bidi 17, Lightpanda 1.0.2):

* ``Page.navigate {url, frameId}`` sent on the page's top session navigates any frame
  of the page, an OOPIF included, and its reply comes on that session whatever the
  frame does meanwhile: an in-process frame sent cross-site becomes an OOPIF (a new
  ``iframe`` target attaches, the parent's session gets ``frameDetached`` with
  ``reason: "swap"``), an OOPIF sent back to its parent's site rejoins the page's
  process (its session detaches). Sent on the OOPIF's own session, that second case
  loses its reply (the session detaches first). The new document's
  ``frameNavigated`` (its ``loaderId`` is the reply's) comes on whichever session hosts
  the frame by then, then ``frameStoppedLoading`` after its load event; an OOPIF
  session has no lifecycle events (cdpnb does not enable them there).
* While any native dialog is open on a Chromium page (CDP and chromium-bidi alike),
  every navigation of one of its frames waits: ``Page.navigate`` /
  ``browsingContext.navigate`` get no reply until it closes, whichever frame holds it.
  Firefox navigates the frame at once and closes the prompts open in that frame and
  under it itself. So a frame navigation first dismisses the page's open dialogs on
  Chromium, those in the frame's subtree elsewhere.
* Lightpanda 1.0 ignores ``frameId``: ``Page.navigate`` navigates the top frame, and
  the reply names it. Frame navigation is refused there.
* ``Page.close`` on a page's session runs its beforeunload handler (chromium and
  headless-shell): after a user activation a ``beforeunload`` dialog opens ~3-5 ms
  after the (immediate, empty) reply; accepting it closes the page, dismissing it
  keeps it. ``Target.closeTarget`` closes at once, no beforeunload.
  ``browsingContext.close {promptUnload: true}``: Firefox replies once the prompt is
  answered (either way); chromium-bidi replies when accepted and never when dismissed,
  so the reply is not waited for.
* ``Page.reload`` replies at once (before any beforeunload dialog); dismissing that
  dialog cancels the reload with no further news. ``browsingContext.reload {wait:
  complete}``: Firefox fails it ("Beforeunload prompt was rejected"), chromium-bidi
  never replies. So a dismissed beforeunload is watched for in the state.
* ``document.open(); document.write(html); document.close()`` keeps the window (and
  so the realm an evaluate runs in) on every engine. Chromium fires the new document's
  load inside ``close()`` when nothing is pending, yet says ``readyState ==
  "complete"`` even when a written iframe still loads (its load fires later); Firefox
  fires it later. So ``set_content`` listens for ``load`` from right after
  ``open()`` (which drops earlier listeners) and never reads ``readyState``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Awaitable, Callable, Coroutine, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

from cdpnb.errors import (
    CDPError,
    CdpnbError,
    CommandTimeout,
    ConnectionLost,
    DialogError,
    EvaluateTimeout,
    NavigationError,
    SupervisorStopped,
    TargetGone,
    UnknownFrame,
    UnknownPage,
    WaitTimeout,
)
from cdpnb.protocol import Event, Message, protocol_spec
from cdpnb.protocol.credentials import hide_credentials, redact_url
from cdpnb.runtime.engine import engine
from cdpnb.runtime.first_of import FirstOf
from cdpnb.runtime.waits import wait_for
from cdpnb.session.budget import Budget
from cdpnb.session.core import Core, settle
from cdpnb.session.driver import Command
from cdpnb.session.results import ClosePageResult, NavigateResult, SetContentResult
from cdpnb.state import BrowserState, Change, FrameInfo, PageInfo, PendingDialog
from cdpnb.state.changes import DialogClosed, DialogOpened, FrameRemoved
from cdpnb.state.dialogs import BROWSER_CLOSES, page_session_of
from cdpnb.state.frames import descendants
from cdpnb.supervisor.context import SupervisorContext
from cdpnb.supervisor.dialogs import DialogControl
from cdpnb.supervisor.recovery import BROWSER_CLOSE_GRACE_S, Recovery

__all__ = ["REPLACEMENT_WAIT_S", "SET_CONTENT_SCRIPT", "PageControl"]

T = TypeVar("T")

#: How long a call that needs a page waits for a page being freed (released, or
#: replaced by a fresh one: closing the old takes up to 5 s, then a page is created and
#: set up).
REPLACEMENT_WAIT_S = 15.0

#: ``set_content``'s script, called with the HTML: Playwright's ``setContent``
#: (``document.open(); document.write(html); document.close()``), resolved by the new
#: document's load event. The write runs in a task of its own, so a script in ``html``
#: runs (and may open a dialog) outside the evaluate's in-page timeout; the document's
#: members are taken from the prototypes first (a page may have replaced its own).
SET_CONTENT_SCRIPT = """(html) => new Promise((resolve, reject) => {
  const doc = document, open = Document.prototype.open, write = Document.prototype.write,
        close = Document.prototype.close, listen = EventTarget.prototype.addEventListener;
  setTimeout(() => {
    try {
      open.call(doc);
      listen.call(window, 'load', () => resolve(true), {once: true});
      write.call(doc, html);
      close.call(doc);
    } catch (error) { reject(error); }
  }, 0);
})"""

#: How many dialogs the document a navigation leaves may open while it is being left
#: before the page counts as trapped (a dialog loop) and is replaced: a timer's one
#: dialog is dismissed and the navigation goes on; a loop opens the next at once.
TRAP_DIALOGS = 3

#: Where the browser closes the dialogs a navigation leaves (Firefox), how long one may
#: stay open before the page counts as trapped.
TRAP_GRACE_S = 2.0


class _Trapped(Exception):
    """The document a navigation leaves keeps it from starting (internal: the page is
    replaced); ``why`` says how, in words."""

    def __init__(self, why: str, *, freed: bool = False) -> None:
        super().__init__(why)
        self.why = why
        #: The page was replaced already (by the recovery), not to be replaced again.
        self.freed = freed


#: chromium-bidi's error when a navigation's browsing context was disposed of under it.
DISPOSED = "navigation canceled by context disposal"

#: Evaluates in a frame over CDP (the supervisor's ``_evaluate``: frame contexts,
#: retries, one budget): (expression, frame_id, budget, await_promise, user_gesture).


def _subtree_of(state: BrowserState, frame_id: str) -> set[str]:
    """``frame_id`` and the frames inside it, as the state knows them now."""
    return descendants({k: f.parent_frame_id for k, f in state.frames.items()}, {frame_id})


def _dialog_seq(dialog_id: str) -> int:
    """The number in a dialog id (``d-7`` → 7; 0 for anything else)."""
    _, _, number = dialog_id.partition("-")
    return int(number) if number.isdigit() else 0


class _Loading:
    """One frame's next document, watched on the receiving thread: ``done`` is set once
    the document of loader ``wanted`` (``expect``; or, with ``first_new``, the first one
    the frame commits from now on) has loaded, or fails at once when the frame goes or
    a beforeunload dialog on its page is dismissed (the navigation will not happen).

    Loaded means ``frameStoppedLoading`` after that document's ``frameNavigated``, on
    whichever session hosts the frame by then, or a ``load`` lifecycle event for that
    loader (the page session's; Lightpanda's); over WebDriver BiDi, ``browsingContext.
    load`` of that navigation (``navigation`` is the first one started from now on)."""

    METHODS = ("Page.frameNavigated", "Page.frameStoppedLoading", "Page.lifecycleEvent",
               "browsingContext.navigationStarted", "browsingContext.load")

    def __init__(self, core: Core, frame_id: str, page_session_id: str, what: str, *,
                 frames_flicker: bool, first_new: bool = False) -> None:
        self.core = core
        #: The frame may leave the tree for a moment (``ProtocolDriver.frames_flicker``).
        self.frames_flicker = frames_flicker
        self.frame_id = frame_id
        self.page_session_id = page_session_id
        self.what = what
        self.first_new = first_new
        self.wanted: str | None = None
        self.committed: str | None = None
        self.navigation: str | None = None
        self.loaded: set[str] = set()
        self.since = core.state.dialog_seq  # dialogs opened before are not this call's
        self.done: asyncio.Future[None] = core.waiter()
        self._unsubscribe = core.subscribe(self, methods=self.METHODS,
                                           changes=[DialogClosed, FrameRemoved], now=True)

    def __call__(self, message: Message, changes: tuple[Change, ...]) -> None:
        if type(message) is Event:
            params = message.params
            if params.get("context") == self.frame_id:  # (WebDriver BiDi)
                if message.method == "browsingContext.navigationStarted":
                    self.navigation = self.navigation or str(params.get("navigation"))
                elif message.method == "browsingContext.load":
                    self.loaded.add(str(params.get("navigation")))
            elif message.method == "Page.frameNavigated":
                frame = params.get("frame")
                if isinstance(frame, dict) and frame.get("id") == self.frame_id:
                    self.committed = str(frame.get("loaderId"))
                    if self.first_new and self.wanted is None:
                        self.wanted = self.committed
            elif params.get("frameId") == self.frame_id:
                if message.method == "Page.frameStoppedLoading" and self.committed:
                    self.loaded.add(self.committed)
                elif message.method == "Page.lifecycleEvent" and params.get("name") == "load":
                    self.loaded.add(str(params.get("loaderId")))
        for change in changes:
            if (type(change) is FrameRemoved and change.frame.frame_id == self.frame_id
                    and not self.frames_flicker):
                settle(self.done, error=NavigationError(
                    f"{self.what}: frame {self.frame_id} went away (its page closed, or "
                    f"its parent removed or navigated it)"))
            elif type(change) is DialogClosed and (stopped := self.stopped()) is not None:
                settle(self.done, error=stopped)
        self._check()

    def stopped(self) -> NavigationError | None:
        """The error to raise when a beforeunload dialog of this call's page has been
        dismissed since it began (the navigation will not happen), else None."""
        record = next((r for r in self.core.state.recent_dialogs
                       if r.type == "beforeunload" and r.accepted is False
                       and r.page_session_id == self.page_session_id
                       and _dialog_seq(r.id) > self.since), None)
        if record is None:
            return None
        return NavigationError(f"{self.what} did not happen: its beforeunload dialog "
                               f"{record.id} was dismissed ({record.closed_by}), so the page "
                               "stays as it was")

    def expect(self, loader: str) -> None:
        if self.wanted is None:
            self.wanted = loader
        self._check()

    def _check(self) -> None:
        if self.wanted is not None and self.wanted in self.loaded:
            settle(self.done, None)

    def close(self) -> None:
        self._unsubscribe()
        self.core.forget(self.done)


async def _unless(work: Awaitable[T], watch: asyncio.Future[Any], timeout: float) -> T:
    """``work``'s result within ``timeout`` s (TimeoutError after), unless ``watch``
    fails first: then its error. Whatever is left of ``work`` is cancelled (a command's
    late reply is nobody's)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    async with FirstOf(work, watch) as first:
        await first.wait(timeout)
        if not first.command_done and (failed := first.condition_error) is not None:
            raise failed
        # (the watch ended well first, or the work did: the work still counts)
        return await first.command_result(deadline - loop.time())


@dataclass(frozen=True)
class _Closing:
    """One close_page of page session ``sid``, begun after dialog ``since``."""

    sid: str
    since: int
    waits_for_answer: bool  # a beforeunload left for someone to answer ends the wait

    def asked(self, state: BrowserState) -> PendingDialog | None:
        """The beforeunload dialog the close opened, still waiting for an answer."""
        return next((d for d in state.pending_dialogs
                     if d.type == "beforeunload" and d.page_session_id == self.sid
                     and _dialog_seq(d.id) > self.since and d.answering is None), None)

    def settled(self, state: BrowserState) -> bool:
        """Closed; or its beforeunload dismissed (the page stays); or a beforeunload
        dialog waits for an answer someone has to give."""
        now = state.pages.get(self.sid)
        return (now is None or not now.closing
                or (self.waits_for_answer and self.asked(state) is not None))

    def dialog_id(self, state: BrowserState) -> str | None:
        """The beforeunload dialog the close opened: still open, else answered."""
        dialog = self.asked(state)
        if dialog is not None:
            return dialog.id
        record = next((r for r in reversed(state.recent_dialogs)
                       if r.type == "beforeunload" and r.page_session_id == self.sid
                       and _dialog_seq(r.id) > self.since), None)
        return record.id if record is not None else None


def _shows_native_dialog(state: BrowserState, page_session_id: str) -> bool:
    return any(d.via == "native" and d.page_session_id == page_session_id
               for d in state.pending_dialogs)


class _OldDocumentWatch:
    """While a page is navigated away: the native dialogs its old document opens (since
    ``began``, before the new document commits), dismissed where the driver dismisses
    before navigating, else left to the browser for ``TRAP_GRACE_S``; _Trapped once
    ``TRAP_DIALOGS`` came in a row, one is kept open, or the recovery replaced the page
    (``PageControl._clear_of_the_old_document``)."""

    def __init__(self, control: PageControl, session_id: str, began: float) -> None:
        self.control = control
        self.session_id = session_id
        self.began = began
        self.seen: set[str] = set()
        #: Whether the document being left had a native dialog open as the call began.
        self.left_with_dialog = _shows_native_dialog(control.core.state, session_id)

    def replaced(self, state: BrowserState) -> bool:
        now = state.pages.get(self.session_id)
        return now is None or now.replacing

    def stray_load(self, state: BrowserState) -> bool:
        """A document left with a dialog open whose load the browser then reported
        under the new navigation (``PageInfo.stray_load_at``): the navigation will not
        reply (Firefox, where a loop's alerts no longer open once the page is being
        left, so no count of dialogs can tell). A page left while it loads, without a
        dialog, is not judged by this."""
        now = state.pages.get(self.session_id)
        return now is not None and now.stray_load_at is not None \
            and now.stray_load_at >= self.began and (self.left_with_dialog or bool(self.seen))

    def fresh(self, state: BrowserState) -> list[PendingDialog]:
        now = state.pages.get(self.session_id)
        if now is None or (now.last_commit is not None and now.last_commit >= self.began):
            return []  # the new document's dialogs are the new page's own
        return [d for d in state.pending_dialogs
                if d.page_session_id == self.session_id and d.via == "native"
                and d.opened_at >= self.began and d.id not in self.seen
                and d.answering is None and d.type != "beforeunload"]

    async def run(self) -> None:
        core = self.control.core
        while True:
            state = await core.wait_until(
                lambda s: self.replaced(s) or self.stray_load(s) or bool(self.fresh(s)), None)
            if self.replaced(state):
                raise _Trapped("cdpnb's recovery replaced it meanwhile", freed=True)
            if self.stray_load(state):
                raise _Trapped("the browser reported the load of the document it left, "
                               "whose onload it had just ended, as the new navigation's "
                               "(a dialog loop in onload)")
            opened = self.fresh(state)
            self.seen.update(d.id for d in opened)
            if len(self.seen) >= TRAP_DIALOGS:
                raise _Trapped(f"its document opened {len(self.seen)} dialogs in a row "
                               "while it was being left (a dialog loop)")
            if self.control.driver.dismiss_before_navigating:
                await self.control._dismiss_before_navigating(opened, self.session_id)
            else:
                await self._left_to_the_browser()

    async def _left_to_the_browser(self) -> None:
        # The browser closes what a navigation leaves (Firefox); one it keeps open past
        # the grace is a page that will not let go.
        core, seen = self.control.core, self.seen
        with contextlib.suppress(TimeoutError):
            await core.wait_until(lambda s: not any(d.id in seen for d in s.pending_dialogs),
                                  TRAP_GRACE_S)
        if any(d.id in seen for d in core.state.pending_dialogs):
            raise _Trapped("its document opened a dialog while it was being left that the "
                           f"browser kept open {TRAP_GRACE_S:g} s")


def _trapped_by(watch: asyncio.Future[None]) -> _Trapped | None:
    """The _Trapped ``watch`` ended with, if it did."""
    if watch.done() and not watch.cancelled():
        error = watch.exception()
        if isinstance(error, _Trapped):
            return error
    return None


class PageControl:
    """navigate / reload / set_content / close_page for one supervisor."""

    def __init__(self, context: SupervisorContext, dialogs: DialogControl,
                 recovery: Recovery) -> None:
        self.core = context.core
        self.dialogs = dialogs
        self.recovery = recovery
        #: Evaluates set_content's script in the endpoint's protocol.
        self.driver = context.driver
        self.policy = context.options.policy
        #: The supervisor's reopen_page: its own page, once closed, is replaced.
        self.reopen_page = context.options.reopen_page

    # -- navigate -------------------------------------------------------------------------

    async def navigate(self, url: str, frame_id: str | None, timeout: float) -> NavigateResult:
        """The page (``frame_id`` None or the page's top frame): as ever. Any other
        frame of a supervised page: that frame alone, its parent untouched."""
        state = self.core.state
        if frame_id is None or (frame_id == state.page_target_id
                                and state.page_gone is None):
            loop = asyncio.get_running_loop()
            deadline = loop.time() + timeout
            began = time.time()  # (before the dismissals: a loop reopens at once)
            page = await self._prepare_navigation()
            try:
                result = await self._clear_of_the_old_document(
                    page, lambda: self.driver.navigate_page(url, page, timeout), began,
                    timeout)
            except _Trapped as trapped:
                page = await self._free_trapped(page, trapped, "navigate()")
                result = await self.driver.navigate_page(
                    url, page, max(0.001, deadline - loop.time()))
            await self._browser_closes(page)
            return result
        return await self._navigate_frame(url, frame_id, timeout)

    async def _clear_of_the_old_document(self, page: PageInfo,
                                         navigation: Callable[[], Awaitable[T]],
                                         began: float, timeout: float) -> T:
        """Run ``navigation`` of ``page`` while keeping it clear of the document it
        leaves. Measured on Chromium 156: a dialog the old document opens after the
        navigation began (a timer, or ``onload = () => { for (;;) alert() }`` whose alert
        the navigation's start closed) holds the navigation for good (``Page.navigate``
        never replies) until it is answered. Such a dialog is dismissed as those open
        before a navigation are (``cdpnb`` / ``navigation``, where the driver dismisses
        before navigating); a document that opens another each time one closes, or that
        keeps one open where cdpnb does not dismiss, traps the page: _Trapped, and the
        caller frees it. A page cdpnb's recovery replaces meanwhile (a dialog it could
        not dismiss: ``wedged``) is _Trapped too, already freed. ``began``: when the
        call began (wall clock), before the dismissals that come first."""
        watch = _OldDocumentWatch(self, page.session_id, began)
        # (Without a commit in the state, the old document's dialogs cannot be told
        # from the new one's: the navigation runs unwatched.)
        if not protocol_spec(self.driver.name).sees_commits:
            return await navigation()
        watching = asyncio.ensure_future(watch.run())
        try:
            # (A second past the navigation's own budget: its own timeout says more.)
            return await _unless(navigation(), watching, timeout + 1.0)
        except Exception as exc:
            trapped = _trapped_by(watching)
            if trapped is not None and trapped is not exc \
                    and not isinstance(exc, ConnectionLost | SupervisorStopped):
                # Both had failed by the time the race looked (chromium, reload of a
                # dialog loop beside two busy processes, 1 run in 72): the recovery had
                # replaced the trapped page, and the navigation it held failed because
                # its frame went away. The watch names the cause, and the caller goes
                # on with the fresh page. (Not when the connection ended: no page is.)
                raise trapped from exc
            if isinstance(exc, TimeoutError) and not isinstance(exc, CdpnbError):
                raise WaitTimeout(f"navigating page {page.target_id} did not finish "
                                  f"within {timeout:g} s") from None
            raise
        finally:
            if not watching.done():
                watching.cancel()
            await asyncio.wait({watching})
            if not watching.cancelled():
                watching.exception()  # retrieved (a _Trapped after the navigation's end)

    async def _free_trapped(self, page: PageInfo, trapped: _Trapped, call: str) -> PageInfo:
        """Replace a page whose document traps its navigation (a hint says so) and
        return the fresh one, to navigate instead."""
        if trapped.freed:
            await engine.run(self.recovery.settled(REPLACEMENT_WAIT_S))
            return self._page_named(None)
        await engine.run(self.recovery.replace(
            page, f"{call} found the page trapped: {trapped.why}, so the navigation could "
                  "never finish"))
        return self._page_named(None)

    async def _browser_closes(self, page: PageInfo) -> None:
        """Once a navigation of ``page`` has loaded, wait (briefly) for the browser to
        close the dialogs it said it would close, so that what the caller reads next
        has them closed and recorded. Measured on Firefox ESR 153, 4 runs in 20: the
        ``userPromptClosed`` of an alert the navigation closed came ~4 ms after
        ``browsingContext.navigate``'s reply (after ``load``). The wait is the one the
        recovery gives the browser before it frees a page whose dialog is not closed
        (``BROWSER_CLOSE_GRACE_S``): should the close never come, the page is freed
        meanwhile and the dialog recorded as closed by cdpnb."""
        def closed(state: BrowserState) -> bool:
            return not any(d.page_session_id == page.session_id
                           and d.unanswerable in BROWSER_CLOSES
                           for d in state.pending_dialogs)

        with contextlib.suppress(TimeoutError):
            await self.core.wait_until(closed, BROWSER_CLOSE_GRACE_S)

    async def _prepare_navigation(self, call: str = "navigate()") -> PageInfo:
        """What a navigation of our page must not run into; the page (TargetGone when
        there is none). A page Chromium would crash on is replaced (abandoned). Where
        the driver says so (``dismiss_before_navigating``), the page's open native
        dialogs are dismissed first, and a dialog the browser can no longer answer
        means a fresh page; bridged dialogs always are (their frames' script waits)."""
        if self.recovery.busy:
            await engine.run(self.recovery.settled(REPLACEMENT_WAIT_S))
        if not self.core.connected:
            raise self.core.down(call)
        page = self._page_named(None)
        if page.hazard is not None:
            await engine.run(self.recovery.replace(
                page, f"{call} was asked on a page Chromium would crash on"))
            return self._page_named(None)
        state = self.core.state
        native = [d for d in state.pending_dialogs
                  if d.via == "native" and d.page_session_id == page.session_id
                  and d.has_browser_handler is not True and d.type != "beforeunload"
                  ] if self.driver.dismiss_before_navigating else []
        if any(not d.answerable for d in native):
            await engine.run(self.recovery.replace(
                page, f"{call} was asked while a dialog the browser cannot answer blocks "
                      "the page"))
            return self._page_named(None)
        await self._dismiss_before_navigating(native, page.session_id)
        if not self.driver.dismiss_before_navigating and _shows_native_dialog(
                self.core.state, page.session_id):
            # Left to the browser: the fold learns it from us, before the browser's
            # own news (``cdpnb.state.bidi.page_navigating``: why).
            self.core.note("cdpnb.pageNavigating", {"session_id": page.session_id},
                           page.session_id)
        return page

    async def _dismiss_before_navigating(self, native: list[PendingDialog],
                                         page_session_id: str,
                                         frames: set[str] | None = None) -> None:
        """Before a navigation: dismiss ``native`` and the page's bridged dialogs (those
        in ``frames``, if given) (``cdpnb`` / ``navigation``), so that the navigation
        never waits on one. A bridged call blocks its frame's script; Lightpanda 1.0
        (one thread) then never replied to ``Page.navigate`` at all (measured), and
        elsewhere a navigation's own news would end it a moment later anyway
        (``bridged_dialogs_navigated``)."""
        bridged = [d for d in self.core.state.pending_dialogs
                   if d.via == "bridge" and d.page_session_id == page_session_id
                   and d.answering is None and (frames is None or d.frame_id in frames)]
        for dialog in (*native, *bridged):
            with contextlib.suppress(DialogError):
                await self.dialogs.answer(dialog, False, None, "cdpnb", reason="navigation")

    # -- a frame --------------------------------------------------------------------------

    def _frame_and_page(self, frame_id: str) -> tuple[FrameInfo, PageInfo]:
        if not isinstance(frame_id, str):
            raise TypeError(f"frame_id must be a str, got {type(frame_id).__name__}")
        state = self.core.state
        if not self.core.connected:
            raise self.core.down(f"reach frame {frame_id}")
        frame = state.frames.get(frame_id)
        if frame is None:
            known = ", ".join(list(state.frames)[:8]) or "none"
            raise UnknownFrame(f"frame {frame_id!r} is not in the frame tree (known: {known})")
        page = state.pages.get(page_session_of(state, frame.session_id) or "")
        if page is None:
            raise TargetGone(f"frame {frame_id!r} belongs to no supervised page now")
        return frame, page

    def _holds_navigations(self) -> bool:
        """Whether an open native dialog anywhere on a page holds its frames'
        navigations (and its renderer's script): Chromium's, over CDP or chromium-bidi."""
        return self.driver.holds_navigations(self.core.state)

    async def _clear_for(self, frame: FrameInfo, page: PageInfo, call: str) -> None:
        """Dismiss the dialogs a navigation (or a new document) of ``frame`` would wait
        on: every open dialog of its page on Chromium, those in its subtree elsewhere
        (``cdpnb`` / ``navigation``). A beforeunload dialog is left alone: it is the
        question of a navigation already asked for. One the browser cannot answer is a
        NavigationError (cdpnb frees such a page by itself: try again then)."""
        state = self.core.state
        subtree = descendants({k: f.parent_frame_id for k, f in state.frames.items()},
                              {frame.frame_id})
        if self._holds_navigations():
            scope = {f for f, info in state.frames.items()
                     if page_session_of(state, info.session_id) == page.session_id}
        else:
            scope = subtree
        open_now = [d for d in state.pending_dialogs
                    if d.page_session_id == page.session_id and d.answering is None
                    and d.type != "beforeunload" and d.frame_id in scope]
        stuck = [d for d in open_now if d.via == "native" and not d.answerable
                 and d.unanswerable not in BROWSER_CLOSES]
        if stuck:
            listed = ", ".join(f"{d.id} ({d.type} in frame {d.frame_id}: {d.unanswerable})"
                               for d in stuck)
            raise NavigationError(
                f"{call}: the page holds dialogs the browser cannot answer ({listed}), and "
                "the browser would hold the frame behind them; cdpnb frees such a page "
                "itself (sup.hints says how): try again once it has")
        native = [d for d in open_now if d.via == "native" and d.answerable]
        await self._dismiss_before_navigating(native, page.session_id, scope)

    async def _navigate_frame(self, url: str, frame_id: str, timeout: float) -> NavigateResult:
        core = self.core
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        if self.recovery.busy:
            await engine.run(self.recovery.settled(REPLACEMENT_WAIT_S))
        frame, page = self._frame_and_page(frame_id)
        if (core.state.engine or "").startswith("Lightpanda"):
            raise NavigationError(
                "navigate(frame_id=...) is not possible on Lightpanda 1.0: it navigates the "
                "top frame whatever Page.navigate's frameId says (measured); use evaluate("
                "\"location.href = ...\", frame_id=...) in the frame instead")
        shown = redact_url(url)
        what = f"navigating frame {frame_id} to {shown}"
        await self._clear_for(frame, page, what)
        loading = _Loading(core, frame_id, page.session_id, what,
                           frames_flicker=self.driver.frames_flicker)
        try:
            reply = await self._send_navigation(
                self.driver.navigate_command(url, frame_id, page), loading, deadline, what,
                timeout)
            navigated = self.driver.navigated(reply)
            if navigated.error:
                raise NavigationError(f"{what} failed: {navigated.error}")
            if navigated.await_load and navigated.loader:
                # (no loader: a same-document navigation, done already)
                loading.expect(navigated.loader)
                await self._loaded(loading, deadline, what, timeout)
            return NavigateResult(url, frame_id, navigated.loader)
        finally:
            loading.close()

    async def _send_navigation(self, command: Command, loading: _Loading, deadline: float,
                               what: str, timeout: float) -> dict[str, Any]:
        loop = asyncio.get_running_loop()
        left = max(0.001, deadline - loop.time())
        method, params, session = command
        try:
            return await _unless(self.core.send(method, params, session, left), loading.done,
                                 left)
        except (TimeoutError, CommandTimeout):
            raise WaitTimeout(f"{what} did not finish within {timeout:g} s"
                              f"{self._pending_hint()}") from None
        except CDPError as exc:
            if DISPOSED in exc.message and loading.navigation is not None:
                # chromium-bidi 17, a frame leaving an OOPIF for its parent's process
                # (measured): navigationFailed, contextDestroyed, the command fails with
                # this; then the context comes back (same id) and the same navigation
                # commits and loads. (Only BiDi's navigationStarted names a navigation:
                # the reply made up here is BiDi's.)
                loading.expect(loading.navigation)
                await self._loaded(loading, deadline, what, timeout)
                return {"navigation": loading.navigation}
            stopped = loading.stopped()
            if stopped is not None:  # (Firefox: "Beforeunload prompt was rejected")
                raise stopped from None
            refused = self.driver.navigation_refused(exc)
            if refused is None:
                raise
            why = hide_credentials(exc.message)
            raise NavigationError(f"{what} failed: {why}{refused}") from None

    async def _loaded(self, loading: _Loading, deadline: float, what: str,
                      timeout: float) -> None:
        loop = asyncio.get_running_loop()
        try:
            await wait_for(loading.done, max(0.0, deadline - loop.time()))
        except TimeoutError:
            raise WaitTimeout(f"{what} did not finish loading within {timeout:g} s"
                              f"{self._pending_hint()}") from None

    def _pending_hint(self) -> str:
        pending = self.core.state.pending_dialogs
        if not pending:
            return ""
        listed = ", ".join(f"{d.id} ({d.type} in frame {d.frame_id})" for d in pending[:5])
        return f"; open dialogs: {listed} (answer them with respond())"

    # -- reload ---------------------------------------------------------------------------

    async def reload(self, timeout: float) -> NavigateResult:
        """Reload the supervisor's page and wait for the new document's load. A
        beforeunload dialog holds it like a navigation; dismissing it is a
        NavigationError (the page stays)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        began = time.time()  # (before the dismissals: a loop reopens at once)
        page = await self._prepare_navigation("reload()")
        frame = self.core.state.frames.get(page.target_id)
        url = frame.url if frame is not None else None
        try:
            return await self._clear_of_the_old_document(
                page, lambda: self._reload(page, deadline, timeout), began, timeout)
        except _Trapped as trapped:
            if not url:
                raise NavigationError(f"reloading page {page.target_id} failed: its "
                                      "document kept opening dialogs and its URL is "
                                      "unknown") from None
            page = await self._free_trapped(page, trapped, "reload()")
            result = await self.driver.navigate_page(url, page,
                                                     max(0.001, deadline - loop.time()))
            await self._browser_closes(page)
            return result

    async def _reload(self, page: PageInfo, deadline: float,
                      timeout: float) -> NavigateResult:
        core = self.core
        top = page.target_id
        what = f"reloading page {top}"
        loading = _Loading(core, top, page.session_id, what,
                           frames_flicker=self.driver.frames_flicker, first_new=True)
        try:
            reply = await self._send_navigation(self.driver.reload_command(page), loading,
                                                deadline, what, timeout)
            navigated = self.driver.navigated(reply)
            loader = navigated.loader
            if navigated.error:
                raise NavigationError(f"{what} failed: {navigated.error}")
            if navigated.await_load:
                if loader:
                    loading.expect(loader)
                await self._loaded(loading, deadline, what, timeout)
                loader = loading.wanted
            await self._browser_closes(page)
            frame = core.state.frames.get(top)
            return NavigateResult(frame.url if frame is not None else None, top, loader)
        finally:
            loading.close()

    # -- set_content ----------------------------------------------------------------------

    async def set_content(self, html: str, frame_id: str | None,
                          timeout: float) -> SetContentResult:
        """Replace the document of ``frame_id`` (the page's top frame when None) with
        ``html`` and wait for its load. A dialog the new document opens that waits for
        an answer (policy ``must_respond``) ends the wait: the result names it
        (``loaded`` False) and the document goes on loading once it is answered."""
        core = self.core
        if self.recovery.busy:
            await engine.run(self.recovery.settled(REPLACEMENT_WAIT_S))
        state = core.state
        if frame_id is None:
            if state.page_gone is not None or state.page_target_id is None:
                raise TargetGone(f"the supervisor's page is gone "
                                 f"({state.page_gone or 'not attached'})")
            frame_id = state.page_target_id
        frame, page = self._frame_and_page(frame_id)
        await self._clear_for(frame, page, f"set_content() in frame {frame_id}")
        budget = Budget(timeout)
        expression = f"({SET_CONTENT_SCRIPT})({json.dumps(html)})"
        writing = self.driver.evaluate(expression, frame_id, budget, await_promise=True,
                                       user_gesture=False)
        # (what is left of the writing when a dialog ends the wait is cancelled: its
        # reply, when the document loads, is nobody's)
        with self._dialog_written(page, frame_id) as asked:
            async with FirstOf(writing, asked) as first:
                try:
                    await first.wait(timeout + 1.0)
                    if not first.command_done and first.condition_met:
                        return SetContentResult(frame_id, loaded=False,
                                                dialog_id=asked.result().dialog.id)
                    await first.command_result(budget.left() + 1.0)
                except (TimeoutError, EvaluateTimeout):
                    raise WaitTimeout(f"the content set in frame {frame_id} did not finish "
                                      f"loading within {timeout:g} s{self._pending_hint()}"
                                      ) from None
        return SetContentResult(frame_id, loaded=True)

    @contextlib.contextmanager
    def _dialog_written(self, page: PageInfo,
                        frame_id: str) -> Iterator[asyncio.Future[DialogOpened]]:
        """The first dialog the document written into ``frame_id`` (or a frame of it)
        opens from now on and leaves for someone to answer: under ``must_respond`` only,
        as the other policies answer at once and the document goes on loading (then a
        waiter only a stop or a lost connection ends)."""
        core = self.core
        since = core.state.dialog_seq

        def written(change: DialogOpened) -> bool:
            dialog = change.dialog
            return (dialog.page_session_id == page.session_id
                    # (the written document's or its frames': never another frame's
                    # that opened meanwhile, to be answered as this one)
                    and dialog.frame_id in _subtree_of(core.state, frame_id)
                    and _dialog_seq(dialog.id) > since
                    # (still open once folded: Lightpanda's never block)
                    and any(d.id == dialog.id for d in core.state.pending_dialogs))

        if self.policy == "must_respond":
            with core.first_change(DialogOpened, written) as opened:
                yield opened
            return
        never: asyncio.Future[DialogOpened] = core.waiter()
        try:
            yield never
        finally:
            core.forget(never)

    # -- close_page -----------------------------------------------------------------------

    def _page_named(self, page: str | None) -> PageInfo:
        state = self.core.state
        if page is None:
            own = state.pages.get(state.page_session_id or "")
            if own is None:
                raise TargetGone(f"the supervisor's page is gone "
                                 f"({state.page_gone or 'not attached'})")
            return own
        found = next((p for p in state.pages.values() if p.target_id == page), None)
        if found is not None:
            return found
        known = ", ".join(p.target_id for p in state.pages.values()) or "none"
        replaced = next((new for old, new in self.recovery.replacements if old == page), None)
        why = f"; cdpnb replaced it with {replaced} (sup.hints says why)" if replaced else ""
        raise UnknownPage(f"no supervised page has target id {page!r} (pages: {known}, "
                          f"see sup.pages){why}", page=page,
                          existing=tuple(p.target_id for p in state.pages.values()))

    async def close_page(self, page: str | None, run_beforeunload: bool,
                         timeout: float) -> ClosePageResult:
        """Close a supervised page, as asked: its end is never "someone else's"."""
        core = self.core
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        if self.recovery.busy:
            await engine.run(self.recovery.settled(REPLACEMENT_WAIT_S))
        if not core.connected:
            raise core.down("close a page")
        info = self._page_named(page)
        sid = info.session_id
        await self._dismiss_before_closing(sid)
        closing = _Closing(sid, core.state.dialog_seq,
                           waits_for_answer=run_beforeunload and self.policy == "must_respond")
        core.note("cdpnb.pageClosing", {"session_id": sid, "closing": True,
                                        "run_beforeunload": run_beforeunload}, sid)
        method, params, session = self.driver.close_command(info, run_beforeunload)
        try:
            state = await self._send_until(core.send(method, params, session, timeout),
                                           closing.settled, timeout)
        except BaseException as exc:
            state = self._close_failed(info, closing, exc, timeout)
        closed = sid not in state.pages
        if closed and info.main and self.reopen_page:
            # reopen_page=True: the supervisor keeps a page; the fresh one is there first.
            with contextlib.suppress(TimeoutError):
                await core.wait_until(lambda s: s.page_target_id is not None,
                                      max(0.0, deadline - loop.time()) + REPLACEMENT_WAIT_S)
        return ClosePageResult(info.target_id, closed, closing.dialog_id(state))

    async def _dismiss_before_closing(self, sid: str) -> None:
        """The page's open dialogs (but a beforeunload), dismissed first where the
        driver's close would not end them (closed_by "cdpnb", reason "page_closing":
        recorded, as a navigation's are)."""
        if not self.driver.dismiss_before_closing:
            return
        for shown in [d for d in self.core.state.pending_dialogs
                      if d.via == "native" and d.page_session_id == sid
                      and d.answering is None and d.type != "beforeunload"]:
            with contextlib.suppress(DialogError):
                await self.dialogs.answer(shown, False, None, "cdpnb", reason="page_closing")

    def _close_failed(self, info: PageInfo, closing: _Closing, exc: BaseException,
                      timeout: float) -> BrowserState:
        """The state to go on from when the close did not happen as asked (refused,
        timed out, cancelled), or the error that says so. Unless the page went anyway or
        its beforeunload dialog waits for an answer, it is no longer closing, so a later
        close by someone else is theirs again."""
        core, sid = self.core, info.session_id
        if sid in core.state.pages and closing.asked(core.state) is None:
            core.note("cdpnb.pageClosing", {"session_id": sid, "closing": False}, sid)
        if isinstance(exc, CDPError):
            if sid not in core.state.pages:
                return core.state  # it went anyway (closed meanwhile)
            raise TargetGone(f"closing page {info.target_id} failed: {exc.message}") from exc
        if isinstance(exc, TimeoutError):
            raise WaitTimeout(f"page {info.target_id} did not close within {timeout:g} s"
                              f"{self._pending_hint()}") from None
        raise exc

    async def _send_until(self, send: Coroutine[Any, Any, Any],
                          until: Callable[[BrowserState], bool],
                          timeout: float) -> BrowserState:
        """Send a command in the background and wait until ``until`` holds (the first
        such state); its error if it fails first. A reply that never comes (chromium-bidi
        after a dismissed beforeunload) is not waited for."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        waiting = asyncio.ensure_future(self.core.wait_until(until, timeout))
        async with FirstOf(send, waiting, owns_condition=True) as first:
            await first.wait(timeout)
            if not waiting.done() and first.command_done:
                await first.command_result(0)  # its error, if it failed
            return await first.condition_result(deadline - loop.time())
