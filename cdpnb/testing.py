"""A scripted CDP browser for tests: the transport seam's test double.

Real browsers prove behaviour; a scripted peer makes a race exact. Hand a
``ScriptedBrowser`` to ``Supervisor.start`` and it plays the browser's side of the
connection in memory: it answers the supervisor's set-up with a believable page
(``Target.createTarget``, ``Target.attachToTarget``, ``Page.getFrameTree``, ...),
records every command it receives, and lets a test say what the browser does and when::

    from cdpnb.testing import ScriptedBrowser, ScriptedError

    browser = ScriptedBrowser()

    @browser.on("Page.handleJavaScriptDialog")
    def answer(command):
        browser.push("Page.javascriptDialogClosed", {"frameId": browser.page_frame_id,
                                                     "result": command.params["accept"]},
                     session_id=command.session_id)
        return {}

    sup = await cdpnb.Supervisor.start(browser)
    await browser.open_dialog("prompt", "name?")      # returns once the supervisor folded it
    dialog = await sup.wait_for_dialog(timeout=1)
    await sup.respond("accept", prompt_text="Ada")
    assert browser.commands("Page.handleJavaScriptDialog")[0].params["promptText"] == "Ada"

A handler returns the command's ``result`` (a dict), raises ``ScriptedError`` for an
error reply, or returns ``HOLD`` to answer later with ``await browser.reply(command,
...)``: the window a real browser opens only by timing. ``await browser.emit(...)``
returns once the supervisor has folded the event, so the order of a test is the order
the supervisor sees. ``await browser.drop()`` ends the connection.

It is in the spirit of httpx's ``MockTransport``: a test double at the transport seam,
public so that code built on cdpnb can be tested against scripted browsers too.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from cdpnb.errors import ConnectionLost

__all__ = ["HOLD", "ScriptedBiDiBrowser", "ScriptedBrowser", "ScriptedCommand", "ScriptedError"]


class _Hold:
    def __repr__(self) -> str:
        return "HOLD"


#: Returned by a handler: the command gets its reply later, from ``browser.reply``.
HOLD = _Hold()


class ScriptedError(Exception):
    """Raised by a handler: the command gets a CDP error reply with this code/message."""

    def __init__(self, code: int, message: str) -> None:
        self.code = code
        self.message = message
        super().__init__(f"[{code}] {message}")


@dataclass
class ScriptedCommand:
    """A command the supervisor sent."""

    id: int
    method: str
    params: dict[str, Any]
    session_id: str | None
    replied: bool = False
    result: dict[str, Any] | None = field(default=None, repr=False)


Handler = Callable[[ScriptedCommand], "dict[str, Any] | _Hold | None"]


class _ScriptedTransport:
    """The supervisor's end of the in-memory connection. Frames are handed to the
    supervisor on the thread that sends them (the test's, or the supervisor's own
    when a handler answers a command), in order."""

    def __init__(self, browser: ScriptedBrowser) -> None:
        self.browser = browser
        self.url = browser.cdp_url
        #: What the supervisor speaks over it (``cdp``, or ``bidi`` for ScriptedBiDiBrowser).
        self.protocol = browser.protocol
        self.closed = False
        self.reason = "closed by the scripted browser"
        self._on_frames: Callable[[Sequence[str | bytes]], None] | None = None
        self._on_closed: Callable[[str], None] | None = None
        self._early: list[str] = []
        self._lock = threading.RLock()

    def start(self, on_frames: Callable[[Sequence[str | bytes]], None],
              on_closed: Callable[[str], None]) -> None:
        with self._lock:
            self._on_frames, self._on_closed = on_frames, on_closed
            early, self._early = self._early, []
        if early:
            on_frames(early)

    def deliver(self, text: str) -> None:
        with self._lock:
            if self.closed:
                return
            if self._on_frames is None:
                self._early.append(text)
                return
            self._on_frames([text])

    def send(self, data: bytes) -> None:
        if self.closed:
            raise ConnectionLost("the scripted browser's connection is closed")
        self.browser._receive(self, data.decode())

    def end(self, reason: str) -> None:
        with self._lock:
            if self.closed:
                return
            self.closed, self.reason = True, reason
            on_closed = self._on_closed
        if on_closed is not None:
            on_closed(reason)

    def fail(self, code: int, reason: str) -> None:
        self.end(f"closed by cdpnb: {reason} (code {code})")

    def close(self) -> None:
        self.end("closed by cdpnb")

    @property
    def close_reason(self) -> str:
        return self.reason


class ScriptedBrowser:
    """An in-memory CDP endpoint, scripted by the test. See the module docs."""

    #: The protocol its transport speaks.
    protocol = "cdp"

    def __init__(self, *, product: str = "ScriptedBrowser/1.0",
                 has_browser_handler: bool | None = True) -> None:
        self.cdp_url = "scripted://browser"
        self.product = product
        self.has_browser_handler = has_browser_handler
        self.received: list[ScriptedCommand] = []
        self._handlers: dict[str, Handler] = {}
        self._held: dict[int, tuple[_ScriptedTransport, ScriptedCommand]] = {}
        self._transport: _ScriptedTransport | None = None
        self._targets = itertools.count(1)
        self._auto_attach = False
        self.connections = 0
        #: The page the supervisor created: its target (= top frame) id and session.
        self.page_target_id: str | None = None
        self.page_session_id: str | None = None
        #: Sessions announced detached (``Target.detachedFromTarget``): as in Chromium,
        #: nothing more comes on them; an event a script pushes there is dropped (and
        #: counted in ``dropped``), like a page's news after its tab closed.
        self.detached: set[str] = set()
        self.dropped = 0

    # -- scripting -----------------------------------------------------------------

    def on(self, method: str, handler: Handler | None = None) -> Any:
        """Set what the browser does for ``method`` (usable as a decorator)."""
        def register(fn: Handler) -> Handler:
            self._handlers[method] = fn
            return fn

        return register(handler) if handler is not None else register

    @property
    def page_frame_id(self) -> str:
        """The top frame of the supervisor's page (its id is the target id, as in Chromium)."""
        if self.page_target_id is None:
            raise RuntimeError("the supervisor has not created its page yet")
        return self.page_target_id

    def commands(self, method: str | None = None) -> list[ScriptedCommand]:
        """The commands received so far (of one method)."""
        return [c for c in self.received if method is None or c.method == method]

    async def wait_for_command(self, method: str, timeout: float = 5.0,
                               count: int = 1) -> ScriptedCommand:
        """The ``count``-th command of ``method``, once it has arrived."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while len(self.commands(method)) < count:
            if loop.time() > deadline:
                raise TimeoutError(f"the supervisor sent no {method} (#{count}) within "
                                   f"{timeout:g} s; it sent {[c.method for c in self.received]}")
            await asyncio.sleep(0.002)
        return self.commands(method)[count - 1]

    # -- the browser speaking (thread-safe: the supervisor runs on cdpnb's engine loop) --

    def push(self, method: str, params: dict[str, Any] | None = None,
             session_id: str | None = None) -> None:
        """Send an event now (from a handler, or any thread); the supervisor has folded
        it when this returns. An event on a session announced detached is dropped."""
        if session_id is not None and session_id in self.detached:
            self.dropped += 1
            return
        if method == "Target.detachedFromTarget" and isinstance(params, dict) and isinstance(
                params.get("sessionId"), str):
            self.detached.add(params["sessionId"])
        self._deliver(self._message(method, params, session_id))

    async def emit(self, method: str, params: dict[str, Any] | None = None,
                   session_id: str | None = None) -> None:
        """Send an event; returns once the supervisor has folded it."""
        self.push(method, params, session_id)

    async def open_dialog(self, type: str = "alert", message: str = "", *,
                          frame_id: str | None = None, default_prompt: str = "",
                          session_id: str | None = None,
                          has_browser_handler: bool | None = None) -> None:
        """``Page.javascriptDialogOpening`` on the page session, as Chromium sends it."""
        handler = self.has_browser_handler if has_browser_handler is None else has_browser_handler
        params: dict[str, Any] = {"url": "about:blank", "frameId": frame_id or self.page_frame_id,
                                  "message": message, "type": type,
                                  "defaultPrompt": default_prompt}
        if handler is not None:
            params["hasBrowserHandler"] = handler
        await self.emit("Page.javascriptDialogOpening", params,
                        session_id or self.page_session_id)

    async def reply(self, command: ScriptedCommand, result: dict[str, Any] | None = None, *,
                    error: tuple[int, str] | None = None) -> None:
        """Answer a command a handler HELD; returns once the supervisor took the reply."""
        held = self._held.pop(command.id, None)
        if held is None:
            raise ValueError(f"command {command.id} ({command.method}) is not held")
        transport, _ = held
        self._deliver(self._reply_text(command, result, error), transport)

    async def drop(self) -> None:
        """End the connection as a crash would (no close frame)."""
        if self._transport is not None:
            self._transport.end("connection dropped")

    # -- the transport seam ----------------------------------------------------------

    async def connect_transport(self, url: str, timeout: float) -> _ScriptedTransport:
        """What ``Supervisor.start(browser)`` connects with (a ``Connector``)."""
        self._transport = _ScriptedTransport(self)
        self.connections += 1
        return self._transport

    # -- internals ---------------------------------------------------------------------

    def _deliver(self, text: str, transport: _ScriptedTransport | None = None) -> None:
        transport = transport or self._transport
        if transport is not None:
            transport.deliver(text)

    @staticmethod
    def _message(method: str, params: dict[str, Any] | None, session_id: str | None) -> str:
        message: dict[str, Any] = {"method": method, "params": params or {}}
        if session_id is not None:
            message["sessionId"] = session_id
        return json.dumps(message)

    @staticmethod
    def _reply_text(command: ScriptedCommand, result: dict[str, Any] | None,
                    error: tuple[int, str] | None) -> str:
        message: dict[str, Any] = {"id": command.id}
        if error is not None:
            message["error"] = {"code": error[0], "message": error[1]}
        else:
            message["result"] = result or {}
            command.result = result or {}
        command.replied = True
        if command.session_id is not None:
            message["sessionId"] = command.session_id
        return json.dumps(message)

    def _receive(self, transport: _ScriptedTransport, text: str) -> None:
        data = json.loads(text)
        command = ScriptedCommand(data["id"], data["method"], data.get("params") or {},
                                  data.get("sessionId"))
        self.received.append(command)
        custom = self._handlers.get(command.method)
        default = self._defaults().get(command.method)
        try:
            if custom is not None:
                result = custom(command)
            elif default is not None:
                result = default(self, command)
            else:
                result = {}
        except ScriptedError as exc:
            self._deliver(self._reply_text(command, None, (exc.code, exc.message)), transport)
            return
        if isinstance(result, _Hold):
            self._held[command.id] = (transport, command)
            return
        self._deliver(self._reply_text(command, result if isinstance(result, dict) else {},
                                       None), transport)

    def _defaults(self) -> Mapping[str, Callable[[ScriptedBrowser, ScriptedCommand],
                                                 dict[str, Any]]]:
        return _DEFAULTS

    # -- a believable page, by default -------------------------------------------------

    def _new_target(self) -> str:
        return f"TARGET-{next(self._targets)}"

    def _create_target(self, command: ScriptedCommand) -> dict[str, Any]:
        target = self._new_target()
        self.page_target_id, self.page_session_id = target, f"SESSION-{target}"
        if self._auto_attach:
            # As Chromium does with a browser-level auto-attach on: the new page is
            # announced paused, before the reply.
            self.push("Target.attachedToTarget", {
                "sessionId": f"SESSION-{target}", "waitingForDebugger": True,
                "targetInfo": {"targetId": target, "type": "page", "url": "about:blank",
                               "attached": True}})
        return {"targetId": target}

    def _attach_to_target(self, command: ScriptedCommand) -> dict[str, Any]:
        target = str(command.params.get("targetId"))
        session = f"SESSION-{target}"
        self.push("Target.attachedToTarget", {
            "sessionId": session, "waitingForDebugger": False,
            "targetInfo": {"targetId": target, "type": "page", "url": "about:blank",
                           "attached": True}})
        return {"sessionId": session}

    def _set_auto_attach(self, command: ScriptedCommand) -> dict[str, Any]:
        if command.session_id is None:
            self._auto_attach = bool(command.params.get("autoAttach"))
        return {}

    def _frame_tree(self, command: ScriptedCommand) -> dict[str, Any]:
        target = (command.session_id or "").removeprefix("SESSION-") or "TARGET-0"
        return {"frameTree": {"frame": {"id": target, "loaderId": f"L-{target}",
                                        "url": "about:blank", "securityOrigin": "://",
                                        "mimeType": "text/html"}}}

    def _close_target(self, command: ScriptedCommand) -> dict[str, Any]:
        target = str(command.params.get("targetId"))
        self.push("Target.detachedFromTarget", {"sessionId": f"SESSION-{target}",
                                                "targetId": target})
        return {"success": True}

    def _detach_from_target(self, command: ScriptedCommand) -> dict[str, Any]:
        # As Chromium does: the session is announced detached, then sends nothing more.
        session = str(command.params.get("sessionId"))
        self.push("Target.detachedFromTarget", {
            "sessionId": session, "targetId": session.removeprefix("SESSION-")})
        return {}

    def _version(self, command: ScriptedCommand) -> dict[str, Any]:
        return {"product": self.product, "protocolVersion": "1.3", "revision": "scripted",
                "userAgent": self.product, "jsVersion": ""}


_DEFAULTS: dict[str, Callable[[ScriptedBrowser, ScriptedCommand], dict[str, Any]]] = {
    "Browser.getVersion": ScriptedBrowser._version,
    "Target.createTarget": ScriptedBrowser._create_target,
    "Target.attachToTarget": ScriptedBrowser._attach_to_target,
    "Target.closeTarget": ScriptedBrowser._close_target,
    "Target.detachFromTarget": ScriptedBrowser._detach_from_target,
    "Target.setAutoAttach": ScriptedBrowser._set_auto_attach,
    "Page.getFrameTree": ScriptedBrowser._frame_tree,
}


class ScriptedBiDiBrowser(ScriptedBrowser):
    """An in-memory WebDriver BiDi endpoint, scripted by the test: the BiDi face of
    :class:`ScriptedBrowser` (same ``on``, ``push``/``emit``, ``HOLD``/``reply``,
    ``commands``, ``drop``), so that BiDi races are exact too::

        browser = ScriptedBiDiBrowser(product="Firefox/153.7.0esr")

        @browser.on("browsingContext.handleUserPrompt")
        def answer(command):
            browser.push("browsingContext.userPromptClosed", {
                "context": command.params["context"], "type": "prompt",
                "accepted": command.params["accept"],
                "userText": command.params.get("userText", "")})
            return {}

        sup = await cdpnb.Supervisor.start(browser)
        await browser.open_prompt("prompt", "name?")
        await sup.respond("accept", prompt_text="Ada")

    By default it answers ``session.new`` (with ``product`` as its browser name and
    version, which is the engine whose rules the state applies), ``session.subscribe``,
    ``browsingContext.create`` (a new tab, announced by ``contextCreated`` before the
    reply), ``getTree``, ``close`` (``contextDestroyed``) and ``script.evaluate``
    (``undefined``). ``page_target_id`` is the supervisor's tab, which is also its top
    frame's context; ``add_frame`` puts a child context in it.
    """

    protocol = "bidi"

    def __init__(self, *, product: str = "Firefox/153.7.0esr") -> None:
        super().__init__(product=product, has_browser_handler=None)
        self.cdp_url = "scripted://bidi"
        self._contexts: dict[str, str | None] = {}  # context -> parent

    # -- scripting -----------------------------------------------------------------

    async def open_prompt(self, type: str = "alert", message: str = "", *,
                          context: str | None = None, default_value: str = "",
                          handler: str = "ignore") -> None:
        """``browsingContext.userPromptOpened`` in ``context`` (the tab by default)."""
        params: dict[str, Any] = {"context": context or self.page_frame_id, "type": type,
                                  "message": message, "handler": handler}
        if type == "prompt":
            params["defaultValue"] = default_value
        await self.emit("browsingContext.userPromptOpened", params)

    async def add_frame(self, context: str, *, parent: str | None = None,
                        url: str = "about:blank") -> None:
        """A child context (a frame) of ``parent`` (the tab by default)."""
        parent = parent or self.page_frame_id
        self._contexts[context] = parent
        await self.emit("browsingContext.contextCreated", {
            "context": context, "parent": parent, "url": url, "children": None,
            "userContext": "default", "originalOpener": None})

    # -- the wire --------------------------------------------------------------------

    @staticmethod
    def _message(method: str, params: dict[str, Any] | None, session_id: str | None) -> str:
        return json.dumps({"type": "event", "method": method, "params": params or {}})

    @staticmethod
    def _reply_text(command: ScriptedCommand, result: dict[str, Any] | None,
                    error: tuple[int, str] | None) -> str:
        command.replied = True
        if error is not None:
            # BiDi names its errors; a ScriptedError's message is the error's name's
            # text ("no such alert: ..."), its code unused.
            name, _, text = error[1].partition(": ")
            return json.dumps({"type": "error", "id": command.id, "error": name,
                               "message": text or name})
        command.result = result or {}
        return json.dumps({"type": "success", "id": command.id, "result": result or {}})

    def _defaults(self) -> Mapping[str, Callable[[ScriptedBrowser, ScriptedCommand],
                                                 dict[str, Any]]]:
        return _BIDI_DEFAULTS

    # -- a believable tab, by default ---------------------------------------------------

    def _session_new(self, command: ScriptedCommand) -> dict[str, Any]:
        name, _, version = self.product.partition("/")
        return {"sessionId": "SCRIPTED-SESSION", "capabilities": {
            "browserName": name.lower(), "browserVersion": version,
            "unhandledPromptBehavior": {"default": "ignore"}, "userAgent": self.product}}

    def _subscribe(self, command: ScriptedCommand) -> dict[str, Any]:
        return {"subscription": f"SUB-{command.id}"}

    def _create(self, command: ScriptedCommand) -> dict[str, Any]:
        context = f"CONTEXT-{next(self._targets)}"
        if self.page_target_id is None:
            self.page_target_id = self.page_session_id = context
        self._contexts[context] = None
        self.push("browsingContext.contextCreated", {
            "context": context, "parent": None, "url": "about:blank", "children": None,
            "userContext": "default", "originalOpener": None})
        return {"context": context}

    def _tree(self, command: ScriptedCommand) -> dict[str, Any]:
        root = command.params.get("root")

        def node(context: str) -> dict[str, Any]:
            kids = [c for c, parent in self._contexts.items() if parent == context]
            return {"context": context, "url": "about:blank", "userContext": "default",
                    "originalOpener": None, "parent": self._contexts.get(context),
                    "children": [node(k) for k in kids]}

        roots = [root] if isinstance(root, str) else [
            c for c, parent in self._contexts.items() if parent is None]
        return {"contexts": [node(c) for c in roots if c in self._contexts]}

    def _close(self, command: ScriptedCommand) -> dict[str, Any]:
        context = str(command.params.get("context"))
        if self._contexts.pop(context, "gone") != "gone":
            self.push("browsingContext.contextDestroyed", {
                "context": context, "parent": None, "url": "about:blank", "children": None,
                "userContext": "default", "originalOpener": None})
        return {}

    def _evaluate(self, command: ScriptedCommand) -> dict[str, Any]:
        return {"type": "success", "realm": "SCRIPTED-REALM", "result": {"type": "undefined"}}

    def _nothing(self, command: ScriptedCommand) -> dict[str, Any]:
        return {}


_BIDI_DEFAULTS: dict[str, Callable[[Any, ScriptedCommand], dict[str, Any]]] = {
    "session.new": ScriptedBiDiBrowser._session_new,
    "session.subscribe": ScriptedBiDiBrowser._subscribe,
    "session.end": ScriptedBiDiBrowser._nothing,
    "browsingContext.create": ScriptedBiDiBrowser._create,
    "browsingContext.getTree": ScriptedBiDiBrowser._tree,
    "browsingContext.close": ScriptedBiDiBrowser._close,
    "script.evaluate": ScriptedBiDiBrowser._evaluate,
}
