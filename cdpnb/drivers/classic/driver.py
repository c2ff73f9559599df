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

A dialog in a window that is not the current one (measured, a page's opener prompting
while its popup is the current window):

* chromedriver 156 does not show it there (``GET /alert/text`` says "no such alert"),
  shows it and answers it once that window is switched to (20-40 ms); but when the two
  windows share a renderer (a ``window.open`` popup and its opener), every command in
  the other one, the poll included, waits on the paused renderer for the session's
  ``pageLoad`` timeout (300 s by default), one command at a time. So every background
  command (a poll, a walk, a look at the windows) has a budget, ``POLL_TIMEOUT_S``
  (``cdpnb.protocol.classic``: the server's ``pageLoad`` is set to it), a poll that
  runs out looks for the dialog in the other supervised windows, and a window known
  to show one is the one polled until it closes; the other windows are also looked at
  every ``SWEEP_EVERY`` polls. The budget is also the longest a load may take while a
  poll waits on it: chromedriver stops a load its wait ran out on.
* WebKitWebDriver 2.50.6 never shows it, and never answers a switch to that window
  (nor to a window showing a dialog at all, from any window: 30 s measured); every
  script command in a window of its process never answers. Nothing over classic can
  reach that dialog, so cdpnb never switches away from a window showing a dialog
  there (a command for another window is BlockedByDialog), never sweeps, and says
  what it sees (``sup.hints``) when the current window stops answering while others
  are open.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Collection
from typing import Any, ClassVar
from urllib.parse import urlsplit

from cdpnb.drivers.classic import actions as classic_actions
from cdpnb.drivers.classic import values as classic_values
from cdpnb.drivers.classic.screenshots import classic_screenshot
from cdpnb.errors import (
    COMMAND_FAILURES,
    BlockedByDialog,
    CDPError,
    CommandTimeout,
    EvaluateTimeout,
    NavigationError,
    TargetGone,
    UnknownFrame,
    UnknownPage,
    WaitTimeout,
)
from cdpnb.protocol.classic import ANSWER_SLACK_S, classic_error_name, frame_path
from cdpnb.protocol.credentials import hide_credentials, redact_url
from cdpnb.session.actions import ClickSpec, ElementState
from cdpnb.session.bridge import NoBridge
from cdpnb.session.budget import Budget
from cdpnb.session.core import Core
from cdpnb.session.driver import Command, Navigated, PageSender, ProtocolDriver
from cdpnb.session.evaluate_count import counted
from cdpnb.session.results import ClickResult, NavigateResult
from cdpnb.state import PageInfo, PendingDialog
from cdpnb.state.classic import open_in

__all__ = ["POLL_S", "ClassicDriver"]

log = logging.getLogger("cdpnb.supervisor")

#: How often the supervised window is asked for an open dialog. A poll is one request
#: (0.5 ms on WebKitWebDriver): 40 a second cost the driver ≈2% of a core.
POLL_S = 0.025
#: The budget of every background command (a poll, a frame walk, a look at the windows):
#: the server's ``pageLoad`` and ``script`` timeouts are set to it for them, so a poll
#: of a window whose renderer a dialog elsewhere paused fails after it (chromedriver
#: 156: "timeout: Timed out receiving message from renderer") instead of holding the
#: session for 300 s, and the dialog is looked for elsewhere. It is also the longest a
#: load may take while a poll waits on it: chromedriver stops the load then (measured).
POLL_TIMEOUT_S = 10.0
#: The params and the core's timeout of a background command while the page has more
#: than one window (a dialog of another window can hold the polled one only then; with
#: one window none is given, so the timeouts a user's commands set are not flipped to
#: and fro at every poll: 0.5 ms an evaluate on WebKit, measured).
BACKGROUND: dict[str, Any] = {"timeout": POLL_TIMEOUT_S}
BACKGROUND_WAIT_S = POLL_TIMEOUT_S + 2 * ANSWER_SLACK_S
#: Every this many polls, the other supervised windows are polled too, where the
#: server answers a switch to a window that shows a dialog (chromedriver: ≈1 s; a
#: switch there and back is 20-40 ms).
SWEEP_EVERY = 40
#: The budget of a frame walk on a server that never sweeps (WebKitWebDriver), whatever
#: the windows: measured there (beside two busy processes, one run in six), a prompt
#: that opened in a frame while the walk was switching through the frames held the
#: walk's request for good, and every later command behind it, the polls that would
#: have seen the prompt included. WebKitWebDriver takes requests side by side, so one
#: given up on holds nothing, and it does not stop a load its wait runs out on.
WALK_TIMEOUT_S = 2.0
#: The budget of each script of a frame walk on a server that sweeps (chromedriver), its
#: loads left to the usual budget: measured (chromedriver 156, a page's cross-site
#: iframe opening an alert 50 ms after its load, the page navigating 2 s later), the
#: walk right after the navigation entered the iframe as the alert opened, and its
#: ``execute/sync`` there waited on the paused frame until the navigation closed the
#: alert, 2.0 s: the server takes one command at a time, so every poll waited behind it
#: and the alert was never seen (2 runs in 24 with the alert's delay swept over 46-57
#: ms; 0 in 24 with this budget, the walk giving up after 0.5 s and the next poll
#: seeing the alert). The walk's script takes 5-10 ms there; the session's ``script``
#: timeout is set to this for the walk alone, ``pageLoad`` untouched.
WALK_SCRIPT_S = 0.5
#: After a frame walk ran out of its budget (a window that does not answer), the next
#: one waits this long; a second one that runs out, with no dialog known in the window,
#: is said (WebKitWebDriver: a dialog of another window nothing can reach).
WALK_BACKOFF_S = 2.0
#: The ``browserName`` of servers that answer a switch to a window showing a dialog
#: (measured: chromedriver 156). Others (WebKitWebDriver's "MiniBrowser", unknown ones)
#: are never asked to: WebKitWebDriver 2.50 never answers it.
#: The ``browserName`` chromedriver's sessions give (the Chromium servers).
_CHROMIUMS = frozenset({"chrome", "chrome-headless-shell", "chromium"})
SWITCHES_TO_DIALOGS = _CHROMIUMS
#: The ``browserName`` of servers whose page can navigate itself while one of its
#: cross-site frames shows a dialog, the browser then closing it (measured: chromedriver
#: 156). There a poll that finds a dialog gone reads the top document
#: (``protocol.classic``, ``shown``). Not WebKit 2.50: the page's timer waits behind its
#: frame's alert (one process), and its ``execute/sync`` in a loading document can
#: wedge the server.
NAVIGATES_OVER_DIALOGS = _CHROMIUMS
#: Every this many polls, the session's windows are listed (popups join, closed ones
#: leave) and the current one's frames walked again (classic tells no frame's
#: navigation: a frame that moved by itself is seen at the next walk). A walk of the
#: probe page's four frames is nine requests, ≈5 ms on WebKit.
WINDOWS_EVERY = 8
#: Deleting the session at stop may take this long (it closes the browser).
STOP_TIMEOUT_S = 10.0
#: Evaluate's expression runs as the completion value of a script, as CDP's and BiDi's
#: do (an indirect eval, so in the frame's global scope): ``drivers.classic.values``.
EVALUATE_SCRIPT = classic_values.EVALUATE_SCRIPT


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
        super().__init__(core, NoBridge(core, key=bridge_key), hint)
        self.popups = popups
        self.bypass_csp = bypass_csp
        #: The session's current window: the one polled for its dialog.
        self.window: str | None = None
        #: Every window handle the session has shown (those there at start included:
        #: only a window that joins later is a popup).
        self._known: set[str] = set()
        self._poller: asyncio.Task[None] | None = None
        #: Whether the server answers a switch to a window showing a dialog (see the
        #: module's doc): then other windows are polled too.
        self.sweeps = False
        #: A poll of a window known to show a dialog says so (``shown``): see
        #: ``NAVIGATES_OVER_DIALOGS``.
        self.reads_gone_dialogs = False
        #: When a frame walk may run again (loop time), after one ran out of budget.
        self._walk_after = 0.0
        #: The window last said not to answer (WebKit), so that it is said once, and the
        #: window whose last walk ran out of its budget.
        self._said_stuck: str | None = None
        self._walk_ran_out: str | None = None
        #: The windows that drew a frame already (see ``classic_screenshot``).
        self._drawn: set[str] = set()

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
        self.sweeps = name in SWITCHES_TO_DIALOGS
        self.reads_gone_dialogs = name in NAVIGATES_OVER_DIALOGS
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
        await self._first_walk()
        self._poller = asyncio.ensure_future(self._poll())
        return adopted

    async def _first_walk(self) -> None:
        """A window's frames walked now, or by the poller if this walk fails, as after a
        navigation: a frame that does not answer must not fail the start. (Seen once on
        WebKitWebDriver 2.50, late in a full suite run on 2 cores: a fresh window's
        first walk ran out of ``WALK_TIMEOUT_S``, "script timed out after 2000ms", and
        the whole start failed with it.)"""
        with contextlib.suppress(CDPError, CommandTimeout):
            await self.frame_tree()

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
        policies as over any protocol. A window known to show a dialog is the one asked
        while it does (where the server can switch to it); a window that does not answer
        within the budget makes the others be asked (see the module's doc)."""
        core = self.core
        polls = 0
        while core.connected and not core.stopping:
            try:
                window = self._poll_target()
                if window is not None and not await self._ask(window):
                    await self._unanswered(window)
                polls += 1
                if polls % WINDOWS_EVERY == 0:
                    await self._windows()
                    if not self._dialog_open() and not self._any_dialog_elsewhere():
                        # (every command but the dialog's own fails while one is open)
                        await self._background_walk()
                if self.sweeps and polls % SWEEP_EVERY == 0 and not core.state.pending_dialogs:
                    await self._sweep(skip=window)
            except CommandTimeout:
                log.info("cdpnb: a background command of the WebDriver session took over "
                         "%g s", BACKGROUND_WAIT_S)
            except CDPError as exc:  # (a window gone between a look and a switch: go on)
                log.info("cdpnb: a background command of the WebDriver session failed: %s",
                         exc)
            except COMMAND_FAILURES:
                return
            await asyncio.sleep(POLL_S)

    def _background(self, walk: bool = False) -> dict[str, Any]:
        """A background command's budget, where it is needed (see ``BACKGROUND``,
        ``WALK_TIMEOUT_S`` and ``WALK_SCRIPT_S``)."""
        if walk and not self.sweeps:
            return {"timeout": WALK_TIMEOUT_S}
        budget = BACKGROUND if len(self.core.state.pages) > 1 else {}
        return {**budget, "scriptTimeout": WALK_SCRIPT_S} if walk else budget

    def _poll_target(self) -> str | None:
        """The window to poll: one known to show a dialog (to see it close), where the
        server may be switched there; the current one otherwise."""
        if self.sweeps:
            state = self.core.state
            showing = [d.page_session_id for d in state.pending_dialogs
                       if d.via == "native" and d.page_session_id in state.pages]
            if showing and self.window not in showing:
                return showing[0]
        return self.window

    async def _ask(self, window: str) -> bool:
        """Poll ``window`` (the reply is folded); False when it did not answer within the
        budget (its renderer is paused or busy)."""
        # (shown: should it be gone, the poll reads what the top document did meanwhile)
        open_here = open_in(self.core.state, window)
        shown = {"shown": True} if self.reads_gone_dialogs and open_here is not None \
            and open_here.answering is None else {}
        try:
            await self.core.send("classic.getAlertText",
                                 {"window": window, **shown, **self._background()},
                                 timeout=BACKGROUND_WAIT_S)
        except CommandTimeout:
            return False
        except CDPError as exc:  # "no such alert" is folded as said
            return classic_error_name(exc.message, exc.data) != "timeout"
        return True

    async def _unanswered(self, window: str) -> None:
        """``window`` did not answer a poll: where the server can switch to a window
        showing a dialog, the dialog is looked for in the others; elsewhere (WebKit) it
        is said."""
        if self.sweeps:
            await self._sweep(skip=window)
            return
        self._stuck(window)

    def _stuck(self, window: str) -> None:
        """Say (once per window) that ``window`` stopped answering while other windows
        are open: on WebKitWebDriver, a dialog nobody can reach over classic."""
        others = [p for p in self.core.state.pages if p != window]
        if not others or self._said_stuck == window:
            return
        self._said_stuck = window
        self.hint(f"window {window} does not answer WebDriver commands within "
                  f"{POLL_TIMEOUT_S:g} s while other windows of the page are open "
                  f"({', '.join(others)}): if one of them opened a dialog while it was not "
                  "the current window, WebKitWebDriver 2.50 can neither show it nor switch "
                  "to that window (measured), and every window of its process waits on it; "
                  "nothing over WebDriver classic can answer it: stop the supervisor (the "
                  "session and its browser end)")

    async def _sweep(self, skip: str | None) -> None:
        """Poll the other supervised windows (switching to each), until one shows a
        dialog (see the module's doc)."""
        core = self.core
        for handle in [p for p in core.state.pages if p != skip]:
            if not core.connected or core.stopping:
                return
            await self._ask(handle)
            if any(d.page_session_id == handle for d in core.state.pending_dialogs):
                return

    def _any_dialog_elsewhere(self) -> bool:
        return any(d.page_session_id != self.window for d in self.core.state.pending_dialogs)

    async def _background_walk(self) -> None:
        """A frame walk of the current window under the background budget; one that runs
        out holds the next off for ``WALK_BACKOFF_S`` (and is said, on WebKit)."""
        loop = asyncio.get_running_loop()
        window = self.window
        if loop.time() < self._walk_after or window is None:
            return
        try:
            await self.frame_tree()
        except (CDPError, CommandTimeout) as exc:
            timed_out = isinstance(exc, CommandTimeout) or classic_error_name(
                exc.message, exc.data) in ("timeout", "script timeout")
            if timed_out:
                self._walk_after = loop.time() + WALK_BACKOFF_S
                again, self._walk_ran_out = self._walk_ran_out == window, window
                if again and not self.sweeps and not self._dialog_open():
                    self._stuck(window)
            return
        self._walk_ran_out = None

    async def _windows(self) -> None:
        """List the session's windows: a new one is a popup (noted, then made the
        current window, so that its dialogs are the ones polled: see the module's doc);
        when the current one has closed, the newest left takes its place."""
        core = self.core
        handles = [str(h) for h in (await core.send(
            "classic.getWindowHandles", self._background(),
            timeout=BACKGROUND_WAIT_S))["value"]]
        for handle in handles:
            if handle not in self._known:
                self._known.add(handle)
                core.note("cdpnb.classicWindowOpened", {"handle": handle,
                                                        "opener": self.window})
        supervised = [h for h in core.state.pages if h in handles]
        wanted = supervised[-1] if supervised else None
        if wanted is None or wanted == self.window or (self._dialog_open()
                                                       and self.window in handles):
            return  # (WebKitWebDriver never answers a switch back to a window showing one)
        await core.send("classic.switchToWindow", {"handle": wanted, **self._background()},
                        timeout=BACKGROUND_WAIT_S)
        self.window = wanted
        await self._background_walk()

    def _dialog_open(self) -> bool:
        """Whether the current window shows a dialog, as far as the polls know."""
        return any(d.page_session_id == self.window for d in self.core.state.pending_dialogs)

    # -- pages ----------------------------------------------------------------------------

    async def open_page(self) -> None:
        reply = await self.core.send("classic.newWindow", {"type": "tab"})
        handle = str((reply.get("value") or {}).get("handle", ""))
        await self.core.send("classic.switchToWindow", {"handle": handle})
        self._take_window(handle)
        await self._first_walk()

    async def end_page(self, page: PageInfo) -> None:
        await self.core.send("classic.closeWindow", {"window": page.target_id})
        await self._windows()

    async def page_sender(self, page: PageInfo) -> PageSender:
        raise CDPError(-32601, "WebDriver classic has no way to reach a page's CDP session",
                       "page_sender")

    async def frame_tree(self) -> None:
        """Walk the supervised window's frames (the fold takes the reply), under the
        background budget. While a dialog is open in one of them the walk fails and the
        tree stays as last known: the next walk, 200 ms on, sees the frames again."""
        if self.window is None:
            return
        try:
            await self.core.send("classic.frameTree", {"window": self.window,
                                                       **self._background(walk=True)},
                                 timeout=BACKGROUND_WAIT_S)
        except CDPError as exc:
            if classic_error_name(exc.message, exc.data) != "unexpected alert open":
                raise

    # -- navigation -----------------------------------------------------------------------

    #: Closing a window that shows a dialog fails "unexpected alert open" (both servers):
    #: its dialogs are dismissed first, as a navigation's are.
    dismiss_before_closing: ClassVar[bool] = True

    async def navigate_page(self, url: str, page: PageInfo, timeout: float) -> NavigateResult:
        shown = redact_url(url)
        method, params, _ = self.navigate_command(url, page.target_id, page)
        late = WaitTimeout(f"{shown} did not finish loading within {timeout:g} s (is a "
                           "dialog open?)")
        try:
            # (the server's own wait ends at the budget too: it then stops the load)
            await self.core.send(method, {**params, "timeout": timeout}, None,
                                 timeout + 2 * ANSWER_SLACK_S)
        except CommandTimeout:
            raise late from None
        except CDPError as exc:
            if classic_error_name(exc.message, exc.data) == "timeout":
                raise late from None
            raise NavigationError(f"navigating to {shown} failed: "
                                  f"{hide_credentials(exc.message)}") from None
        await self._first_walk()  # (the page is there: its frames now, or by the poller)
        return NavigateResult(url, page.target_id)

    def navigate_command(self, url: str, frame_id: str, page: PageInfo) -> Command:
        if not urlsplit(url).scheme:
            # W3C's "navigate to" refuses a URL that is not absolute ("invalid
            # argument"); WebKitWebDriver 2.50 answers it with success and stays put
            # (measured), so cdpnb refuses it for every server alike.
            raise NavigationError(f"navigating to {redact_url(url)} failed: not an absolute "
                                  "URL (WebDriver classic navigates to absolute URLs only)")
        window, path = frame_path(frame_id)
        self._may_leave(window)
        if not path:
            return Command("classic.navigateTo", {"url": url, "window": window}, None)
        # Classic navigates the top-level context only: a frame by its own script.
        return Command("classic.executeScript", {
            "script": "location.href = arguments[0];", "args": [url], "window": window,
            "frame": path}, None)

    def reload_command(self, page: PageInfo) -> Command:
        self._may_leave(page.target_id)
        return Command("classic.refresh", {"window": page.target_id}, None)

    def close_command(self, page: PageInfo, run_beforeunload: bool) -> Command:
        self._may_leave(page.target_id)
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
            self._may_leave(state.page_target_id)
            return {"window": state.page_target_id}
        if not isinstance(frame_id, str):
            raise TypeError(f"frame_id must be a str, got {type(frame_id).__name__}")
        if frame_id not in state.frames:
            known = ", ".join(list(state.frames)[:8]) or "none"
            raise UnknownFrame(f"frame {frame_id!r} is not in the frame tree (known: {known})")
        window, path = frame_path(frame_id)
        self._may_leave(window)
        return {"window": window, "frame": path}

    def _may_leave(self, window: str) -> None:
        """BlockedByDialog when a command for ``window`` would leave the current window
        while it shows a dialog, on a server that never answers a switch back to it
        (WebKitWebDriver 2.50: the dialog could then never be answered)."""
        if self.sweeps:
            return
        current = getattr(self.core.transport, "current_window", None)
        if current is None or current == window:
            return
        showing = next((d for d in self.core.state.pending_dialogs
                        if d.page_session_id == current), None)
        if showing is not None:
            raise BlockedByDialog(
                f"window {current} shows a dialog ({showing.id}), and this command is for "
                f"window {window}: WebKitWebDriver 2.50 never answers a switch back to a "
                "window that shows a dialog (measured), so leaving it would leave the "
                f"dialog unanswerable; answer it first (respond(dialog_id={showing.id!r}))",
                dialog_id=showing.id)

    async def evaluate(self, expression: str, frame_id: str | None, budget: Budget, *,
                       await_promise: bool, user_gesture: bool) -> Any:
        core = self.core
        if user_gesture:
            self.require("evaluate(user_gesture=True)")
        route = self._route(frame_id)
        with counted(core):
            if budget.left() <= 0:
                raise EvaluateTimeout(f"evaluate: the {budget.seconds:g} s budget was spent "
                                      "before it could be sent", budget=budget.seconds,
                                      elapsed=budget.elapsed(), ended_by="not sent")
            # (values as over CDP and BiDi, and a prompt's value kept:
            # drivers.classic.values)
            return await classic_values.evaluate(core, expression, route,
                                                 frame_id or route["window"], budget,
                                                 await_promise=await_promise,
                                                 answered=self.dialogs_answered)

    async def send_raw(self, method: str, params: dict[str, Any] | None, budget: Budget, *,
                       frame_id: str | None = None, browser: bool = False,
                       session_id: str | None = None) -> dict[str, Any]:
        return await self.core.send(method, params, None, budget.seconds)

    # (Clicks, typing, looks and screenshots: cdpnb.drivers.classic.actions and
    # .screenshots.)
    async def click(self, how: ClickSpec, budget: Budget) -> ClickResult:
        if how.selector is None:
            self.require("click(ref)" if how.ref is not None else "click(point)")
        route = self._route(how.frame_id)
        frame = how.frame_id if how.frame_id is not None else route["window"]
        return await classic_actions.click(self.core, how, route, frame, budget)

    async def fill(self, how: ClickSpec, text: str, budget: Budget) -> None:
        await classic_actions.fill(self.core, how, text, self._route(how.frame_id), budget)

    async def query(self, how: ClickSpec, budget: Budget) -> ElementState:
        return await classic_actions.query(self.core, how, self._route(how.frame_id), budget)

    async def screenshot(self, frame_id: str | None, budget: Budget) -> bytes:
        return await classic_screenshot(self.core, self._route(frame_id)["window"], frame_id,
                                        budget, self._drawn)
