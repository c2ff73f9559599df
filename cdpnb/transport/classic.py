"""A WebDriver classic session as a Transport: commands in, replies out, over HTTP.

The core writes ``{"id", "method": "classic.*", "params"}`` as it would to a WebSocket;
this transport runs the command's plan (``cdpnb.protocol.classic``: one or several HTTP
requests) on a worker thread and hands the reply back as a frame, so the core, the
recorder and replay treat classic like the other two protocols. Classic has no events:
nothing arrives that was not asked for.

Commands run one at a time, in the order sent, on one kept-alive connection: every
classic command acts on the session's one current window and frame, and servers take
them one at a time anyway (measured: WebKitWebDriver 2.50 answers a ``GET /alert/text``
sent during a navigation only once the load is done; and a poll that went in just
before a ``POST /url`` made that navigation's reply never come). Every request has a
timeout (its command's budget, ``Request.timeout``): measured on WebKitWebDriver 2.50,
a prompt open in a window that is not the current one makes every script command in
the windows of its process hang, and a switch to that window is never answered.

Liveness: classic has no socket whose end says the far side died, so the answers do.
The connection ends (``on_closed``, with ``gone`` naming what died: the supervisor does
not reconnect) when the server refuses the connection (nothing listens: its process
ended) or answers "invalid session id" (the session is gone: its browser closed or
died). An "unknown error" is followed by one cheap ``GET /window`` to tell a dead
browser from a command's own failure. Measured: chromedriver 156 answers the command in
flight when its Chromium is killed, and every later one, with "invalid session id:
session deleted as the browser has closed the connection" (within 30 ms);
WebKitWebDriver 2.50 with MiniBrowser killed answers the command in flight "unknown
error" (no message) and the next ones "invalid session id"; either server killed, the
command in flight and the next ones meet a refused connection at once. The driver's
poll (every 25 ms) is the check while no command of the user's is in flight.
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from cdpnb.errors import CdpnbError, ConnectionLost, EndpointError
from cdpnb.protocol.classic import (
    ELEMENT_KEY,
    ClassicFailure,
    Response,
    Session,
    error_message,
    reply_message,
)
from cdpnb.protocol.credentials import redact_url
from cdpnb.transport.webdriver_http import (
    NewSession,
    ServerGone,
    WebDriverServer,
    server_gone,
    session_gone,
    what_died,
)

__all__ = ["PROMPTS_IGNORED_CLASSIC", "ClassicTransport", "classic_capabilities",
           "shape_problem"]

#: How long one HTTP request of a command without a budget may take before the command
#: fails (a navigation waits for its load; a wedged session never answers). A command
#: with a budget waits that long for each request, a little more (``Request.timeout``:
#: ``cdpnb.protocol.classic``).
REQUEST_TIMEOUT_S = 60.0

#: How long the check that follows an "unknown error" may take (one ``GET /window``).
CHECK_TIMEOUT_S = 5.0

#: unhandledPromptBehavior as a string: WebKitWebDriver 2.50 refuses the map form
#: ("Invalid alwaysMatch capabilities"), chromedriver takes both.
PROMPTS_IGNORED_CLASSIC = "ignore"


def classic_capabilities(extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """What cdpnb's classic session asks for: every dialog left open for cdpnb."""
    return {"unhandledPromptBehavior": PROMPTS_IGNORED_CLASSIC, **(extra or {})}


def _is_handle(value: Any) -> bool:
    return isinstance(value, str) and bool(value)


#: What a command's value must be for cdpnb's driver to read it (W3C's shapes), and how
#: that is said when it is not. A server that answers otherwise gets a named error, never
#: a TypeError deep in the driver (nor a window handle made of a dict's text).
SHAPES: dict[str, tuple[Any, str]] = {
    "classic.getWindowHandle": (_is_handle, "a window handle (a non-empty string)"),
    "classic.getWindowHandles": (
        lambda v: isinstance(v, list) and all(_is_handle(h) for h in v),
        "a list of window handles (non-empty strings)"),
    "classic.newWindow": (lambda v: isinstance(v, dict) and _is_handle(v.get("handle")),
                          "an object with a window handle in \"handle\""),
    "classic.getAlertText": (lambda v: v is None or isinstance(v, str),
                             "the dialog's message (a string, or null)"),
    "classic.findElement": (lambda v: isinstance(v, dict) and _is_handle(v.get(ELEMENT_KEY)),
                            f"an element reference (an object with {ELEMENT_KEY!r})"),
    "classic.findElements": (
        lambda v: isinstance(v, list) and all(isinstance(e, dict)
                                              and _is_handle(e.get(ELEMENT_KEY)) for e in v),
        "a list of element references"),
}


