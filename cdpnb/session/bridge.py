"""The dialog bridge: alert/confirm/prompt answered over intercepted XHR, what every
protocol's bridge shares (the page script, its secret, the check of a paused call, the
answer); how a protocol pauses and fulfils the request is in its room
(``cdp.bridge.FetchBridge``: ``Fetch``; ``bidi.bridge``: ``network.addIntercept``).

For endpoints where something else auto-dismisses native dialogs (Playwright with
no handler, cloud CDP proxies), and for pages where a native dialog would crash the
browser, a script replaces ``alert``/``confirm``/``prompt`` with a synchronous XHR to
a reserved ``.invalid`` host. The protocol pauses each call before any DNS look-up; the
supervisor folds it as a ``cdpnb.bridgeDialogOpening`` note, so it is the same
pending dialog as a native one (``via="bridge"``, with its ``request_id``), and
answers it by fulfilling the request. If the XHR fails (a CSP ``connect-src``,
no interception), the page falls back to the native dialog: never a silent answer.

The page cannot forge a dialog: the script carries a secret of this supervisor in
its request body, kept in a closure with the XHR methods captured before any page
script runs; a request without it is refused (an error body, a
``cdpnb.bridgeRequestRefused`` note, never a dialog). The frame comes from the
browser (the paused request's ``frameId``) and the URL from the frame table, not
from the page's JSON; the state refuses a second call from a frame that has one
open (the first one blocks that frame's script, so the second cannot be its own).
"""

from __future__ import annotations

import abc
import binascii
import hmac
import json
import logging
import secrets
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any
from urllib.parse import urlsplit

from cdpnb.errors import CDPError
from cdpnb.protocol import Message
from cdpnb.session.core import Core
from cdpnb.state import Change, PendingDialog
from cdpnb.state.changes import BridgeRequestAbandoned, BridgeRequestRefused

__all__ = ["BRIDGE_CHANGES", "BRIDGE_HEADER", "BRIDGE_HOST", "BRIDGE_PATH", "DialogBridge",
           "NoBridge", "bridge_script", "is_bridge_url", "spawn_bridge_replies"]

log = logging.getLogger("cdpnb.supervisor")

#: RFC 6761 reserves .invalid: it never resolves, so a leak is an error, not a request.
BRIDGE_HOST = "cdpnb-bridge.invalid"
BRIDGE_PATH = "/dialog"
#: A bridged call's JSON is page-made: bounded before it is parsed.
MAX_REQUEST_BYTES = 64 * 1024
#: The changes a bridge answers in the page (on the reader's thread: subscribe now=True).
BRIDGE_CHANGES = (BridgeRequestRefused, BridgeRequestAbandoned)

_SCRIPT = """(() => {
  if (window.__cdpnbBridge) return;
  // Captured before any page script runs: later patches by the page never see a call.
  const XHR = window.XMLHttpRequest, proto = XHR.prototype, apply = Reflect.apply;
  const open = proto.open, send = proto.send, setHeader = proto.setRequestHeader;
  const status = Object.getOwnPropertyDescriptor(proto, "status").get;
  const body = Object.getOwnPropertyDescriptor(proto, "responseText").get;
  const stringify = JSON.stringify, parse = JSON.parse, toText = String;
  const native = {alert: window.alert, confirm: window.confirm, prompt: window.prompt};
  const key = "%(key)s";
  const ask = (type, message, defaultPrompt) => {
    try {
      const scheme = location.protocol === "https:" ? "https:" : "http:";
      const xhr = new XHR();
      apply(open, xhr, ["POST", scheme + "//%(host)s%(path)s", false]);
      apply(setHeader, xhr, ["Content-Type", "text/plain"]);
      // No prototype: JSON.stringify looks up toJSON on an object it serialises, and a
      // page that defined Object.prototype.toJSON would be handed this object, key and
      // all (measured: chromium, firefox, chromium+bidi). The values are strings.
      apply(send, xhr, [stringify({__proto__: null, key: key, type: type,
                                   message: message, defaultPrompt: defaultPrompt})]);
      if (apply(status, xhr, []) !== 200) return null;
      const answer = parse(apply(body, xhr, []));
      return typeof answer === "object" && answer !== null ? answer : null;
    } catch (e) {
      return null;
    }
  };
  const text = (value, fallback) => value === undefined ? fallback : toText(value);
  window.alert = function alert(message) {
    const answer = ask("alert", text(message, ""), "");
    if (answer === null) return apply(native.alert, this, arguments);
  };
  window.confirm = function confirm(message) {
    const answer = ask("confirm", text(message, ""), "");
    if (answer === null) return apply(native.confirm, this, arguments);
    return answer.accept === true;
  };
  window.prompt = function prompt(message, defaultPrompt) {
    const answer = ask("prompt", text(message, ""), text(defaultPrompt, ""));
    if (answer === null) return apply(native.prompt, this, arguments);
    return answer.accept === true ? toText(answer.promptText ?? "") : null;
  };
  Object.defineProperty(window, "__cdpnbBridge", {value: true});
})();"""


