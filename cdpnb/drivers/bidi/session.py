"""The supervisor over WebDriver BiDi: its session, its page, script, navigation and
prompt answers. The state is the same ``BrowserState`` (``cdpnb.state.bidi``), so
snapshots, frame trees, waiting, policies and the watchdog are the supervisor's own.

Measured on Firefox ESR 153 (see ``cdpnb.state.bidi`` for the prompt model):

* A browser holds one BiDi session; ``session.new`` from a second client fails with
  "session not created". The session is created with ``unhandledPromptBehavior``
  ``ignore`` for every prompt type, or Firefox dismisses each one the moment it opens.
* ``script.evaluate`` works in a frame whose prompt is open (other frames too), and a
  script blocked in ``alert()`` gets its reply when the prompt closes. When a
  navigation interrupts a ``script.evaluate``, Firefox runs it again in the new
  document.
* BiDi has no way to end a running script (CDP's ``Runtime.terminateExecution``): an
  evaluate that outlives its budget raises ``EvaluateTimeout`` and the page may stay
  busy until the script ends.
* beforeunload prompts need a real user activation: ``input.performActions`` (a
  click), which ``Supervisor.bidi`` sends.

chromium-bidi (the BiDi mapper over Chromium) answers ``session.new`` with
``browserName`` and ``browserVersion`` swapped; they are put back.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Awaitable, Callable, Collection
from typing import Any

from cdpnb.drivers.bidi.existing_pages import choose_bidi_context
from cdpnb.errors import (
    COMMAND_FAILURES,
    CDPError,
    CdpnbError,
    CommandTimeout,
    ConnectionLost,
    EndpointError,
    EvaluateError,
    EvaluateTimeout,
    TargetGone,
    UnknownFrame,
)
from cdpnb.protocol import bidi_error_name
from cdpnb.protocol.credentials import redact_url
from cdpnb.protocol.deep_values import read_bidi_script_reply
from cdpnb.protocol.js_values import MAX_DEPTH, RemoteObject, Undefined, from_remote_value
from cdpnb.runtime.threads import in_own_thread
from cdpnb.session.budget import Budget
from cdpnb.session.core import Core
from cdpnb.session.driver import Command, SessionHeld
from cdpnb.session.evaluate_count import counted
from cdpnb.state import BrowserState, PageInfo, PendingDialog
from cdpnb.transport.webdriver_bidi import WebDriverSession

__all__ = ["BIDI_EVENTS", "PROMPTS_IGNORED", "BiDiSession", "abandon_bidi_page", "bidi_version",
           "cdp_of_tab"]

log = logging.getLogger("cdpnb.supervisor")

#: What the supervisor subscribes to: contexts, navigations and prompts; realms
#: (a frame's JavaScript context); console errors and uncaught exceptions.
BIDI_EVENTS = ("browsingContext", "script.realmCreated", "script.realmDestroyed",
               "log.entryAdded")
#: Every prompt stays open until someone answers it (the default dismisses them).
PROMPTS_IGNORED = {"default": "ignore", "beforeUnload": "ignore"}
#: How long closing the session's tabs may take at stop.
STOP_TIMEOUT_S = 2.0
#: How long ending a session made over HTTP may take (the server ends its browser
#: first: 0.1-0.3 s for chromedriver's Chromium here, more on a loaded machine).
DELETE_TIMEOUT_S = 15.0


def bidi_version(capabilities: dict[str, Any]) -> dict[str, Any]:
    """``Browser.getVersion``'s shape from ``session.new``'s capabilities: ``product``
    (``Firefox/153.7.0``), ``userAgent``, and the names as the browser gave them."""
    name = str(capabilities.get("browserName", ""))
    version = str(capabilities.get("browserVersion", ""))
    if name[:1].isdigit() and not version[:1].isdigit():
        name, version = version, name  # chromium-bidi 17 swaps them
    product = f"{name[:1].upper()}{name[1:]}/{version}" if name else version
    return {"product": product, "browserName": name, "browserVersion": version,
            "userAgent": str(capabilities.get("userAgent", "")), "protocol": "bidi"}




class BiDiSession:
    """The supervisor's WebDriver BiDi session and page (one browsing context)."""

    def __init__(self, core: Core, *, popups: bool) -> None:
        self.core = core
        self.popups = popups
        self.session_id: str | None = None
        self.capabilities: dict[str, Any] = {}
        #: The existing top-level context ``start(page=...)`` adopted (None: created).
        self.adopted: str | None = None
        #: The session made over HTTP that the socket carries (chromedriver), adopted
        #: instead of ``session.new`` and ended with ``DELETE /session/<id>``.
        self.webdriver_session: WebDriverSession | None = None

    # -- lifecycle ----------------------------------------------------------------------

    async def start(self, reuse_context: str | None = None, *,
                    page: str = "new") -> dict[str, Any]:
        """Create the session, subscribe, and create (or take back) the page
        ``reuse_context`` (after a reconnect); ``page`` (``"first"`` or a context id)
        adopts a top-level context that exists already, and its popups."""
        core = self.core
        made = getattr(core.transport, "webdriver_session", None)
        if made is not None:
            await self._adopt(made)
        else:
            await self._new_session()
        version = bidi_version(self.capabilities)
        core.note("cdpnb.bidiSession", {"session_id": self.session_id,
                                        "browser": version["product"],
                                        "popups": self.popups})
        await core.send("session.subscribe", {"events": list(BIDI_EVENTS)})
        if reuse_context is None and page != "new":
            self.adopted = await choose_bidi_context(core, page)
            reuse_context = self.adopted
        await self.open_page(reuse_context)
        if self.adopted is not None and self.popups:
            # The popups it opened already: the reducer adopts each top-level context
            # whose originalOpener is in a supervised page.
            await core.send("browsingContext.getTree", {})
        return version

    async def _new_session(self) -> None:
        """``session.new`` over the socket, every prompt left open."""
        core = self.core
        try:
            reply = await core.send("session.new", {"capabilities": {"alwaysMatch": {
                "unhandledPromptBehavior": PROMPTS_IGNORED}}})
        except CDPError as exc:
            if bidi_error_name(exc) != "session not created":
                raise
            held = "Maximum number of active sessions" in exc.message  # (Firefox's words)
            if self.session_id is not None and held:
                # Measured on Firefox ESR 153: a BiDi-only session outlives its dropped
                # connection, its /session/<id> path is never served, and session.new
                # is refused ("Maximum number of active sessions") until the browser
                # ends: nothing can resume it.
                raise SessionHeld(
                    f"{redact_url(core.url)} refused a new WebDriver BiDi session after the "
                    f"connection dropped ({exc.message}): Firefox keeps the session of a "
                    "dropped connection and lets no client reach or end it, so the "
                    "supervisor cannot resume; launch the browser again") from None
            raise EndpointError(
                f"{redact_url(core.url)} refused a WebDriver BiDi session ({exc.message}); "
                "Firefox allows one session per browser, so another client may hold "
                "it") from None
        self.session_id = str(reply.get("sessionId", ""))
        caps = reply.get("capabilities")
        self.capabilities = caps if isinstance(caps, dict) else {}

    async def _adopt(self, made: WebDriverSession) -> None:
        """Take the session the socket was opened for (made over HTTP: chromedriver)
        instead of ``session.new``; one a lost connection left is ended now."""
        old, self.webdriver_session = self.webdriver_session, made
        if old is not None and old is not made:
            await _delete(old)
        self.session_id = made.session_id
        self.capabilities = dict(made.capabilities)

    async def open_page(self, reuse_context: str | None = None) -> str:
        """Create the supervisor's page (a new tab), or take back ``reuse_context``
        (after a reconnect) when it is still there; its frames come from getTree."""
        core = self.core
        context = None
        if reuse_context is not None:
            with contextlib.suppress(CDPError):
                await core.send("browsingContext.getTree", {"root": reuse_context,
                                                            "maxDepth": 0})
                context = reuse_context
        if context is None:
            created = await core.send("browsingContext.create", {"type": "tab"})
            context = str(created["context"])
        core.note("cdpnb.pageTarget", {"target_id": context, "session_id": context})
        # The tab's own contextCreated came before the reply named it: read the tree.
        await core.send("browsingContext.getTree", {"root": context})
        return context

    async def stop(self, leave: Collection[str] = ()) -> None:
        """Close the supervised pages (popups first) but those in ``leave`` (context
        ids: pages cdpnb did not create), then end the session."""
        core = self.core
        state = core.state
        for page in sorted(state.pages.values(), key=lambda p: p.main):
            if page.target_id in leave:
                continue  # not cdpnb's: session.end lets go of it
            if page.hazard is not None:
                # Closing it would end the browser: left open (frozen where possible).
                await abandon_bidi_page(core, page)
                continue
            try:
                await core.send("browsingContext.close", {"context": page.target_id},
                                timeout=STOP_TIMEOUT_S)
            except COMMAND_FAILURES as exc:
                log.info("cdpnb: closing browsing context %s failed: %s", page.target_id, exc)
        if self.webdriver_session is not None:
            # A session made over HTTP is ended there (its browser with it).
            await _delete(self.webdriver_session)
            return
        with contextlib.suppress(CDPError, CommandTimeout, ConnectionLost):
            await core.send("session.end", {}, timeout=STOP_TIMEOUT_S)

    # -- routing ------------------------------------------------------------------------

    def context_for(self, frame_id: str | None) -> str:
        """The browsing context that runs ``frame_id`` (the page's when None)."""
        state = self.core.state
        if not self.core.connected:
            # (Not "page gone": a lost connection has no page to route to yet.)
            raise self.core.down(f"reach frame {frame_id or 'of the page'}")
        if frame_id is None:
            if state.page_gone is not None or state.page_target_id is None:
                raise TargetGone(f"the supervisor's page is gone "
                                 f"({state.page_gone or 'not attached'})")
            return state.page_target_id
        if not isinstance(frame_id, str):
            raise TypeError(f"frame_id must be a str, got {type(frame_id).__name__}")
        if frame_id not in state.frames:
            known = ", ".join(list(state.frames)[:8]) or "none"
            raise UnknownFrame(f"frame {frame_id!r} is not in the frame tree (known: {known})")
        return frame_id

    # -- prompts ------------------------------------------------------------------------

    def answer(self, dialog: PendingDialog, accept: bool, prompt_text: str | None) -> Command:
        """``browsingContext.handleUserPrompt`` on the prompt's own context (Firefox
        answers the tab's shown prompt, which the state keeps as the answerable one)."""
        params: dict[str, Any] = {"context": dialog.frame_id, "accept": accept}
        if prompt_text is not None:
            params["userText"] = prompt_text
        return Command("browsingContext.handleUserPrompt", params, None)

    # -- script -------------------------------------------------------------------------

    async def evaluate(self, frame_id: str | None, expression: str, budget: Budget, *,
                       await_promise: bool, user_gesture: bool) -> Any:
        context = self.context_for(frame_id)
        params: dict[str, Any] = {
            "expression": expression, "target": {"context": context},
            "awaitPromise": await_promise, "resultOwnership": "none",
            "userActivation": user_gesture,
            "serializationOptions": {"maxObjectDepth": MAX_DEPTH, "maxDomDepth": 0},
        }
        return await self._script("script.evaluate", params, context, budget)

    async def _script(self, method: str, params: dict[str, Any], context: str,
                      budget: Budget) -> Any:
        with counted(self.core):
            return await self._counted_script(method, params, context, budget)

    async def _counted_script(self, method: str, params: dict[str, Any], context: str,
                              budget: Budget) -> Any:
        if budget.left() <= 0:
            raise EvaluateTimeout(f"{method}: the {budget.seconds:g} s budget was spent before "
                                  "it could be sent", budget=budget.seconds,
                                  elapsed=budget.elapsed(), ended_by="not sent")
        try:
            reply = await self.core.send(method, params, timeout=budget.left(),
                                         reply_reader=read_bidi_script_reply)
        except CommandTimeout:
            self.core.note("cdpnb.evaluateTimedOut", {})
            dialog = _blocking_prompt(self.core.state, context)
            if dialog is not None:
                ended_by = "not terminated"
                how = (f"not terminated: it waits on the open {dialog.type} dialog "
                       f"{dialog.id} (answer it with respond())")
            else:
                ended_by = "not terminated"
                how = ("WebDriver BiDi has no way to end a running script, so the page may "
                       "stay busy until it ends")
            raise EvaluateTimeout(f"{method} did not finish within its {budget.seconds:g} s "
                                  f"budget; {how}", budget=budget.seconds,
                                  elapsed=budget.elapsed(), ended_by=ended_by) from None
        if reply.get("type") == "exception":
            self.core.note("cdpnb.evaluateFailed", {})
            raise _evaluate_error(reply.get("exceptionDetails") or {})
        value = from_remote_value(reply.get("result") or {}, context)
        if isinstance(value, RemoteObject):
            self.core.note("cdpnb.evaluateByReference", {})
        return value