def shape_problem(method: str, result: dict[str, Any]) -> str | None:
    """What is wrong with the value a server answered ``method`` with, in words naming
    both; None when its shape is the one cdpnb reads (or one cdpnb does not check)."""
    shape = SHAPES.get(method)
    if shape is None:
        return None
    check, wanted = shape
    value = result.get("value")
    if check(value):
        return None
    shown = json.dumps(value, default=repr)
    shown = shown if len(shown) <= 120 else shown[:117] + "..."
    return f"the server answered {method} with {shown}, not {wanted}"


class ClassicTransport:
    """One WebDriver classic session on ``server``, spoken to as a Transport."""

    protocol = "classic"
    #: What died behind the session, once an answer said so (the Transport contract's
    #: liveness word): the server, or the session and its browser.
    gone: str | None = None

    def __init__(self, server: WebDriverServer, session: NewSession, *,
                 window: str | None = None) -> None:
        self.server = server
        self.session = session
        self.url = server.base_url
        self._prefix = f"/session/{session.session_id}"
        self._where = Session(window)
        self._deliver = threading.Lock()
        self._state = threading.Lock()
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="cdpnb-classic")
        self._on_frames: Callable[[Sequence[str | bytes]], None] | None = None
        self._on_closed: Callable[[str], None] | None = None
        self._early: list[str] = []
        self._closed = False
        self._told = False
        self._reason = "open"

    def __repr__(self) -> str:
        return (f"ClassicTransport({redact_url(self.url)!r}, "
                f"session={self.session.session_id!r})")

    # -- the seam ---------------------------------------------------------------------------

    def start(self, on_frames: Callable[[Sequence[str | bytes]], None],
              on_closed: Callable[[str], None]) -> None:
        with self._deliver:
            self._on_frames, self._on_closed = on_frames, on_closed
            early, self._early = self._early, []
            if early:
                on_frames(early)
        if self._closed:
            self._tell()

    def send(self, data: bytes) -> None:
        if self._closed:
            raise ConnectionLost(f"the WebDriver classic session at {redact_url(self.url)} "
                                 f"is closed ({self._reason})")
        command = json.loads(data)
        try:
            self._pool.submit(self._run, command)
        except RuntimeError:  # shut down meanwhile
            raise ConnectionLost(f"the WebDriver classic session at {redact_url(self.url)} "
                                 f"is closed ({self._reason})") from None

    def fail(self, code: int, reason: str) -> None:
        self._end(f"closed by cdpnb: {reason} (code {code})")

    def close(self) -> None:
        self._end("closed by cdpnb")
        self._pool.shutdown(wait=False, cancel_futures=True)
        self.server.close()

    @property
    def close_reason(self) -> str:
        return self._reason

    @property
    def current_window(self) -> str | None:
        """The session's current window as far as cdpnb's commands moved it (None:
        unknown, or closed)."""
        return self._where.window

    # -- the work ---------------------------------------------------------------------------

    def _run(self, command: dict[str, Any]) -> None:
        command_id = command.get("id")
        method = str(command.get("method", ""))
        params = command.get("params") or {}
        if not isinstance(command_id, int):
            return  # (the core numbers every command)
        try:
            result = self._drive(method, params)
            problem = shape_problem(method, result)
            message = reply_message(command_id, result) if problem is None else \
                error_message(command_id, ClassicFailure("unknown error", problem, 502))
        except ClassicFailure as failure:
            gone = self._gone_after(failure)
            if gone is not None:
                self._end_gone(gone)  # (the core fails the command: ConnectionLost, why)
                return
            message = error_message(command_id, failure)
        except ServerGone:
            self._end_gone(self._server_gone())
            return
        except EndpointError as exc:
            if self._closed:
                return
            # A reset as the server dies (measured: WebKitWebDriver killed mid-request
            # resets the retry too): one look says whether it is gone.
            gone = None if "no answer" in str(exc) else self._check()
            if gone is not None:
                self._end_gone(gone)
                return
            # No answer in time (a wedged session), or a failed request to a server
            # still there: this command fails; the connection lives on.
            message = error_message(command_id, ClassicFailure(
                "timeout" if "no answer" in str(exc) else "unknown error", str(exc), 504))
        self._hand(json.dumps(message))

    def _drive(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        steps = self._where.plan(method, params)
        try:
            request = next(steps)
            while True:
                status, body = self.server.exchange(
                    request.method, self._prefix + request.path, request.body,
                    request.timeout if request.timeout is not None else REQUEST_TIMEOUT_S)
                request = steps.send(Response(status, body))
        except StopIteration as done:
            result: dict[str, Any] = done.value
            return result

    def _gone_after(self, failure: ClassicFailure) -> str | None:
        """What died, when ``failure`` says the session is gone (or, after an "unknown
        error", one ``GET /window`` does); None while the session answers."""
        if failure.error == "unknown error":
            return self._check()
        if failure.error != "invalid session id":
            return None
        return session_gone(self.url, self.session.session_id, failure.message)

    def _check(self) -> str | None:
        """One cheap request (``GET /window``): what died, or None while the session
        answers (or does not answer in time: a wedged session is not a dead one)."""
        return what_died(self.server, self.session.session_id, CHECK_TIMEOUT_S)

    def _server_gone(self) -> str:
        return server_gone(self.url)

    def _end_gone(self, gone: str) -> None:
        with self._state:
            if self._closed:
                return
            self.gone = gone
        self._end(gone)

    def _hand(self, frame: str) -> None:
        with self._deliver:
            if self._closed:
                return
            if self._on_frames is None:
                self._early.append(frame)
                return
            self._on_frames([frame])

    def _end(self, reason: str) -> None:
        with self._state:
            if self._closed:
                return
            self._closed, self._reason = True, reason
        self._tell()

    def _tell(self) -> None:
        with self._state:
            if self._told or self._on_closed is None:
                return
            self._told = True
            on_closed = self._on_closed
        # After the last delivery: take the delivery lock once (never from inside it:
        # on_frames may call fail, which comes here on the same thread).
        if not self._deliver.acquire(blocking=False):
            threading.Thread(target=self._tell_later, args=(on_closed,), daemon=True).start()
            return
        self._deliver.release()
        on_closed(self._reason)

    def _tell_later(self, on_closed: Callable[[str], None]) -> None:
        with self._deliver:
            pass
        on_closed(self._reason)


async def connect_classic(url: str, timeout: float,
                          capabilities: dict[str, Any] | None = None) -> ClassicTransport:
    """A new classic session on the WebDriver server at ``url`` (EndpointError if it is
    none, or refuses the session)."""
    from cdpnb.runtime.threads import in_own_thread
    from cdpnb.transport.webdriver_http import WebDriverError

    server = WebDriverServer(url)

    def open_session() -> ClassicTransport:
        server.status(timeout)
        try:
            made = server.new_session(classic_capabilities(capabilities), max(timeout, 30.0))
        except WebDriverError as exc:
            raise EndpointError(f"{redact_url(url)} refused a WebDriver session: "
                                f"{exc}") from None
        try:
            window = _first_look(server, made, timeout)
        except BaseException:
            with contextlib.suppress(CdpnbError):  # (a server that misspeaks may hold it)
                server.delete_session(made.session_id, min(timeout, 5.0))
            raise
        return ClassicTransport(server, made, window=window)

    try:
        return await in_own_thread(open_session)
    except BaseException:
        server.close()
        raise


def _first_look(server: WebDriverServer, made: NewSession, timeout: float) -> str:
    """The new session's current window, after checking that the server answers the
    two requests every supervisor starts with in W3C's shapes: EndpointError naming what
    was wrong, not a TypeError from the driver later."""
    from cdpnb.transport.webdriver_http import WebDriverError

    shown = redact_url(server.base_url)
    looks: dict[str, Any] = {}
    for method, path in (("classic.getWindowHandle", "/window"),
                         ("classic.getWindowHandles", "/window/handles")):
        try:
            looks[method] = server.request("GET", f"/session/{made.session_id}{path}", None,
                                           timeout)
        except WebDriverError as exc:
            raise EndpointError(f"{shown}: GET /session/<id>{path} of the new session "
                                f"failed ({exc})") from None
        problem = shape_problem(method, {"value": looks[method]})
        if problem is not None:
            raise EndpointError(f"{shown} speaks WebDriver classic in shapes cdpnb cannot "
                                f"read: {problem}")
    window: str = looks["classic.getWindowHandle"]
    return window
