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

Holding back what the browser says. From ``held = browser.hold()`` on, everything the
browser would send (events, replies, its handlers' too, and the connection's end from
``drop()``) waits in order instead of arriving: the window between a browser's word
and the supervisor's hearing of it, which a real one opens only by timing::

    with browser.hold() as held:
        await browser.drop()              # the browser is gone; the supervisor not told
        sent = asyncio.ensure_future(sup.cdp("Runtime.evaluate", {"expression": "1"}))
        await browser.wait_for_command("Runtime.evaluate")   # reached nobody: browser.lost
        print(held.messages)              # [<held end: connection dropped>]
    # leaving the block released it: ``await sent`` raises ConnectionLost, no hang

``held.messages`` lists what waits; ``held.release()`` (or ``await held.release()``)
delivers it in order and ends the hold; ``held.release(n)`` delivers the first ``n``
and holds on; ``held.discard()`` / ``held.discard(n)`` lose them (a connection's last
frames that never arrived). While the connection's end is held, what the supervisor
sends is lost, as on a dead socket it has not noticed: it reaches no handler and is
listed in ``browser.lost`` (``wait_for_command`` sees it). ``emit`` returns at once
while a hold is on. ``ScriptedBiDiBrowser`` holds the same way.

``check_transport(open_pair)`` is the transport seam's conformance suite (trio's
``check_two_way_stream`` is the model): cdpnb's WebSocket and the in-memory transport
here both pass it, and so must any other ``Transport`` given to ``Supervisor.start``.

It is in the spirit of httpx's ``MockTransport``: a test double at the transport seam,
public so that code built on cdpnb can be tested against scripted browsers too.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import threading
from collections.abc import Awaitable, Callable, Generator, Mapping, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Literal, Protocol, TypeVar, overload

from cdpnb.errors import ConnectionLost, PicklesWhole
from cdpnb.testing.transport_contract import FarEnd, OpenPair, check_transport
from cdpnb.transport.base import Transport

__all__ = ["HOLD", "FarEnd", "HeldMessage", "Hold", "OpenPair", "ScriptedBiDiBrowser",
           "ScriptedBrowser", "ScriptedCommand", "ScriptedError", "check_transport"]


class _Hold:
    def __repr__(self) -> str:
        return "HOLD"


#: Returned by a handler: the command gets its reply later, from ``browser.reply``.
HOLD = _Hold()


class ScriptedError(PicklesWhole):
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
H = TypeVar("H", bound=Handler)


class _Peer(Protocol):
    """The browser's side of a ``_ScriptedTransport``."""

    cdp_url: str
    protocol: str

    def _receive(self, transport: _ScriptedTransport, text: str) -> None: ...