#: Over WebDriver BiDi the call travels (base64 of its UTF-8 JSON) in this header too.
BRIDGE_HEADER = "X-Cdpnb-Bridge"


#: WebDriver BiDi shows a paused request's headers, not its body: there the script also
#: sends the call in BRIDGE_HEADER. (A replay sends the script its recording sent:
#: ``ReplayBackend.bridge_script``.)
_WITH_HEADER = [
    ("  const stringify = JSON.stringify, parse = JSON.parse, toText = String;\n",
     "  const stringify = JSON.stringify, parse = JSON.parse, toText = String;\n"
     "  const toBase64 = window.btoa, bytes = window.unescape, "
     "encode = window.encodeURIComponent;\n"),
    ("      apply(send, xhr, [stringify({__proto__: null, key: key, type: type,\n"
     "                                   message: message, defaultPrompt: defaultPrompt})]);\n",
     "      const call = stringify({__proto__: null, key: key, type: type,\n"
     "                              message: message, defaultPrompt: defaultPrompt});\n"
     "      apply(setHeader, xhr, [\"%(header)s\", toBase64(bytes(encode(call)))]);\n"
     "      apply(send, xhr, [call]);\n"),
]


def bridge_script(key: str, *, header: bool = False) -> str:
    """The page script for a supervisor whose secret is ``key`` (URL-safe text);
    ``header`` also sends the call in BRIDGE_HEADER (for WebDriver BiDi)."""
    if not key.replace("-", "").replace("_", "").isalnum():
        raise ValueError("the bridge key must be URL-safe text")
    script = _SCRIPT
    if header:
        for plain, with_header in _WITH_HEADER:
            assert plain in script
            script = script.replace(plain, with_header)
    return (script.replace("%(host)s", BRIDGE_HOST).replace("%(path)s", BRIDGE_PATH)
            .replace("%(key)s", key).replace("%(header)s", BRIDGE_HEADER))


def is_bridge_url(url: str) -> bool:
    try:
        return urlsplit(url).hostname == BRIDGE_HOST
    except ValueError:
        return False


def spawn_bridge_replies(
        core: Core, changes: tuple[Change, ...],
        refuse: Callable[[str | None, str, str], Coroutine[Any, Any, None]],
        release: Callable[[str | None, str], object]) -> None:
    """Answer every bridge request the reducers turned away (no key, a second call from
    a frame with one open, a context no supervised page holds) with an error status, in
    the background; and let go of every bridged call whose dialog ended without an
    answer (its frame navigated or went) with a dismissal, at once, from the thread
    that read the news (``release`` posts it: see ``_release``). Either protocol's
    bridge does this first."""
    for change in changes:
        kind = type(change)
        if kind is BridgeRequestRefused:
            assert isinstance(change, BridgeRequestRefused)
            core.spawn(refuse(change.session_id, change.request_id, change.reason),
                       name=f"cdpnb-bridge-refuse-{change.request_id}")
        elif kind is BridgeRequestAbandoned:
            assert isinstance(change, BridgeRequestAbandoned)
            release(change.session_id, change.request_id)


