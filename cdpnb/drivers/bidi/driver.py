"""WebDriver BiDi under one supervisor: Firefox, and Chromium behind chromium-bidi.

One BiDi session (``cdpnb.drivers.bidi.session``) with its page, a browsing context; script
by context; answers with ``browsingContext.handleUserPrompt``; the bridge over
``network.beforeRequestSent`` interception and preload scripts (a popup is a new
context, so the bridge goes into it here: over CDP the page attacher puts it there).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Collection
from typing import Any, ClassVar

from cdpnb.drivers.bidi.actions import click as bidi_click
from cdpnb.drivers.bidi.actions import fill as bidi_fill
from cdpnb.drivers.bidi.actions import query as bidi_query
from cdpnb.drivers.bidi.bridge import BiDiDialogBridge, foreign_request
from cdpnb.drivers.bidi.screenshots import bidi_screenshot
from cdpnb.drivers.bidi.session import BiDiSession, abandon_bidi_page, cdp_of_tab
from cdpnb.errors import CDPError, CdpnbError, CommandTimeout, NavigationError, WaitTimeout
from cdpnb.protocol import bidi_error_name
from cdpnb.protocol.credentials import hide_credentials, redact_url
from cdpnb.session.actions import ClickSpec, ElementState
from cdpnb.session.bridge import BRIDGE_CHANGES
from cdpnb.session.budget import Budget
from cdpnb.session.core import Core
from cdpnb.session.driver import Command, Navigated, PageSender, ProtocolDriver
from cdpnb.session.existing_pages import pages_left_open
from cdpnb.session.results import ClickResult, NavigateResult
from cdpnb.state import PageInfo, PendingDialog
from cdpnb.state.bidi import page_of_context

__all__ = ["BiDiDriver"]

#: Ending a page recovery replaces gets this long.
END_TIMEOUT_S = 5.0


class BiDiDriver(ProtocolDriver):
    name: ClassVar[str] = "bidi"
    lacks: ClassVar[dict[str, str]] = {
        "cdp()": "sup.bidi(method, params) sends a raw BiDi command",
        "classic()": "sup.bidi(method, params) sends a raw BiDi command",
        "accessibility()": "WebDriver BiDi has no accessibility tree; evaluate() and "
                           "bidi('input.performActions', ...) work over it",
        "evaluate_on()": "refs come from CDP's accessibility tree",
        "click(ref)": "refs come from CDP's accessibility tree; click(selector=...) and "
                      "click(x=..., y=...) work over it",
    }
    needs: ClassVar[dict[str, str]] = {"classic()": "classic"}
    replies_after_load: ClassVar[bool] = True
    #: chromium-bidi 17: a frame leaving an OOPIF for its parent's process leaves the
    #: tree (contextDestroyed) and comes back with the same id.
    frames_flicker: ClassVar[bool] = True

    def __init__(self, core: Core, *, popups: bool, bypass_csp: bool,
                 bridge_key: str | None, bridge_script: str | None,
                 backend_info: dict[str, Any] | None, hint: Callable[[str], None]) -> None:
        super().__init__(core, BiDiDialogBridge(core, bypass_csp=False, key=bridge_key,
                                                script=bridge_script), hint)
        self.session = BiDiSession(core, popups=popups)
        self.bypass_csp = bypass_csp
        # Other tabs' unpaused requests are taken in for the bridge's sake, not recorded.
        core.unrecorded = foreign_request
        core.subscribe(self.bridge, methods=["network.beforeRequestSent"],
                       changes=BRIDGE_CHANGES, now=True)

    # -- the connection's life ------------------------------------------------------------

    async def start(self, page: str, bridge_reason: str | None) -> str | None:
        if self.bypass_csp:
            self.hint("bypass_csp has no WebDriver BiDi equivalent: under a CSP that blocks "
                      "the bridge, dialogs fall back to native ones")
        self.browser_version = await self.session.start(page=page)
        if bridge_reason is not None:
            self.core.note("cdpnb.bridgeEnabled", {"reason": bridge_reason})
            await self.bridge.install_everywhere()
        return self.session.adopted

    async def resume(self, target_id: str | None, *, adopted: str | None) -> None:
        """A new BiDi session after a drop: its subscriptions, the bridge's intercept and
        preload scripts are new; the page is taken back when it is still there."""
        core = self.core
        await self.session.start(reuse_context=target_id)
        if target_id is not None and core.state.page_target_id != target_id:
            core.note("cdpnb.pageReplaced", {"target_id": target_id,
                                             "reason": "gone after the connection dropped"})
            self.hint(f"the supervisor's page {target_id} was gone after the connection "
                      "dropped (chromium-bidi starts a new browser for each connection, "
                      "chromedriver for each session): a new, blank tab "
                      f"{core.state.page_target_id} replaces it")
        if self.bridge.enabled:
            self.bridge.forget_sessions()
            await self.bridge.install_everywhere()

    async def abandon_start(self) -> None:
        """Measured on Firefox ESR 153: the browser keeps the one BiDi session of a
        connection that closed without session.end, and refuses every later session.new
        ("Maximum number of active sessions"): a start that failed after session.new ends
        what it made, or the browser is lost to cdpnb."""
        if self.session.session_id is not None:
            with contextlib.suppress(CdpnbError):
                await self.session.stop(leave=pages_left_open(self.core.state,
                                                              self.session.adopted))

    async def close_pages(self, leave: Collection[str]) -> None:
        await self.session.stop(leave=leave)

    # -- pages ----------------------------------------------------------------------------

    async def open_page(self) -> None:
        await self.session.open_page()

    async def end_page(self, page: PageInfo) -> None:
        if page.hazard is not None:
            await abandon_bidi_page(self.core, page)
        else:
            await self.core.send("browsingContext.close", {"context": page.target_id},
                                 timeout=END_TIMEOUT_S)

    async def page_sender(self, page: PageInfo) -> PageSender:
        return await cdp_of_tab(self.core, page.target_id)

    def page_opened(self, page: PageInfo) -> None:
        if self.bridge.enabled and not page.main:
            self.core.spawn(self.bridge.install_everywhere(page.session_id),
                            name="cdpnb-bridge-popup")

    # -- navigation -----------------------------------------------------------------------

    async def navigate_page(self, url: str, page: PageInfo, timeout: float) -> NavigateResult:
        shown = redact_url(url)
        method, params, session = self.navigate_command(url, page.target_id, page)
        try:
            reply = await self.core.send(method, params, session, timeout)
        except CommandTimeout:
            raise WaitTimeout(f"{shown} did not finish loading within {timeout:g} s "
                              "(is a dialog open?)") from None
        except CDPError as exc:
            why = hide_credentials(exc.message)
            raise NavigationError(f"navigating to {shown} failed: {why}") from None
        return NavigateResult(url, page.target_id, self.navigated(reply).loader)

    def navigate_command(self, url: str, frame_id: str, page: PageInfo) -> Command:
        return Command("browsingContext.navigate",
                       {"context": frame_id, "url": url, "wait": "complete"}, None)

    def reload_command(self, page: PageInfo) -> Command:
        return Command("browsingContext.reload", {"context": page.target_id,
                                                  "wait": "complete"}, None)

    def close_command(self, page: PageInfo, run_beforeunload: bool) -> Command:
        return Command("browsingContext.close",
                       {"context": page.target_id, "promptUnload": run_beforeunload}, None)

    def navigated(self, reply: dict[str, Any]) -> Navigated:
        navigation = reply.get("navigation")
        return Navigated(str(navigation) if navigation else None, await_load=False)

    def navigation_refused(self, error: CDPError) -> str | None:
        name = bidi_error_name(error)
        return f" ({name})" if name else ""

    # -- dialogs --------------------------------------------------------------------------

    def native_answer(self, dialog: PendingDialog, accept: bool,
                      prompt_text: str | None) -> Command:
        return self.session.answer(dialog, accept, prompt_text)

    # -- commands -------------------------------------------------------------------------

    async def evaluate(self, expression: str, frame_id: str | None, budget: Budget, *,
                       await_promise: bool, user_gesture: bool) -> Any:
        return await self.session.evaluate(frame_id, expression, budget,
                                           await_promise=await_promise,
                                           user_gesture=user_gesture)

    async def send_raw(self, method: str, params: dict[str, Any] | None, budget: Budget, *,
                       frame_id: str | None = None, browser: bool = False,
                       session_id: str | None = None) -> dict[str, Any]:
        return await self.core.send(method, params, None, budget.seconds)

    async def click(self, how: ClickSpec, budget: Budget) -> ClickResult:
        return await bidi_click(self.core, how, self.session.context_for(how.frame_id), budget)

    async def fill(self, how: ClickSpec, text: str, budget: Budget) -> None:
        await bidi_fill(self.core, how, text, self.session.context_for(how.frame_id), budget)

    async def query(self, how: ClickSpec, budget: Budget) -> ElementState:
        return await bidi_query(self.core, how, self.session.context_for(how.frame_id), budget)

    async def screenshot(self, frame_id: str | None, budget: Budget) -> bytes:
        context = self.session.context_for(frame_id)
        page = page_of_context(self.core.state, context)
        tab = page.target_id if page is not None else self.session.context_for(None)
        return await bidi_screenshot(self.core, context, tab, budget)