class _ScriptedTransport:
    """The supervisor's end of the in-memory connection. Frames are handed to the
    supervisor on the thread that sends them (the test's, or the supervisor's own
    when a handler answers a command), one delivery at a time, in order.

    As cdpnb's WebSocket does (``check_transport`` holds both to it): frames and an end
    that come before ``start`` are handed over by it; ``on_frames`` is never re-entered
    (what a handler sends while the supervisor folds, on the folding thread, comes
    after the current call, as a socket's reader reads it after the current batch);
    ``on_closed`` is told once, after the last ``on_frames`` returned (a ``fail`` from
    inside ``on_frames``, as the supervisor's on a bad frame, is told when that call
    returns)."""

    def __init__(self, browser: _Peer) -> None:
        self.browser = browser
        self.url = browser.cdp_url
        #: What the supervisor speaks over it (``cdp``, or ``bidi`` for ScriptedBiDiBrowser).
        self.protocol = browser.protocol
        self.closed = False
        self.reason = "open"
        #: The code of the close cdpnb ended it with (``fail``'s, or 1000 for ``close``).
        self.close_code: int | None = None
        #: The browser has dropped it (``drop()``), told or not yet (a hold keeps the end).
        self.ended_by_browser = False
        self._on_frames: Callable[[Sequence[str | bytes]], None] | None = None
        self._on_closed: Callable[[str], None] | None = None
        self._early: list[str] = []
        self._lock = threading.RLock()
        self._delivering = 0  # on_frames calls under way (on the thread holding _lock)
        self._next: list[str] = []  # sent from inside on_frames: handed after it returns
        self._told = False

    def start(self, on_frames: Callable[[Sequence[str | bytes]], None],
              on_closed: Callable[[str], None]) -> None:
        with self._lock:
            self._on_frames, self._on_closed = on_frames, on_closed
            early, self._early = self._early, []
            if early:
                self._hand(early)
            # An end that came before start is told now, after what came before it.
            tell = self.closed and not self._delivering
        if tell:
            self._tell()

    def deliver(self, text: str) -> None:
        with self._lock:
            if self.closed:
                return
            if self._on_frames is None:
                self._early.append(text)
                return
            if self._delivering:
                # Sent from inside on_frames, on this thread (the lock is ours): a handler
                # answering what the supervisor sent as it folded. A socket's reader reads
                # it after the current batch, never inside it; so here.
                self._next.append(text)
                return
            self._hand([text])
            tell = self.closed
        if tell:  # on_frames ended it (fail): told now that the outermost call returned
            self._tell()

    def _hand(self, frames: list[str]) -> None:
        """Call on_frames, the lock held: one call at a time, then what was sent during
        it, in order, unless that call ended the connection."""
        assert self._on_frames is not None
        self._delivering += 1
        try:
            while frames:
                self._on_frames(frames)
                frames, self._next = ([] if self.closed else self._next), []
        finally:
            self._delivering -= 1
            self._next = []

    def send(self, data: bytes) -> None:
        if self.closed:
            raise ConnectionLost(f"the scripted browser's connection is closed ({self.reason})")
        self.browser._receive(self, data.decode())

    def end(self, reason: str, code: int | None = None) -> None:
        with self._lock:
            if self.closed:
                return
            self.closed, self.reason, self.close_code = True, reason, code
            # Not started: start tells it. Inside on_frames: told once that returns.
            tell = self._on_closed is not None and not self._delivering
        if tell:
            self._tell()

    def _tell(self) -> None:
        """on_closed, once, not under the lock (the supervisor takes its own there)."""
        with self._lock:
            if self._told or self._on_closed is None:
                return
            self._told = True
            on_closed = self._on_closed
        on_closed(self.reason)

    def fail(self, code: int, reason: str) -> None:
        self.end(f"closed by cdpnb: {reason} (code {code})", code)

    def close(self) -> None:
        self.end("closed by cdpnb", 1000)

    @property
    def close_reason(self) -> str:
        return self.reason


@dataclass(frozen=True, repr=False)
class HeldMessage:
    """One thing a :class:`Hold` keeps back: an event, a reply, or the connection's end."""

    #: ``"event"``, ``"reply"`` or ``"end"``.
    kind: Literal["event", "reply", "end"]
    #: The event's method, or the method of the command replied to ("" for an end).
    method: str
    #: The frame as the browser sends it; for an end, its reason.
    text: str
    _transport: _ScriptedTransport = field(compare=False)

    def __repr__(self) -> str:
        if self.kind == "end":
            return f"<held end: {self.text}>"
        if self.kind == "reply":
            return f"<held reply to {self.method}>"
        return f"<held event {self.method}>"

    def _deliver(self) -> None:
        if self.kind == "end":
            self._transport.end(self.text)
        else:
            self._transport.deliver(self.text)


class _Done:
    """What ``Hold.release`` returns: already done, and awaitable for symmetry with the
    rest of a test (``await held.release()``)."""

    def __await__(self) -> Generator[Any, None, None]:
        return
        yield  # (makes this a generator)


