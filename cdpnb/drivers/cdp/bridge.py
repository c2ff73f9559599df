"""The dialog bridge over CDP: ``Fetch.enable`` with the bridge host's pattern pauses each
bridged call as ``Fetch.requestPaused`` on the page's (or frame's) own session, and
``Fetch.fulfillRequest`` answers it (the bridge itself: ``shared.bridge``)."""

from __future__ import annotations

import asyncio
import base64
import json
import logging
from collections.abc import Awaitable
from typing import Any

from cdpnb.errors import COMMAND_FAILURES
from cdpnb.protocol import Event, Message
from cdpnb.session.bridge import (
    BRIDGE_HOST,
    DialogBridge,
    is_bridge_url,
    spawn_bridge_replies,
)
from cdpnb.state import Change

__all__ = ["PATTERNS", "FetchBridge"]

log = logging.getLogger("cdpnb.supervisor")

PATTERNS = [{"urlPattern": f"*://{BRIDGE_HOST}/*", "requestStage": "Request"}]


class FetchBridge(DialogBridge):
    """The bridge over CDP's ``Fetch`` domain: installed on every frame host attached."""

    #: The command that answers a paused bridge request.
    ANSWER_METHOD = "Fetch.fulfillRequest"

    def install_commands(self, session_id: str | None) -> list[Awaitable[Any]]:
        """The commands that install the bridge on a page or child session, to be
        gathered with the rest of its set-up and ``Runtime.runIfWaitingForDebugger``:
        a session runs its commands in the order they come, so the script is
        registered before the page runs, yet nothing waits for a reply first.

        Measured on Chromium 156: a ``noopener`` popup (or a ``target=_blank`` link)
        paused by the browser-level auto-attach does not reply to
        ``Page.addScriptToEvaluateOnNewDocument`` until it runs, so awaiting that reply
        before releasing it froze the tab for good."""
        core = self.core
        calls: list[Awaitable[Any]] = []
        if self.bypass_csp:
            calls.append(core.send("Page.setBypassCSP", {"enabled": True},
                                   session_id=session_id))
        calls.append(core.send("Fetch.enable", {"patterns": PATTERNS}, session_id=session_id))
        calls.append(core.send("Page.addScriptToEvaluateOnNewDocument",
                               {"source": self.script, "runImmediately": True},
                               session_id=session_id))
        return calls

    async def install(self, session_id: str | None) -> None:
        """On one page or child session, already running (see ``install_commands`` for
        one that waits for the debugger)."""
        await asyncio.gather(*self.install_commands(session_id))
        self.installed.add(session_id)

    async def _install_attached(self, page_session_id: str | None) -> None:
        state = self.core.state
        pages: list[str | None] = ([page_session_id] if page_session_id is not None
                                   else list(state.pages))
        if not pages and state.direct:
            pages = [None]
        owned = set(pages)
        sessions = list(pages)
        for s in state.sessions.values():
            parent = s.parent_session_id
            if s.type == "iframe" and parent is not None:
                while parent is not None and parent not in owned:
                    parent = state.sessions[parent].parent_session_id \
                        if parent in state.sessions else None
                if parent is not None:
                    sessions.append(s.session_id)
        for session_id in dict.fromkeys(sessions):
            if session_id in self.installed:
                continue
            try:
                await self.install(session_id)
                # The document already there gets it too (new documents get it by the
                # script registration).
                await self.core.send("Runtime.evaluate", {"expression": self.script},
                                     session_id=session_id)
            except COMMAND_FAILURES as exc:
                log.info("cdpnb: installing the dialog bridge on %s failed: %s", session_id, exc)

    def __call__(self, message: Message, changes: tuple[Change, ...]) -> None:
        spawn_bridge_replies(self.core, changes, self._refuse, self._release)
        if type(message) is not Event or message.method != "Fetch.requestPaused":
            return
        params = message.params
        request = params.get("request") or {}
        request_id = params.get("requestId")
        if not isinstance(request_id, str) or not isinstance(request, dict):
            return
        if not is_bridge_url(str(request.get("url", ""))):
            # Someone paused a request that is not ours: let it go at once, off the reader.
            self.core.spawn(self._continue(message.session_id, request_id),
                            name=f"cdpnb-fetch-continue-{request_id}")
            return
        frame_id = params.get("frameId")
        call, why = self._check(request, _post_data)
        if call is None:
            self.core.note("cdpnb.bridgeRequestRefused", {
                "requestId": request_id, "frameId": frame_id, "reason": why},
                message.session_id)
            return
        self.core.note("cdpnb.bridgeDialogOpening", {
            "type": call["type"],
            "message": call.get("message", ""),
            "defaultPrompt": call.get("defaultPrompt", ""),
            "frameId": frame_id,
            "requestId": request_id,
        }, message.session_id)

    async def _continue(self, session_id: str | None, request_id: str) -> None:
        try:
            await self.core.send("Fetch.continueRequest", {"requestId": request_id},
                                 session_id=session_id)
        except COMMAND_FAILURES as exc:
            log.info("cdpnb: continuing paused request %s failed: %s", request_id, exc)

    async def _refuse(self, session_id: str | None, request_id: str, reason: str) -> None:
        # An error status: cdpnb's own script falls back to the native dialog on it.
        body = json.dumps({"error": reason}).encode()
        try:
            await self.core.send("Fetch.fulfillRequest", {
                "requestId": request_id, "responseCode": 403,
                "responseHeaders": [{"name": "Content-Type", "value": "application/json"},
                                    {"name": "Access-Control-Allow-Origin", "value": "*"}],
                "body": base64.b64encode(body).decode("ascii")}, session_id=session_id)
        except COMMAND_FAILURES as exc:
            log.info("cdpnb: refusing bridge request %s failed: %s", request_id, exc)

    def _fulfil_command(self, request_id: str, accept: bool, prompt_text: str | None
                        ) -> tuple[str, dict[str, Any]]:
        body = json.dumps({"accept": accept, "promptText": prompt_text}).encode()
        return "Fetch.fulfillRequest", {
            "requestId": request_id,
            "responseCode": 200,
            "responseHeaders": [{"name": "Content-Type", "value": "application/json"},
                                {"name": "Access-Control-Allow-Origin", "value": "*"}],
            "body": base64.b64encode(body).decode("ascii"),
        }


def _post_data(request: dict[str, Any]) -> str:
    if isinstance(request.get("postData"), str):
        return str(request["postData"])
    # Newer Chromium sends the body only as base64 entries.
    entries = request.get("postDataEntries") or []
    chunks = [base64.b64decode(e.get("bytes", "")) for e in entries if isinstance(e, dict)]
    return b"".join(chunks).decode("utf-8")
