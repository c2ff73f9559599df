"""The dialog bridge over WebDriver BiDi: the same page script, intercepted with
``network.addIntercept`` and answered with ``network.provideResponse``.

Measured on Firefox ESR 153 and chromium-bidi 17 (raw BiDi, a synchronous XHR from the
main frame and from a cross-site frame):

* An intercept at ``beforeRequestSent`` for the bridge host pauses the page's XHR
  (``network.beforeRequestSent`` with ``isBlocked: true``) before any DNS look-up, in
  every frame, and ``network.provideResponse`` answers it (one intercept for every
  context: chromium-bidi does not pause a cross-site frame's request for an intercept
  scoped to its tab): the page's XHR
  returns status 200 and the body.
* The event carries the request's headers but not its body, so the script also sends
  the call in the ``X-Cdpnb-Bridge`` header (base64 of its UTF-8 JSON).
* That header makes the request non-simple: chromium-bidi pauses a CORS preflight
  (``OPTIONS``) first, which must be answered with ``Access-Control-Allow-Headers``;
  Firefox pauses only the ``POST``.
* ``script.addPreloadScript`` with the tab's context runs the script in every frame's
  new documents, before the page's own scripts; the documents already there get it by
  ``script.evaluate``. A popup is a new top-level context: it gets its own.

BiDi has no ``Page.setBypassCSP``: under a CSP whose ``connect-src`` blocks the bridge
host, the script falls back to the native dialog, as it does over CDP without
``bypass_csp``.
"""

from __future__ import annotations

import base64
import json
import logging
from collections.abc import Awaitable
from typing import Any

from cdpnb.errors import COMMAND_FAILURES
from cdpnb.protocol import Event, Message
from cdpnb.session.bridge import (
    BRIDGE_HEADER,
    BRIDGE_HOST,
    MAX_REQUEST_BYTES,
    DialogBridge,
    bridge_script,
    is_bridge_url,
    spawn_bridge_replies,
)
from cdpnb.session.core import Core
from cdpnb.state import BrowserState, Change, PendingDialog
from cdpnb.state.bidi import page_of_context

__all__ = ["BiDiDialogBridge", "foreign_request"]

log = logging.getLogger("cdpnb.supervisor")

#: What the bridge's XHR needs to be let through (the preflight's answer included).
_CORS = [("Access-Control-Allow-Origin", "*"),
         ("Access-Control-Allow-Methods", "POST"),
         ("Access-Control-Allow-Headers", f"content-type, {BRIDGE_HEADER.lower()}")]


def _headers(*extra: tuple[str, str]) -> list[dict[str, Any]]:
    return [{"name": name, "value": {"type": "string", "value": value}}
            for name, value in (*_CORS, *extra)]


def _header_call(request: dict[str, Any]) -> str:
    """The call's JSON from the request's BRIDGE_HEADER (base64 of UTF-8)."""
    for header in request.get("headers") or ():
        if isinstance(header, dict) and str(header.get("name", "")).lower() == \
                BRIDGE_HEADER.lower():
            value = header.get("value")
            text = value.get("value") if isinstance(value, dict) else value
            if not isinstance(text, str) or len(text) > MAX_REQUEST_BYTES * 4 // 3 + 4:
                raise ValueError("bridge header is not a bounded string")
            return base64.b64decode(text, validate=True).decode("utf-8")
    raise KeyError(BRIDGE_HEADER)


def foreign_request(message: Message, state: BrowserState) -> bool:
    """Whether ``message`` is an unpaused ``network.beforeRequestSent`` of a tab no
    supervised page holds: the session-wide subscription brings every tab's requests
    (so that a bridge call paused anywhere is answered), but these say nothing about
    the supervised pages, and their headers (cookies, credentials) are not the trace's
    to keep. The supervisor neither records nor needs them."""
    if type(message) is not Event or message.method != "network.beforeRequestSent":
        return False
    params = message.params
    if params.get("isBlocked"):
        return False
    context = params.get("context")
    return page_of_context(state, context if isinstance(context, str) else None) is None


