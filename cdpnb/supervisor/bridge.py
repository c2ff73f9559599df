"""The dialog bridge: alert/confirm/prompt answered over intercepted XHR.

For endpoints where something else auto-dismisses native dialogs (Playwright with
no handler, cloud CDP proxies), a script replaces ``alert``/``confirm``/``prompt``
with a synchronous XHR to a reserved ``.invalid`` host. ``Fetch.enable`` with that
host's pattern pauses each call as ``Fetch.requestPaused`` on our session, before
any DNS look-up; the supervisor folds it as a ``cdpnb.bridgeDialogOpening`` note, so
it is the same pending dialog as a native one (``via="bridge"``), and answers it
with ``Fetch.fulfillRequest``. If the XHR fails (a CSP ``connect-src``, no
interception), the page falls back to the native dialog: never a silent answer.
"""

from __future__ import annotations

import base64
import json
import logging
from typing import Any
from urllib.parse import urlsplit

from cdpnb.errors import CDPError, CommandTimeout, ConnectionLost
from cdpnb.protocol import Event, Message
from cdpnb.state import PendingDialog
from cdpnb.supervisor.core import Core

__all__ = ["BRIDGE_HOST", "BRIDGE_SCRIPT", "DialogBridge"]

log = logging.getLogger("cdpnb.supervisor")

#: RFC 6761 reserves .invalid: it never resolves, so a leak is an error, not a request.
BRIDGE_HOST = "cdpnb-bridge.invalid"
PATTERNS = [{"urlPattern": f"*://{BRIDGE_HOST}/*", "requestStage": "Request"}]
BRIDGE_SCRIPT = """(() => {
  if (window.__cdpnbBridge) return;
  const native = {alert: window.alert, confirm: window.confirm, prompt: window.prompt};
  const ask = (type, message, defaultPrompt) => {
    try {
      const scheme = location.protocol === "https:" ? "https:" : "http:";
      const xhr = new XMLHttpRequest();
      xhr.open("POST", scheme + "//%(host)s/dialog", false);
      xhr.setRequestHeader("Content-Type", "text/plain");
      xhr.send(JSON.stringify({type: type, message: message, defaultPrompt: defaultPrompt,
                               url: location.href}));
      if (xhr.status !== 200) return null;
      const answer = JSON.parse(xhr.responseText);
      return typeof answer === "object" && answer !== null ? answer : null;
    } catch (e) {
      return null;
    }
  };
  const text = (value, fallback) => value === undefined ? fallback : String(value);
  window.alert = function alert(message) {
    const answer = ask("alert", text(message, ""), "");
    if (answer === null) return native.alert.apply(this, arguments);
  };
  window.confirm = function confirm(message) {
    const answer = ask("confirm", text(message, ""), "");
    if (answer === null) return native.confirm.apply(this, arguments);
    return answer.accept === true;
  };
  window.prompt = function prompt(message, defaultPrompt) {
    const answer = ask("prompt", text(message, ""), text(defaultPrompt, ""));
    if (answer === null) return native.prompt.apply(this, arguments);
    return answer.accept === true ? String(answer.promptText ?? "") : null;
  };
  Object.defineProperty(window, "__cdpnbBridge", {value: true});
})();""".replace("%(host)s", BRIDGE_HOST)


def is_bridge_url(url: str) -> bool:
    try:
        return urlsplit(url).hostname == BRIDGE_HOST
    except ValueError:
        return False


