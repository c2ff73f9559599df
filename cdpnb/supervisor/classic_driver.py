"""WebDriver classic under one supervisor: WebKit (WebKitWebDriver) and chromedriver.

Classic is HTTP with no events (``cdpnb.protocol.classic``, ``cdpnb.transport.classic``):
the session's window is the supervised page; its frames are walked by switching
(``classic.frameTree``, after each navigation); dialogs are found by polling
``GET /alert/text`` every ``POLL_S`` (the polls and their answers are in the trace, and
the state folds them: ``cdpnb.state.classic``) and answered with
``classic.answerAlert``, which checks the open dialog still shows the message of the
one named. What classic cannot tell is said, not guessed: a dialog's frame (None) and
type (``"unknown"`` until text sent to it shows it is a prompt). There is no request
interception, so no dialog bridge.

Measured (WebKitWebDriver 2.50.6, chromedriver 156, ``unhandledPromptBehavior``
"ignore"): a poll takes 0.5 ms on WebKit; ``execute/sync`` 0.9 ms (WebKit) and 3.5–4.2
ms (chromedriver); beforeunload is never shown over classic (both accept it
themselves); every command but the alert ones fails "unexpected alert open" while a
dialog is open.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Collection
from typing import Any, ClassVar
from urllib.parse import urlsplit

from cdpnb.errors import (
    COMMAND_FAILURES,
    CDPError,
    CommandTimeout,
    EvaluateError,
    EvaluateTimeout,
    NavigationError,
    TargetGone,
    UnknownFrame,
    UnknownPage,
    WaitTimeout,
)
from cdpnb.protocol.classic import ELEMENT_KEY, classic_error_name, frame_path
from cdpnb.protocol.credentials import hide_credentials, redact_url
from cdpnb.state import PageInfo, PendingDialog
from cdpnb.supervisor.actions import ClickSpec
from cdpnb.supervisor.bridge import DialogBridge
from cdpnb.supervisor.core import Core
from cdpnb.supervisor.driver import Command, Navigated, PageSender, ProtocolDriver
from cdpnb.supervisor.evaluation import Budget

__all__ = ["POLL_S", "ClassicDriver"]

log = logging.getLogger("cdpnb.supervisor")

#: How often the supervised window is asked for an open dialog. A poll is one request
#: (0.5 ms on WebKitWebDriver): 40 a second cost the driver ≈2% of a core.
POLL_S = 0.025
#: A poll that takes longer than this fails (a wedged session) and the next one goes.
POLL_TIMEOUT_S = 10.0
#: Every this many polls, the session's windows are listed (popups join, closed ones
#: leave) and the current one's frames walked again (classic tells no frame's
#: navigation: a frame that moved by itself is seen at the next walk). A walk of the
#: probe page's four frames is nine requests, ≈5 ms on WebKit.
WINDOWS_EVERY = 8
#: Deleting the session at stop may take this long (it closes the browser).
STOP_TIMEOUT_S = 10.0
#: Evaluate's expression runs as the completion value of a script, as CDP's and BiDi's
#: do (an indirect eval, so in the frame's global scope).
EVALUATE_SCRIPT = "return (0, eval)(arguments[0]);"


class ClassicBridge(DialogBridge):
    """No bridge over classic: it cannot intercept requests. Asked for, it says so."""

    def switch_on(self, reason: str) -> None:
        log.info("cdpnb: the dialog bridge cannot work over WebDriver classic (%s)", reason)

    async def install_everywhere(self, page_session_id: str | None = None) -> None:
        return None


class ClassicDriver(ProtocolDriver):
    name: ClassVar[str] = "classic"
    lacks: ClassVar[dict[str, str]] = {
        "cdp()": "sup.classic(method, params) sends a raw WebDriver classic command",
        "bidi()": "sup.classic(method, params) sends a raw WebDriver classic command",
        "accessibility()": "WebDriver classic has no accessibility tree; evaluate() works",
        "evaluate_on()": "refs come from CDP's accessibility tree",
        "click(ref)": "refs come from CDP's accessibility tree; click(selector=...) works "
                      "over it",
        "click(point)": "WebDriver classic clicks elements; click(selector=...) works over it",
        "evaluate(user_gesture=True)": "WebDriver classic runs scripts without a user "
                                       "activation; click(selector=...) is a real one",
    }
    needs: ClassVar[dict[str, str]] = {"bidi()": "bidi"}
    replies_after_load: ClassVar[bool] = True
    #: A navigation over an open dialog fails "unexpected alert open": dismissed first.
    dismiss_before_navigating: ClassVar[bool] = True
    has_bridge: ClassVar[bool] = False

    def __init__(self, core: Core, *, popups: bool, bypass_csp: bool,
                 bridge_key: str | None, bridge_script: str | None,
                 backend_info: dict[str, Any] | None, hint: Callable[[str], None]) -> None:
        super().__init__(core, ClassicBridge(core, key=bridge_key), hint)
        self.popups = popups
        self.bypass_csp = bypass_csp
        #: The session's current window: the one polled for its dialog.
        self.window: str | None = None
        #: Every window handle the session has shown (those there at start included:
        #: only a window that joins later is a popup).
        self._known: set[str] = set()
        self._poller: asyncio.Task[None] | None = None

    # -- the connection's life ------------------------------------------------------------

    async def start(self, page: str, bridge_reason: str | None) -> str | None:
        core = self.core
        if bridge_reason is not None or self.bypass_csp:
            self.bridge.enabled = False
            self.hint("WebDriver classic cannot intercept requests, so there is no dialog "
                      "bridge: dialogs are seen by polling and answered natively")
        session = getattr(core.transport, "session", None)
        capabilities: dict[str, Any] = getattr(session, "capabilities", {}) or {}
        name = str(capabilities.get("browserName", ""))
        version = str(capabilities.get("browserVersion", ""))
        product = f"{name}/{version}" if name else version
        self.browser_version = {"product": product, "browserName": name,
                                "browserVersion": version, "protocol": "classic",
                                "userAgent": ""}
        core.note("cdpnb.classicSession", {
            "session_id": str(getattr(session, "session_id", "")), "browser": product,
            "popups": self.popups})
        window = str((await core.send("classic.getWindowHandle", {}))["value"])
        adopted = None
        if page not in ("new", "first"):
            handles = (await core.send("classic.getWindowHandles", {}))["value"]
            if page not in handles:
                raise UnknownPage(f"no window {page!r} in the WebDriver session (windows: "
                                  f"{', '.join(map(str, handles)) or 'none'})", page=page,
                                  existing=tuple(map(str, handles)))
            await core.send("classic.switchToWindow", {"handle": page})
            window = adopted = page
        self._known = set(map(str, (await core.send("classic.getWindowHandles", {}))["value"]))
        self._take_window(window)
        await self.frame_tree()
        self._poller = asyncio.ensure_future(self._poll())
        return adopted

    def _take_window(self, window: str) -> None:
        self.window = window
        self.core.note("cdpnb.pageTarget", {"target_id": window, "session_id": window})

    async def resume(self, target_id: str | None, *, adopted: str | None) -> None:
        # An HTTP session does not drop as a socket does: a transport that ended has no
        # session to take back.
        raise TargetGone("the WebDriver classic session ended; start a new supervisor")

    async def abandon_start(self) -> None:
        self._stop_polling()
        with contextlib.suppress(*COMMAND_FAILURES):
            await self.core.send("classic.deleteSession", {}, timeout=STOP_TIMEOUT_S)

    async def close_pages(self, leave: Collection[str]) -> None:
        """Ends the session (the server closes the browser it started for it): classic
        has one session per browser, so its window is not left to anyone."""
        self._stop_polling()
        try:
            await self.core.send("classic.deleteSession", {}, timeout=STOP_TIMEOUT_S)
        except COMMAND_FAILURES as exc:
            log.info("cdpnb: deleting the WebDriver session failed: %s", exc)

    def connection_lost(self) -> None:
        self._stop_polling()

    def _stop_polling(self) -> None:
        if self._poller is not None:
            self._poller.cancel()
            self._poller = None

    async def _poll(self) -> None:
        """Ask the supervised window for its dialog, for as long as the session lives.
        Each answer is folded (``cdpnb.state.classic``): an opened dialog reaches the
        policies as over any protocol."""
        core = self.core
        polls = 0
        while core.connected and not core.stopping:
            window = self.window
            try:
                if window is not None:
                    with contextlib.suppress(CDPError):  # "no such alert": folded as said
                        await core.send("classic.getAlertText", {"window": window},
                                        timeout=POLL_TIMEOUT_S)
                polls += 1
                if polls % WINDOWS_EVERY == 0:
                    await self._windows()
                    if not self._dialog_open():
                        # (every command but the dialog's own fails while one is open)
                        with contextlib.suppress(CDPError):
                            await self.frame_tree()
            except CommandTimeout:
                log.info("cdpnb: a poll of WebDriver session took over %g s (a prompt in a "
                         "window that is not the current one wedges WebKit's session)",
                         POLL_TIMEOUT_S)
            except COMMAND_FAILURES:
                return
            await asyncio.sleep(POLL_S)

    async def _windows(self) -> None:
        """List the session's windows: a new one is a popup (noted, then made the
        current window, so that its dialogs are the ones polled: measured on
        WebKitWebDriver 2.50, a prompt in a window that is not the current one wedges the
        session); when the current one has closed, the newest left takes its place."""
        core = self.core
        handles = [str(h) for h in (await core.send("classic.getWindowHandles", {},
                                                    timeout=POLL_TIMEOUT_S))["value"]]
        for handle in handles:
            if handle not in self._known:
                self._known.add(handle)
                core.note("cdpnb.classicWindowOpened", {"handle": handle,
                                                        "opener": self.window})
        supervised = [h for h in core.state.pages if h in handles]
        wanted = supervised[-1] if supervised else None
        if wanted is None or wanted == self.window or (self._dialog_open()
                                                       and self.window in handles):
            return  # (leaving a window whose prompt is open would wedge WebKit's session)
        await core.send("classic.switchToWindow", {"handle": wanted}, timeout=POLL_TIMEOUT_S)
        self.window = wanted
        await self.frame_tree()

    def _dialog_open(self) -> bool:
        """Whether the current window shows a dialog, as far as the polls know."""
        return any(d.page_session_id == self.window for d in self.core.state.pending_dialogs)

    # -- pages ----------------------------------------------------------------------------

    async def open_page(self) -> None:
        reply = await self.core.send("classic.newWindow", {"type": "tab"})
        handle = str((reply.get("value") or {}).get("handle", ""))
        await self.core.send("classic.switchToWindow", {"handle": handle})
        self._take_window(handle)
        await self.frame_tree()

    async def end_page(self, page: PageInfo) -> None:
        await self.core.send("classic.closeWindow", {"window": page.target_id})
        await self._windows()

    async def page_sender(self, page: PageInfo) -> PageSender:
        raise CDPError(-32601, "WebDriver classic has no way to reach a page's CDP session",
                       "page_sender")

    async def frame_tree(self) -> None:
        """Walk the supervised window's frames (the fold takes the reply). While a dialog
        is open in one of them the walk fails and the tree stays as last known: the next
        walk, 200 ms on, sees the frames again."""
        if self.window is None:
            return
        try:
            await self.core.send("classic.frameTree", {"window": self.window})
        except CDPError as exc:
            if classic_error_name(exc.message, exc.data) != "unexpected alert open":
                raise

    # -- navigation -----------------------------------------------------------------------

    async def navigate_page(self, url: str, page: PageInfo, timeout: float) -> dict[str, Any]:
        shown = redact_url(url)
        method, params, _ = self.navigate_command(url, page.target_id, page)
        try:
            await self.core.send(method, params, None, timeout)
        except CommandTimeout:
            raise WaitTimeout(f"{shown} did not finish loading within {timeout:g} s "
                              "(is a dialog open?)") from None
        except CDPError as exc:
            raise NavigationError(f"navigating to {shown} failed: "
                                  f"{hide_credentials(exc.message)}") from None
        await self.frame_tree()
        return {"url": url, "frame_id": page.target_id, "loader_id": None}

    def navigate_command(self, url: str, frame_id: str, page: PageInfo) -> Command:
        if not urlsplit(url).scheme:
            # W3C's "navigate to" refuses a URL that is not absolute ("invalid
            # argument"); WebKitWebDriver 2.50 answers it with success and stays put
            # (measured), so cdpnb refuses it for every server alike.
            raise NavigationError(f"navigating to {redact_url(url)} failed: not an absolute "
                                  "URL (WebDriver classic navigates to absolute URLs only)")
        window, path = frame_path(frame_id)
        if not path:
            return Command("classic.navigateTo", {"url": url, "window": window}, None)
        # Classic navigates the top-level context only: a frame by its own script.
        return Command("classic.executeScript", {
            "script": "location.href = arguments[0];", "args": [url], "window": window,
            "frame": path}, None)

    def reload_command(self, page: PageInfo) -> Command:
        return Command("classic.refresh", {"window": page.target_id}, None)

    def close_command(self, page: PageInfo, run_beforeunload: bool) -> Command:
        return Command("classic.closeWindow", {"window": page.target_id}, None)

    def navigated(self, reply: dict[str, Any]) -> Navigated:
        return Navigated(None, await_load=False)

    def navigation_refused(self, error: CDPError) -> str | None:
        name = classic_error_name(error.message, error.data)
        return f" ({name})" if name else ""

    # -- dialogs --------------------------------------------------------------------------

    def native_answer(self, dialog: PendingDialog, accept: bool,
                      prompt_text: str | None) -> Command:
        """``classic.answerAlert`` on the dialog's window, refused there when the open
        dialog shows another message than this one's (classic answers whatever is
        open)."""
        params: dict[str, Any] = {"window": dialog.page_session_id, "accept": accept,
                                  "expect": dialog.message}
        if prompt_text is not None:
            params["text"] = prompt_text
        return Command("classic.answerAlert", params, None)

    # -- commands -------------------------------------------------------------------------

    def _route(self, frame_id: str | None) -> dict[str, Any]:
        state = self.core.state
        if frame_id is None:
            if state.page_target_id is None:
                raise TargetGone(f"the supervisor's page is gone "
                                 f"({state.page_gone or 'not attached'})")
            return {"window": state.page_target_id}
        if not isinstance(frame_id, str):
            raise TypeError(f"frame_id must be a str, got {type(frame_id).__name__}")
        if frame_id not in state.frames:
            known = ", ".join(list(state.frames)[:8]) or "none"
            raise UnknownFrame(f"frame {frame_id!r} is not in the frame tree (known: {known})")
        window, path = frame_path(frame_id)
        return {"window": window, "frame": path}

    async def evaluate(self, expression: str, frame_id: str | None, budget: Budget, *,
                       await_promise: bool, user_gesture: bool) -> Any:
        core = self.core
        if user_gesture:
            self.require("evaluate(user_gesture=True)")
        route = self._route(frame_id)
        core.note("cdpnb.evaluated", {})
        if budget.left() <= 0:
            raise EvaluateTimeout(f"evaluate: the {budget.seconds:g} s budget was spent "
                                  "before it could be sent", budget=budget.seconds,
                                  elapsed=budget.elapsed(), ended_by="not sent")
        try:
            reply = await core.send("classic.executeScript", {
                "script": EVALUATE_SCRIPT, "args": [expression], **route},
                timeout=budget.left())
        except CommandTimeout:
            core.note("cdpnb.evaluateTimedOut", {})
            raise EvaluateTimeout(f"evaluate did not finish within its {budget.seconds:g} s "
                                  "budget; WebDriver classic has no way to end a running "
                                  "script", budget=budget.seconds, elapsed=budget.elapsed(),
                                  ended_by="not terminated") from None
        except CDPError as exc:
            name = classic_error_name(exc.message, exc.data)
            if name != "javascript error":
                raise
            core.note("cdpnb.evaluateFailed", {})
            text = exc.message.split(": ", 1)[-1] or "JavaScript exception"
            raise EvaluateError(text.splitlines()[0], text) from None
        return reply.get("value")

    async def send_raw(self, method: str, params: dict[str, Any] | None, budget: Budget, *,
                       frame_id: str | None = None, browser: bool = False,
                       session_id: str | None = None) -> dict[str, Any]:
        return await self.core.send(method, params, None, budget.seconds)

    async def click(self, how: ClickSpec, budget: Budget) -> dict[str, Any]:
        if how.selector is None:
            self.require("click(ref)" if how.ref is not None else "click(point)")
        route = self._route(how.frame_id)
        found = await self.core.send("classic.findElement", {
            "using": "css selector", "value": how.selector, **route}, timeout=budget.left())
        element = (found.get("value") or {}).get(ELEMENT_KEY)
        if not isinstance(element, str):
            raise LookupError(f"no element matches {how.selector!r}")
        await self.core.send("classic.elementClick", {"elementId": element, **route},
                             timeout=budget.left())
        return {"selector": how.selector, "element": element}
