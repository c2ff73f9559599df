"""The Chrome DevTools Protocol under one supervisor: Chromium, headless-shell, the
attached kinds, Node's inspector and Lightpanda.

It attaches the supervised page with flattened auto-attach sessions, follows its
children (OOPIFs, workers) and, with popups on, the pages it opens; evaluates by
execution context; answers with ``Page.handleJavaScriptDialog``; bridges over
``Fetch.requestPaused``; and keeps the accessibility refs (CDP alone has the tree).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Collection
from typing import TYPE_CHECKING, Any, ClassVar

from cdpnb.drivers.cdp import engines
from cdpnb.drivers.cdp.accessibility import to_frame
from cdpnb.drivers.cdp.actions import click_in_frame, click_ref, fill_in_frame, query_in_frame
from cdpnb.drivers.cdp.attach import ChildAttacher, attach_page
from cdpnb.drivers.cdp.bridge import FetchBridge
from cdpnb.drivers.cdp.evaluation import Evaluator, context_gone
from cdpnb.drivers.cdp.existing_pages import attach_chosen_page
from cdpnb.drivers.cdp.liveness import RuntimeExit
from cdpnb.drivers.cdp.pages import PageAttacher
from cdpnb.drivers.cdp.refs import AccessibilityRefs
from cdpnb.drivers.cdp.screenshots import cdp_screenshot
from cdpnb.errors import (
    COMMAND_FAILURES,
    CDPError,
    FrameNotRoutable,
    NavigationError,
    UnknownFrame,
    WaitTimeout,
)
from cdpnb.protocol import Event, Message
from cdpnb.protocol.credentials import hide_credentials, redact_url
from cdpnb.protocol.js_values import RemoteObject
from cdpnb.runtime.waits import wait_for
from cdpnb.session.actions import ClickSpec, ElementState
from cdpnb.session.bridge import BRIDGE_CHANGES
from cdpnb.session.budget import Budget
from cdpnb.session.core import Core, settle
from cdpnb.session.driver import Command, Navigated, PageSender, ProtocolDriver
from cdpnb.session.results import ClickResult, NavigateResult
from cdpnb.state import BrowserState, Change, PageInfo, PendingDialog
from cdpnb.state.routing import context_for_frame, session_for_frame

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["CDPDriver"]

log = logging.getLogger("cdpnb.supervisor")

#: How long evaluate() waits for a just-committed frame's execution context.
CONTEXT_GRACE_S = 2.0
#: Each page closed at stop gets this long.
CLOSE_TIMEOUT_S = 2.0
#: Ending a page recovery replaces gets this long.
END_TIMEOUT_S = 5.0



class CDPDriver(ProtocolDriver):
    name: ClassVar[str] = "cdp"
    lacks: ClassVar[dict[str, str]] = {
        "bidi()": "sup.cdp(method, params) sends a raw CDP command",
        "classic()": "sup.cdp(method, params) sends a raw CDP command"}
    needs: ClassVar[dict[str, str]] = {"classic()": "classic"}
    #: headless-shell wedges a page whose dialog is open when it navigates (measured:
    #: "Not attached to an active page", forever): dismissed first, as Chromium does.
    dismiss_before_navigating: ClassVar[bool] = True
    #: Runs page script (a WIP endpoint's evaluator speaks WIP: ``cdpnb.drivers.wip``).
    evaluator_class: ClassVar[type[Evaluator]] = Evaluator

    def __init__(self, core: Core, *, popups: bool, bypass_csp: bool,
                 bridge_key: str | None, bridge_script: str | None,
                 backend_info: dict[str, Any] | None, hint: Callable[[str], None]) -> None:
        super().__init__(core, FetchBridge(core, bypass_csp=bypass_csp, key=bridge_key,
                                            script=bridge_script), hint)
        self.popups = popups
        self.backend_info = backend_info
        self.pages = PageAttacher(core, self.bridge)
        self.children = ChildAttacher(core, self.bridge)
        self.evaluator = self.evaluator_class(core, hint)
        self.refs = AccessibilityRefs(core, self.evaluator)
        core.subscribe(self.children, methods=["Target.attachedToTarget"])
        core.subscribe(self.pages, methods=["Target.attachedToTarget"])
        # On the receiving thread: a paused bridge call becomes its dialog in the same
        # breath, whatever the engine loop is busy with.
        core.subscribe(self.bridge, methods=["Fetch.requestPaused"], changes=BRIDGE_CHANGES,
                       now=True)
        # A runtime that exited but keeps its socket open (node) is said as gone.
        core.subscribe(RuntimeExit(core), methods=RuntimeExit.METHODS, now=True)

    # -- the connection's life ------------------------------------------------------------

    async def start(self, page: str, bridge_reason: str | None) -> str | None:
        if bridge_reason is not None:
            self.core.note("cdpnb.bridgeEnabled", {"reason": bridge_reason})
        # Browser.getVersion takes as long as the attach's first round trips: overlap.
        _, adopted = await asyncio.gather(
            self._version(), attach_chosen_page(self.core, page, self.bridge))
        await self._follow_popups()
        return adopted

    async def _version(self) -> None:
        with contextlib.suppress(CDPError):
            # What the browser is, in the trace; Node and some proxies lack it.
            self.browser_version = await self.core.send("Browser.getVersion")
        # Engines whose quirks the state must know (Lightpanda's non-blocking dialogs).
        await engines.identify(self.core, self.core.url, self.backend_info)

    async def _follow_popups(self) -> None:
        if self.popups and not self.core.state.direct:
            await self.pages.enable()

    def connection_lost(self) -> None:
        self.pages.reset()

    async def resume(self, target_id: str | None, *, adopted: str | None) -> None:
        await attach_page(self.core, reuse_target_id=target_id, bridge=self.bridge,
                          replace_wedged=target_id != adopted)
        await self._follow_popups()

    async def abandon_start(self) -> None:
        """Over CDP the browser keeps nothing of a closed connection's."""

    async def close_pages(self, leave: Collection[str]) -> None:
        # Popups first (they were opened by our page), then our own page. A page with a
        # crash hazard is left open, frozen: closing it would end the browser. Pages
        # cdpnb did not create are left: closing the connection detaches them.
        core = self.core
        pages = sorted((p for p in core.state.pages.values() if p.target_id not in leave),
                       key=lambda p: p.main)
        for page in pages:
            try:
                if page.hazard is not None:
                    await self._abandon(page, CLOSE_TIMEOUT_S)
                else:
                    await core.send("Target.closeTarget", {"targetId": page.target_id},
                                    timeout=CLOSE_TIMEOUT_S)
            except COMMAND_FAILURES as exc:
                log.info("cdpnb: closing page target %s failed: %s", page.target_id, exc)

    # -- pages ----------------------------------------------------------------------------

    async def open_page(self) -> None:
        await attach_page(self.core, bridge=self.bridge, pages=self.pages)

    async def end_page(self, page: PageInfo) -> None:
        if page.hazard is not None:
            await self._abandon(page, END_TIMEOUT_S)
        else:
            await self.core.send("Target.closeTarget", {"targetId": page.target_id},
                                 timeout=END_TIMEOUT_S)

    async def _abandon(self, page: PageInfo, timeout: float) -> None:
        with contextlib.suppress(*COMMAND_FAILURES):
            await self.core.send("Page.setWebLifecycleState", {"state": "frozen"},
                                 session_id=page.session_id, timeout=timeout)
        await self.core.send("Target.detachFromTarget", {"sessionId": page.session_id},
                             timeout=timeout)

    async def page_sender(self, page: PageInfo) -> PageSender:
        core = self.core

        async def send(method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
            return await core.send(method, params, session_id=page.session_id,
                                   timeout=END_TIMEOUT_S)

        return send

    def freeze_at_once(self, page: PageInfo) -> None:
        """Measured on Chromium 156: a page that kept ``window.confirm`` in a variable
        before anything of cdpnb's was in it called it after its frame went with a
        dialog open, and the browser died (SIGSEGV) ~21 ms later, every page with it; a
        bridge put on the page could not stop a call the page had kept. Frozen before
        the next message is read, none of its script runs again."""
        self.core.post("Page.setWebLifecycleState", {"state": "frozen"},
                       session_id=page.session_id)

    # -- navigation -----------------------------------------------------------------------

    async def navigate_page(self, url: str, page: PageInfo, timeout: float) -> NavigateResult:
        core = self.core
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        session = page.session_id
        loads: set[str] = set()
        wanted: list[str] = []
        loaded = core.waiter()

        def on_message(message: Message, _: tuple[Change, ...]) -> None:
            if (type(message) is Event and message.session_id == session
                    and message.params.get("name") == "load"):
                loads.add(str(message.params.get("loaderId")))
                if wanted and wanted[0] in loads:
                    settle(loaded, None)

        unsubscribe = core.subscribe(on_message, methods=["Page.lifecycleEvent"], now=True)
        shown = redact_url(url)
        try:
            try:
                reply = await core.send("Page.navigate", {"url": url}, session,
                                        max(0.001, deadline - loop.time()))
            except CDPError as exc:
                if self.navigation_refused(exc) is None:
                    raise
                raise NavigationError(f"navigating to {shown} failed: "
                                      f"{hide_credentials(exc.message)}") from None
            navigated = self.navigated(reply)
            if navigated.error:
                raise NavigationError(f"navigating to {shown} failed: {navigated.error}")
            wanted.append(str(navigated.loader))
            if navigated.loader and navigated.loader not in loads:
                try:
                    await wait_for(loaded, max(0.0, deadline - loop.time()))
                except TimeoutError:
                    raise WaitTimeout(f"{shown} did not finish loading within {timeout:g} s "
                                      "(is a dialog open?)") from None
            frame = reply.get("frameId")
            return NavigateResult(url, str(frame) if frame else None, navigated.loader)
        finally:
            unsubscribe()
            core.forget(loaded)

    def navigate_command(self, url: str, frame_id: str, page: PageInfo) -> Command:
        # On the page's top session, whichever process the frame is in (measured: it
        # reaches OOPIFs, and its reply survives the frame changing process).
        return Command("Page.navigate", {"url": url, "frameId": frame_id}, page.session_id)

    def reload_command(self, page: PageInfo) -> Command:
        return Command("Page.reload", {}, page.session_id)

    def close_command(self, page: PageInfo, run_beforeunload: bool) -> Command:
        if run_beforeunload:
            # Page.close runs the page's beforeunload handler (measured on both builds).
            return Command("Page.close", {}, page.session_id)
        return Command("Target.closeTarget", {"targetId": page.target_id}, None)

    def navigated(self, reply: dict[str, Any]) -> Navigated:
        loader = reply.get("loaderId")  # (Lightpanda names a reload's; Chromium does not)
        error = reply.get("errorText")
        return Navigated(str(loader) if loader else None, await_load=True,
                         error=hide_credentials(str(error)) if error else None)

    def navigation_refused(self, error: CDPError) -> str | None:
        # Chromium 156 refuses a URL it cannot parse with an error reply (-32000 "Cannot
        # navigate to invalid URL"), not an errorText: the same failure.
        return "" if "URL" in error.message else None

    def holds_navigations(self, state: BrowserState) -> bool:
        return True  # every engine behind cdpnb's CDP that has frames is Chromium's

    # -- dialogs --------------------------------------------------------------------------

    def native_answer(self, dialog: PendingDialog, accept: bool,
                      prompt_text: str | None) -> Command:
        params: dict[str, Any] = {"accept": accept}
        if prompt_text is not None:
            params["promptText"] = prompt_text
        return Command("Page.handleJavaScriptDialog", params, dialog.session_id)

    # -- commands -------------------------------------------------------------------------

    async def evaluate(self, expression: str, frame_id: str | None, budget: Budget, *,
                       await_promise: bool, user_gesture: bool) -> Any:
        for attempt in (1, 2):
            session, context = await self._context(frame_id, budget)
            try:
                return await self.evaluator.evaluate(session, context, expression, budget,
                                                     await_promise=await_promise,
                                                     user_gesture=user_gesture)
            except CDPError as exc:
                # The frame navigated between the lookup and the call: nothing ran.
                if attempt == 2 or context is None or not context_gone(exc):
                    raise
                self.core.note("cdpnb.evaluateRetried", {}, session)
        raise AssertionError("unreachable")

    async def _context(self, frame_id: str | None,
                       budget: Budget) -> tuple[str | None, int | None]:
        try:
            return context_for_frame(self.core.state, frame_id)
        except FrameNotRoutable:
            # A frame that just committed gets its execution context a moment later.
            def ready(state: BrowserState) -> bool:
                try:
                    context_for_frame(state, frame_id)
                except (FrameNotRoutable, UnknownFrame):
                    return False
                return True

            with contextlib.suppress(TimeoutError):
                await self.core.wait_until(ready, min(CONTEXT_GRACE_S, budget.left()))
            return context_for_frame(self.core.state, frame_id)

    async def send_raw(self, method: str, params: dict[str, Any] | None, budget: Budget, *,
                       frame_id: str | None = None, browser: bool = False,
                       session_id: str | None = None) -> dict[str, Any]:
        if browser:
            session = None
        elif session_id is not None:
            session = session_id
        else:
            session = session_for_frame(self.core.state, frame_id)
        return await self.evaluator.send(method, params, session, budget)

    async def click(self, how: ClickSpec, budget: Budget) -> ClickResult:
        if how.ref is None:
            session, context = await self._context(how.frame_id, budget)
            return await click_in_frame(self.core, how, session, context, budget)
        target = await self.refs.still_there(how.ref, budget)
        return await click_ref(self.core, how, target, budget)

    async def fill(self, how: ClickSpec, text: str, budget: Budget) -> None:
        session, context = await self._context(how.frame_id, budget)
        await fill_in_frame(self.core, how, text, session, context, budget)

    async def query(self, how: ClickSpec, budget: Budget) -> ElementState:
        session, context = await self._context(how.frame_id, budget)
        return await query_in_frame(self.core, how, session, context, budget)

    async def screenshot(self, frame_id: str | None, budget: Budget) -> bytes:
        return await cdp_screenshot(self.core, frame_id, budget)

    async def release_objects(self, timeout: float) -> None:
        state = self.core.state
        sessions = {state.page_session_id} | {f.session_id for f in state.frames.values()
                                              if f.is_oopif}
        sessions.discard(None)  # not connected to a page: nothing to release
        await asyncio.gather(*(self.evaluator.release_group(s, timeout) for s in sessions),
                             return_exceptions=True)

    async def accessibility(self, frame_id: str | None, budget: Budget) -> pd.DataFrame:
        snap = await self.refs.take(budget)
        return to_frame(snap.for_frame(self.core.state, frame_id), snap.skipped)

    async def evaluate_on(self, ref: str | RemoteObject, function: str,
                          arguments: list[dict[str, Any]], budget: Budget, *,
                          await_promise: bool, user_gesture: bool) -> Any:
        return await self.refs.call_on(ref, function, arguments, budget,
                                       await_promise=await_promise, user_gesture=user_gesture)