class BiDiDialogBridge(DialogBridge):
    """The bridge on the supervisor's BiDi pages: one intercept of the bridge host for
    the whole session (every context), and one preload script per page (top-level
    context) that covers its frames."""

    ANSWER_METHOD = "network.provideResponse"

    def __init__(self, core: Core, *, bypass_csp: bool = False, key: str | None = None,
                 script: str | None = None) -> None:
        super().__init__(core, bypass_csp=bypass_csp, key=key, script=script)
        self.script = script or bridge_script(self._key, header=True)
        self._installing: set[str] = set()
        #: The one intercept of the bridge host, for the whole BiDi session.
        self._intercepting = False

    async def install(self, session_id: str | None) -> None:
        page = session_id
        if page is None:
            return
        core = self.core
        if not self._intercepting:
            # For every context, not the page's: chromium-bidi 17 applies an intercept
            # scoped to a tab's context to that tab's own target only, so the bridge
            # call of a cross-site (out-of-process) frame in it went out unpaused, failed
            # and fell back to the native dialog (measured: every time on the probe page).
            # Only the bridge host is paused, and every paused request is answered, the
            # unknown ones refused: so the subscription is for every context too, or a
            # tab nobody supervises that called the host would stay paused.
            await core.send("session.subscribe", {"events": ["network.beforeRequestSent"]})
            await core.send("network.addIntercept", {
                "phases": ["beforeRequestSent"],
                "urlPatterns": [{"type": "pattern", "hostname": BRIDGE_HOST}]})
            self._intercepting = True
        await core.send("script.addPreloadScript", {
            "functionDeclaration": f"() => {{ {self.script} }}", "contexts": [page]})
        self.installed.add(page)

    def install_commands(self, session_id: str | None) -> list[Awaitable[Any]]:
        """BiDi has no paused page to set up before it runs: the install itself."""
        return [self.install(session_id)]

    def forget_sessions(self) -> None:
        """After a reconnect the BiDi session, its intercept and scripts are new."""
        super().forget_sessions()
        self._intercepting = False

    async def _install_attached(self, page_session_id: str | None) -> None:
        state = self.core.state
        pages = [page_session_id] if page_session_id is not None else list(state.pages)
        for page in pages:
            if page in self.installed or page in self._installing:
                continue
            self._installing.add(page)  # a popup's PageOpened may ask again meanwhile
            try:
                await self.install(page)
                # The documents already there get it too (new ones by the preload script).
                frames = [f.frame_id for f in self.core.state.frames.values()
                          if f.session_id == page]
                for frame in frames:
                    await self.core.send("script.evaluate", {
                        "expression": self.script, "target": {"context": frame},
                        "awaitPromise": False})
            except COMMAND_FAILURES as exc:
                log.info("cdpnb: installing the dialog bridge on %s failed: %s", page, exc)
            finally:
                self._installing.discard(page)

    # -- the stream ---------------------------------------------------------------------

    def __call__(self, message: Message, changes: tuple[Change, ...]) -> None:
        spawn_bridge_replies(self.core, changes, self._refuse, self._release)
        if type(message) is not Event or message.method != "network.beforeRequestSent":
            return
        params = message.params
        request = params.get("request")
        if not params.get("isBlocked") or not isinstance(request, dict):
            return
        request_id = request.get("request")
        if not isinstance(request_id, str):
            return
        if not is_bridge_url(str(request.get("url", ""))):
            self.core.spawn(self._continue(None, request_id),
                            name=f"cdpnb-bidi-continue-{request_id}")
            return
        if request.get("method") == "OPTIONS":
            # chromium-bidi's CORS preflight for the bridge header: let the POST come.
            self.core.spawn(self._respond(request_id, 204, ""), name="cdpnb-bridge-preflight")
            return
        context = params.get("context")
        frame_id = context if isinstance(context, str) else None
        page = page_of_context(self.core.state, frame_id)
        session = page.session_id if page is not None else None
        call, why = self._check(request, _header_call)
        if call is not None and page is None:
            # The intercept covers every context: a call from a tab nobody supervises
            # (a popup of an unsupervised page holding the key, say) must never become a
            # dialog of ours, nor receive an answer meant for one.
            call, why = None, "the call comes from a context no supervised page holds"
        if call is None:
            self.core.note("cdpnb.bridgeRequestRefused", {
                "requestId": request_id, "frameId": frame_id, "reason": why}, session)
            return
        self.core.note("cdpnb.bridgeDialogOpening", {
            "type": call["type"], "message": call.get("message", ""),
            "defaultPrompt": call.get("defaultPrompt", ""), "frameId": frame_id,
            "requestId": request_id}, session)

    @staticmethod
    def _response(request_id: str, status: int, body: str) -> dict[str, Any]:
        params: dict[str, Any] = {"request": request_id, "statusCode": status,
                                  "headers": _headers(("Content-Type", "application/json"))}
        if body:
            params["body"] = {"type": "string", "value": body}
        return params

    async def _respond(self, request_id: str, status: int, body: str) -> None:
        await self.core.send("network.provideResponse", self._response(request_id, status, body))

    async def _continue(self, session_id: str | None, request_id: str) -> None:
        try:
            await self.core.send("network.continueRequest", {"request": request_id})
        except COMMAND_FAILURES as exc:
            log.info("cdpnb: continuing paused request %s failed: %s", request_id, exc)

    async def _refuse(self, session_id: str | None, request_id: str, reason: str) -> None:
        # An error status: cdpnb's own script falls back to the native dialog on it.
        try:
            await self._respond(request_id, 403, json.dumps({"error": reason}))
        except COMMAND_FAILURES as exc:
            log.info("cdpnb: refusing bridge request %s failed: %s", request_id, exc)

    def _answer_session(self, dialog: PendingDialog) -> None:
        return None  # (BiDi has no sessions on the wire: the request id names it.)

    def _release(self, session_id: str | None, request_id: str) -> None:
        # (BiDi has no sessions on the wire: the request id names it.)
        super()._release(None, request_id)

    def _fulfil_command(self, request_id: str, accept: bool, prompt_text: str | None
                        ) -> tuple[str, dict[str, Any]]:
        return "network.provideResponse", self._response(
            request_id, 200, json.dumps({"accept": accept, "promptText": prompt_text}))