class DialogBridge(abc.ABC):
    """A protocol's dialog bridge: installs the page script where its protocol intercepts
    requests, checks each paused bridge request (the key, the call), and answers it.
    What only the protocol knows (how it installs, pauses, continues, refuses and
    fulfils a request) is its subclass's: ``cdp.bridge.FetchBridge``,
    ``bidi.bridge.BiDiDialogBridge``; ``NoBridge`` where none can work."""

    #: The command that answers a paused bridge request.
    ANSWER_METHOD: str

    def __init__(self, core: Core, *, bypass_csp: bool = False, key: str | None = None,
                 script: str | None = None) -> None:
        self.core = core
        self.bypass_csp = bypass_csp
        #: The supervisor's switch: install the bridge on every frame host attached.
        self.enabled = False
        #: True while install_everywhere works through the sessions already attached.
        self.installing = False
        self.installed: set[str | None] = set()
        # Fresh for each supervisor; a replay passes the recorded one (see ReplayBackend).
        self._key = key or secrets.token_urlsafe(18)
        #: A replay's recorded script, sent as it was recorded (None: this version's).
        self.recorded_script = script
        self.script = script or bridge_script(self._key)

    @property
    def key(self) -> str:
        """The secret the page script carries (a replay of this run needs the same)."""
        return self._key

    def switch_on(self, reason: str) -> None:
        """Turn the bridge on from now (attached frames included) and say so."""
        if not self.enabled:
            self.core.note("cdpnb.bridgeEnabled", {"reason": reason})
        # Marked now, so a second call before the task runs does not start another.
        self.enabled = self.installing = True
        self.core.spawn(self.install_everywhere(), name="cdpnb-bridge-on")

    async def install_everywhere(self, page_session_id: str | None = None) -> None:
        """Install on every supervised page and attached frame (or one page's)."""
        self.installing = True
        try:
            await self._install_attached(page_session_id)
        finally:
            self.installing = False

    def forget_sessions(self) -> None:
        """After a reconnect every session is new."""
        self.installed.clear()

    # -- the stream ---------------------------------------------------------------------

    def _check(self, request: dict[str, Any], read: Callable[[dict[str, Any]], str]
               ) -> tuple[dict[str, Any] | None, str]:
        """The call a paused bridge request makes (its JSON as ``read`` gets it from the
        request), or None and why it is not one."""
        path = urlsplit(str(request.get("url"))).path
        if request.get("method") != "POST" or path != BRIDGE_PATH:
            return None, f"not a bridge call ({request.get('method')} {path[:80]})"
        try:
            data = read(request)
            if len(data) > MAX_REQUEST_BYTES:
                return None, f"request body larger than {MAX_REQUEST_BYTES} bytes"
            call = json.loads(data)
        except (ValueError, TypeError, KeyError, binascii.Error):
            return None, "request body is not JSON"
        if not isinstance(call, dict):
            return None, "request body is not a JSON object"
        key = call.get("key")
        if not isinstance(key, str) or not hmac.compare_digest(key.encode(), self._key.encode()):
            return None, "no valid bridge key (not made by cdpnb's script)"
        if call.get("type") not in ("alert", "confirm", "prompt"):
            return None, f"unknown dialog type {str(call.get('type'))[:40]!r}"
        if not all(isinstance(call.get(k, ""), str) for k in ("message", "defaultPrompt")):
            return None, "message and defaultPrompt must be strings"
        return call, ""

    def _release(self, session_id: str | None, request_id: str) -> None:
        """The dialog ended with its document: the call returns as if dismissed (alert
        returns, confirm false, prompt null). Posted from the reader's thread, before
        it reads on: the browser aborts a paused call when its frame unloads, and the
        script then falls back to a native dialog in a frame that is going away, which
        Chromium 156 keeps as a dangling dialog (a crash at the page's next dialog).
        Released through the engine loop, the release lost that race 1 run in 10
        beside two CPU-bound processes (measured); an error reply (the browser aborted
        it first) is only recorded."""
        self.core.post(*self._fulfil_command(request_id, False, None), session_id=session_id)

    # -- answering ----------------------------------------------------------------------

    def answer_command(self, dialog: PendingDialog, accept: bool, prompt_text: str | None
                       ) -> tuple[str, dict[str, Any], str | None]:
        """The command (method, params, session) that answers a bridged dialog: the
        page's XHR returns, and with it the call. CDPError if its request is unknown."""
        session = self._answer_session(dialog)
        if not dialog.request_id:
            raise CDPError(-32000, f"no paused bridge request is known for {dialog.id}",
                           self.ANSWER_METHOD, session)
        text = prompt_text
        if accept and dialog.type == "prompt" and text is None:
            text = ""
        return (*self._fulfil_command(dialog.request_id, accept, text), session)

    def _answer_session(self, dialog: PendingDialog) -> str | None:
        return dialog.session_id

    # -- what each protocol does its own way ---------------------------------------------

    @abc.abstractmethod
    def install_commands(self, session_id: str | None) -> list[Awaitable[Any]]:
        """The commands that install the bridge on a page or child session, to be
        gathered with the rest of its set-up (see ``FetchBridge.install_commands``)."""

    @abc.abstractmethod
    async def _install_attached(self, page_session_id: str | None) -> None:
        """Install on every supervised page and frame already attached (or one page's)."""

    @abc.abstractmethod
    def __call__(self, message: Message, changes: tuple[Change, ...]) -> None:
        """Read one message (on the reader's thread): a paused request is checked and
        noted as a bridged dialog opening, or refused, or let go."""

    @abc.abstractmethod
    def _fulfil_command(self, request_id: str, accept: bool, prompt_text: str | None
                        ) -> tuple[str, dict[str, Any]]:
        """The command (method, params) that answers paused request ``request_id``."""


class NoBridge(DialogBridge):
    """No bridge where the protocol cannot intercept requests (WebDriver classic).
    Asked for, it says so in the log; it installs nothing and reads nothing."""

    ANSWER_METHOD = ""

    def switch_on(self, reason: str) -> None:
        log.info("cdpnb: the dialog bridge cannot work over this protocol (%s)", reason)

    def install_commands(self, session_id: str | None) -> list[Awaitable[Any]]:
        return []

    async def _install_attached(self, page_session_id: str | None) -> None:
        return None

    def __call__(self, message: Message, changes: tuple[Change, ...]) -> None:
        return None

    def _fulfil_command(self, request_id: str, accept: bool, prompt_text: str | None
                        ) -> tuple[str, dict[str, Any]]:
        raise CDPError(-32000, "no dialog bridge over this protocol", "bridge", None)