async def cdp_of_tab(core: Core, context: str, timeout: float = 5.0
                     ) -> Callable[[str, dict[str, Any] | None], Awaitable[dict[str, Any]]]:
    """A CDP ``send(method, params)`` for a tab behind chromium-bidi, through its
    ``goog:cdp.getSession`` / ``goog:cdp.sendCommand`` commands (measured: chromium-bidi
    17): what cdpnb does over CDP to free a page (a release, a freeze) it can then do
    over BiDi on Chromium. CDPError where the endpoint has no such commands (Firefox)."""
    session = str((await core.send("goog:cdp.getSession", {"context": context},
                                   timeout=timeout))["session"])

    async def send(method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        reply = await core.send("goog:cdp.sendCommand", {
            "method": method, "params": params or {}, "session": session}, timeout=timeout)
        result = reply.get("result")
        return result if isinstance(result, dict) else {}

    return send


async def abandon_bidi_page(core: Core, page: PageInfo) -> None:
    """Leave a BiDi page Chromium would crash on open, frozen where the endpoint lets
    us (chromium-bidi's ``goog:cdp`` commands reach the tab's CDP session: measured,
    chromium-bidi 17), and stop supervising it (``cdpnb.pageAbandoned``)."""
    try:
        cdp = await cdp_of_tab(core, page.target_id)
        await cdp("Page.setWebLifecycleState", {"state": "frozen"})
    except (*COMMAND_FAILURES, LookupError, TypeError) as exc:
        log.info("cdpnb: freezing page %s failed: %s", page.target_id, exc)
    core.note("cdpnb.pageAbandoned", {"context": page.target_id}, page.session_id)


async def _delete(session: WebDriverSession) -> None:
    """End a session made over HTTP; a server that is gone already is only logged."""
    try:
        await in_own_thread(lambda: session.delete(DELETE_TIMEOUT_S),
                            name="cdpnb-webdriver-delete")
    except (CdpnbError, OSError) as exc:
        log.info("cdpnb: DELETE /session/%s failed: %s", session.session_id, exc)


def _blocking_prompt(state: BrowserState, context: str) -> PendingDialog | None:
    page = state.frames.get(context)
    session = page.session_id if page is not None else None
    return next((d for d in state.pending_dialogs if d.page_session_id == session), None)


def _evaluate_error(details: dict[str, Any]) -> EvaluateError:
    """EvaluateError from BiDi ``exceptionDetails`` (text, the thrown value, stack)."""
    thrown = details.get("exception") or {}
    text = str(details.get("text") or "")
    if not text:
        value = from_remote_value(thrown, None) if isinstance(thrown, dict) else None
        text = f"Uncaught {value!r}" if value is not Undefined else "JavaScript exception"
    frames = (details.get("stackTrace") or {}).get("callFrames") or []
    stack = "\n".join(
        f"    at {f.get('functionName') or '<anonymous>'} ({f.get('url', '')}:"
        f"{int(f.get('lineNumber', 0)) + 1}:{int(f.get('columnNumber', 0)) + 1})"
        for f in frames if isinstance(f, dict))
    return EvaluateError(text.splitlines()[0] if text else text, stack or text)