class DialogBridge:
    """Installs the bridge on sessions and turns paused bridge requests into dialogs."""

    def __init__(self, core: Core, *, bypass_csp: bool = False) -> None:
        self.core = core
        self.bypass_csp = bypass_csp
        self.enabled = False
        #: True while install_everywhere works through the sessions already attached.
        self.installing = False
        self.installed: set[str | None] = set()
        # dialog id -> (session, Fetch requestId) to answer it with
        self._requests: dict[str, tuple[str | None, str]] = {}

    async def install(self, session_id: str | None) -> None:
        """On one page or child session; for a child, while it still waits."""
        core = self.core
        if self.bypass_csp:
            await core.send("Page.setBypassCSP", {"enabled": True}, session_id=session_id)
        await core.send("Fetch.enable", {"patterns": PATTERNS}, session_id=session_id)
        await core.send("Page.addScriptToEvaluateOnNewDocument",
                        {"source": BRIDGE_SCRIPT, "runImmediately": True},
                        session_id=session_id)
        self.installed.add(session_id)

    async def install_everywhere(self) -> None:
        """Turn the bridge on now: the page and every attached frame host."""
        self.enabled = True  # children attaching meanwhile get it as they attach
        self.installing = True
        try:
            await self._install_attached()
        finally:
            self.installing = False

    async def _install_attached(self) -> None:
        state = self.core.state
        sessions = [state.page_session_id, *(s.session_id for s in state.sessions.values()
                                             if s.type == "iframe")]
        for session_id in dict.fromkeys(sessions):
            if session_id in self.installed:
                continue
            try:
                await self.install(session_id)
                # The document already there gets it too (new documents get it by the
                # script registration).
                await self.core.send("Runtime.evaluate", {"expression": BRIDGE_SCRIPT},
                                     session_id=session_id)
            except (CDPError, CommandTimeout) as exc:
                log.info("cdpnb: installing the dialog bridge on %s failed: %s", session_id, exc)

    def forget_sessions(self) -> None:
        """After a reconnect every session is new."""
        self.installed.clear()
        self._requests.clear()

    # -- the stream ---------------------------------------------------------------------

    def __call__(self, message: Message) -> None:
        if type(message) is not Event or message.method != "Fetch.requestPaused":
            return
        params = message.params
        request = params.get("request") or {}
        request_id = params.get("requestId")
        if not isinstance(request_id, str):
            return
        if not is_bridge_url(str(request.get("url", ""))):
            # Someone paused a request that is not ours: let it go at once, off the reader.
            self.core.spawn(self._continue(message.session_id, request_id),
                            name=f"cdpnb-fetch-continue-{request_id}")
            return
        try:
            call = json.loads(_post_data(request))
            kind = call["type"]
        except (ValueError, KeyError, TypeError):
            self.core.stats["bridge-bad-requests"] += 1
            self.core.spawn(self._refuse(message.session_id, request_id),
                            name=f"cdpnb-bridge-refuse-{request_id}")
            return
        self.core.note("cdpnb.bridgeDialogOpening", {
            "type": kind,
            "message": str(call.get("message", "")),
            "defaultPrompt": str(call.get("defaultPrompt", "")),
            "url": str(call.get("url", "")),
            "frameId": params.get("frameId"),
            "requestId": request_id,
        }, message.session_id)
        pending = self.core.state.pending_dialogs
        if pending and pending[-1].via == "bridge":
            self._requests[pending[-1].id] = (message.session_id, request_id)

    async def _continue(self, session_id: str | None, request_id: str) -> None:
        try:
            await self.core.send("Fetch.continueRequest", {"requestId": request_id},
                                 session_id=session_id)
        except (CDPError, CommandTimeout, ConnectionLost) as exc:
            log.info("cdpnb: continuing paused request %s failed: %s", request_id, exc)

    async def _refuse(self, session_id: str | None, request_id: str) -> None:
        # The page falls back to its native dialog when the bridge answers with an error.
        await self.core.send("Fetch.fulfillRequest", {
            "requestId": request_id, "responseCode": 400,
            "responseHeaders": [{"name": "Access-Control-Allow-Origin", "value": "*"}],
            "body": ""}, session_id=session_id)

    # -- answering ----------------------------------------------------------------------

    async def fulfil(self, dialog: PendingDialog, accept: bool, prompt_text: str | None) -> None:
        """Answer a bridged dialog: the page's XHR returns, and with it the call."""
        session_id, request_id = self._requests.pop(dialog.id, (None, ""))
        if not request_id:
            raise CDPError(-32000, f"no paused bridge request is known for {dialog.id}",
                           "Fetch.fulfillRequest", dialog.session_id)
        text = prompt_text
        if accept and dialog.type == "prompt" and text is None:
            text = ""
        body = json.dumps({"accept": accept, "promptText": text}).encode()
        await self.core.send("Fetch.fulfillRequest", {
            "requestId": request_id,
            "responseCode": 200,
            "responseHeaders": [{"name": "Content-Type", "value": "application/json"},
                                {"name": "Access-Control-Allow-Origin", "value": "*"}],
            "body": base64.b64encode(body).decode("ascii"),
        }, session_id=session_id)


def _post_data(request: dict[str, Any]) -> str:
    if isinstance(request.get("postData"), str):
        return str(request["postData"])
    # Newer Chromium sends the body only as base64 entries.
    entries = request.get("postDataEntries") or []
    chunks = [base64.b64decode(e.get("bytes", "")) for e in entries if isinstance(e, dict)]
    return b"".join(chunks).decode("utf-8")