class Hold:
    """What a scripted browser holds back since ``browser.hold()``: see the module docs.
    Thread-safe; a context manager that releases what waits when its block ends."""

    def __init__(self, browser: ScriptedBrowser) -> None:
        self._browser = browser
        self._queue: list[HeldMessage] = []
        #: True until the hold ends (``release()`` or ``discard()`` without a count).
        self.active = True

    @property
    def messages(self) -> list[HeldMessage]:
        """What waits, in the order the browser sent it."""
        with self._browser._hold_lock:
            return list(self._queue)

    def release(self, n: int | None = None) -> Awaitable[None]:
        """Deliver what waits, in order, on this thread (the supervisor has folded it when
        this returns), then end the hold; with ``n``, only the first ``n``, holding on.
        What the browser sends meanwhile (a handler answering what was released) queues
        behind, so the order stays the browser's."""
        self._check_count(n, "release")
        left = n
        while True:
            with self._browser._hold_lock:
                if left == 0 or not self._queue:
                    if n is None:  # (under the lock, the queue empty: nothing slips past)
                        self._end_locked()
                    break
                message = self._queue.pop(0)
            message._deliver()  # not under the lock: the supervisor may answer at once
            left = None if left is None else left - 1
        return _Done()

    def discard(self, n: int | None = None) -> list[HeldMessage]:
        """Lose what waits (the first ``n``, holding on; all, ending the hold): the
        supervisor never hears of it. Returns what was lost."""
        self._check_count(n, "discard")
        with self._browser._hold_lock:
            cut = len(self._queue) if n is None else n
            lost, self._queue = self._queue[:cut], self._queue[cut:]
            if n is None:
                self._end_locked()
        return lost

    def __enter__(self) -> Hold:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self.active:
            self.release()

    def __repr__(self) -> str:
        state = "holding" if self.active else "ended"
        return f"<Hold {state}: {self.messages!r}>"

    def _check_count(self, n: int | None, action: str) -> None:
        if n is None:
            return
        if type(n) is not int:
            raise TypeError(f"{action}(n): n must be a count (an int >= 0), not {n!r}")
        if n < 0:
            raise ValueError(f"{action}(n): n must be a count (an int >= 0), not {n}")
        waiting = len(self.messages)
        if n > waiting:
            raise ValueError(f"{action}({n}): only {waiting} message(s) are held")

    def _end_locked(self) -> None:
        self.active = False
        if self._browser._hold is self:
            self._browser._hold = None


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
        #: Commands the supervisor sent into a connection the browser had dropped while
        #: the news of that was held (``hold()``): they reached no handler.
        self.lost: list[ScriptedCommand] = []
        self._sent: list[ScriptedCommand] = []  # received and lost, in order
        self._hold: Hold | None = None
        self._hold_lock = threading.Lock()
        #: Orders ``push`` while there is no connection (then nothing is delivered).
        self._no_transport_lock = threading.RLock()
        #: Set by check_transport's far end: every frame the supervisor's side sends, raw.
        self._tap: Callable[[str], None] | None = None

    # -- scripting -----------------------------------------------------------------

    @overload
    def on(self, method: str) -> Callable[[H], H]: ...

    @overload
    def on(self, method: str, handler: H) -> H: ...

    def on(self, method: str, handler: H | None = None) -> H | Callable[[H], H]:
        """Set what the browser does for ``method`` (usable as a decorator)."""
        def register(fn: H) -> H:
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
        """The ``count``-th command of ``method`` the supervisor sent, once it has been
        sent (received, or lost into a connection whose end is held)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout

        def sent() -> list[ScriptedCommand]:
            return [c for c in self._sent if c.method == method]

        while len(sent()) < count:
            if loop.time() > deadline:
                raise TimeoutError(f"the supervisor sent no {method} (#{count}) within "
                                   f"{timeout:g} s; it sent {[c.method for c in self._sent]}")
            await asyncio.sleep(0.002)
        return sent()[count - 1]

    def hold(self) -> Hold:
        """Hold back, from now on and in order, everything this browser sends: events,
        replies (its handlers' too) and the connection's end (``drop()``), until the
        returned :class:`Hold` is released (or its ``with`` block ends). See the module
        docs."""
        with self._hold_lock:
            if self._hold is not None:
                raise RuntimeError("this browser already holds back its messages; release "
                                   "or discard that hold first")
            self._hold = Hold(self)
            return self._hold

    # -- the browser speaking (thread-safe: the supervisor runs on cdpnb's engine loop) --

    def push(self, method: str, params: dict[str, Any] | None = None,
             session_id: str | None = None) -> None:
        """Send an event now (from a handler, or any thread); the supervisor has folded
        it when this returns, unless a ``hold()`` keeps it back or the supervisor is
        folding on this thread (a handler of what it sent from there: the event comes
        after that fold, as from a socket). An event on a session announced detached is
        dropped."""
        transport = self._transport
        # The check, the marking of a detach and the delivery are one step in the wire's
        # order (the transport's re-entrant lock orders the wire; a handler's push on
        # the folding thread re-enters it): else a thread that passed the check could
        # deliver after a detach another thread announced in between, which no browser
        # does. Measured on Chrome 156, a page flooding events as it was closed or
        # detached: every late event came before its detachedFromTarget, none after.
        # Lock order: transport._lock, then _hold_lock (in _held_back); nothing takes
        # them the other way round (Hold.release delivers outside _hold_lock).
        with transport._lock if transport is not None else self._no_transport_lock:
            if session_id is not None and session_id in self.detached:
                self.dropped += 1
                return
            if method == "Target.detachedFromTarget" and isinstance(
                    params, dict) and isinstance(params.get("sessionId"), str):
                self.detached.add(params["sessionId"])
            self._deliver(self._message(method, params, session_id), transport,
                          kind="event", method=method)

    async def emit(self, method: str, params: dict[str, Any] | None = None,
                   session_id: str | None = None) -> None:
        """Send an event; returns once the supervisor has folded it (at once while a
        ``hold()`` keeps it back)."""
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
        self._deliver(self._reply_text(command, result, error), transport, kind="reply",
                      method=command.method)

    async def drop(self) -> None:
        """End the connection as a crash would (no close frame). While a hold is on, the
        supervisor hears of it when the hold releases it; what it sends meanwhile is
        lost (``lost``)."""
        transport = self._transport
        if transport is None or transport.ended_by_browser:
            return
        transport.ended_by_browser = True
        if not self._held_back("end", "", "connection dropped", transport):
            transport.end("connection dropped")

    # -- the transport seam ----------------------------------------------------------

    async def connect_transport(self, url: str, timeout: float) -> _ScriptedTransport:
        """What ``Supervisor.start(browser)`` connects with (a ``Connector``)."""
        self._transport = _ScriptedTransport(self)
        self.connections += 1
        return self._transport

    # -- internals ---------------------------------------------------------------------

    def _deliver(self, text: str, transport: _ScriptedTransport | None = None, *,
                 kind: Literal["event", "reply"] = "event", method: str = "") -> None:
        transport = transport or self._transport
        if transport is not None and not self._held_back(kind, method, text, transport):
            transport.deliver(text)

    def _held_back(self, kind: Literal["event", "reply", "end"], method: str, text: str,
                   transport: _ScriptedTransport) -> bool:
        """Queue a message on the hold, if one is on (True: queued)."""
        with self._hold_lock:
            if self._hold is None:
                return False
            self._hold._queue.append(HeldMessage(kind, method, text, transport))
            return True

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
        if self._tap is not None:
            self._tap(text)
            return
        data = json.loads(text)
        command = ScriptedCommand(data["id"], data["method"], data.get("params") or {},
                                  data.get("sessionId"))
        self._sent.append(command)
        if transport.ended_by_browser:
            # Written into a socket whose other end is gone: nobody reads it.
            self.lost.append(command)
            return
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
            self._deliver(self._reply_text(command, None, (exc.code, exc.message)), transport,
                          kind="reply", method=command.method)
            return
        if isinstance(result, _Hold):
            self._held[command.id] = (transport, command)
            return
        self._deliver(self._reply_text(command, result if isinstance(result, dict) else {},
                                       None), transport, kind="reply", method=command.method)

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


# -- check_transport's far end for the in-memory transport -------------------------------


class _ScriptedFarEnd:
    """A scripted browser as check_transport's far end: it takes the transport's frames
    raw (``_tap``) instead of as commands, and speaks with ``_deliver`` and ``drop``, the
    paths its events, replies and ends take."""

    sees_close_codes = True

    def __init__(self, browser: ScriptedBrowser, transport: _ScriptedTransport) -> None:
        self._browser = browser
        self._transport = transport
        self._frames: list[str] = []
        browser._tap = self._frames.append

    async def send(self, text: str) -> None:
        self._browser._deliver(text, self._transport)

    def received(self) -> list[str]:
        return list(self._frames)

    async def drop(self) -> None:
        await self._browser.drop()

    def close_code(self) -> int | None:
        return self._transport.close_code

    async def aclose(self) -> None:
        self._browser._tap = None


async def _scripted_pair(browser: ScriptedBrowser) -> tuple[Transport, FarEnd]:
    """A fresh in-memory transport of ``browser`` (a new one each call) and its far end:
    ``check_transport(lambda: _scripted_pair(ScriptedBiDiBrowser()))``."""
    transport = await browser.connect_transport(browser.cdp_url, 5.0)
    return transport, _ScriptedFarEnd(browser, transport)
